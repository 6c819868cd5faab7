"""transformers' own compiled generation, BF16 against DF11, in one process on one GPU.

What transformers' documentation tells users to do for speed: generate(...,
cache_implementation="static"), which compiles the decode step (torch.compile, mode
"reduce-overhead": Inductor's CUDA graphs). For each model the script loads it, runs that
generate twice to compile and warm up, then times generate with --short and --long new tokens
(CUDA events, median of --repeat runs each) and reports the time per decode step as
(long - short) / (long - short tokens), so that the prefill and the generate set-up cancel. It
also reports what torch counted while compiling: CUDA-graph skips (Inductor's
"skipping cudagraphs due to ...") and graph breaks, the graphs dynamo compiled and the guard
evaluation time it logged for each (`dynamo_graphs`, `guard_eval_us`), the device memory in
use after the load and the first generate (cudaMemGetInfo: memory held outside torch's allocator counts too), and
whether the tokens equal BF16's compiled ones; and where each model's compiled tokens first
part from its own eager ones (the dynamic cache, nothing compiled), if they do. (The default
mode's compiled tokens equal compiled BF16's where Inductor compiles the same kernels for the
two graphs. It chooses the block sizes of the reduction kernels the two do not share by timing
them, unless run with TORCHINDUCTOR_DETERMINISTIC=1, as `bench/compiled_logits.py
--deterministic` does; even then the tokens of a long generate can vary from one compilation
to the next. The timings here are Inductor's default.)

With --profile, each model's step is also broken down by GPU kernel (torch.profiler, CUPTI:
the kernels of the CUDA-graph replays included): each kernel's time in a generate of --long new
tokens less its time in one of --short, per step, the largest first, and their sum (the step's
GPU-busy time), and the device's idle time between its activities, in gaps of at most 20 us
(between the kernels of a CUDA graph) and longer ones (the GPU waiting for the host).
--profile-host does the same for the host's events (torch.profiler's CPU events by self time:
the profiler's own overhead inflates them, so compare models with each other only).

With --rounds N (N > 1) every model runs in a process of its own, N times, the models' order
rotated each round (BF16, decode, exec; then decode, exec, BF16; ...): on one machine the
first process of a call can be slower or faster than the next ones by more than the models
differ, so only the ratios of one round (each model against the BF16 of that round) and their
median say how the models compare. The eager tokens are generated in the first round only.
With --keep DIR the processes' outputs stay in DIR, and each finished round is appended to
DIR/rounds.jsonl as it ends, so that the rounds a time limit cut short still count;
--summarize FILE... reports the rounds of such files, or of --rounds' --json files, together
(of several calls or machines: each ratio is of one round, so of one machine).

    python bench/hf_static_compile.py --bf16 BF16_DIR --df11 DF11_DIR [--modes decode,exec]
        [--batch 1] [--short 16] [--long 144] [--repeat 5] [--profile] [--profile-host] [--no-bf16]
        [--rounds 1] [--keep DIR] [--json OUT.json]
    python bench/hf_static_compile.py --summarize DIR/rounds.jsonl [...] [--json OUT.json]
"""
import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch

from compiled_lookups import guard_latencies, logged_guards


def device_used() -> int:
    free, total = torch.cuda.mem_get_info()
    return total - free


def timed_generate(model, ids, tokens, repeat):
    kw = dict(attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=tokens,
              min_new_tokens=tokens, eos_token_id=None, pad_token_id=0,
              cache_implementation="static")
    times, out = [], None
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        with torch.no_grad():
            out = model.generate(input_ids=ids, **kw)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times), out


GAP_US = 20  # an idle gap on the device longer than this is the GPU waiting for the host


def kernel_times(model, ids, tokens, host=False):
    """{kernel name: (calls, microseconds)} of one static-cache generate of `tokens` tokens
    (host: {host event: (calls, its self CPU microseconds)})."""
    from torch.profiler import ProfilerActivity, profile
    kw = dict(attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=tokens,
              min_new_tokens=tokens, eos_token_id=None, pad_token_id=0,
              cache_implementation="static")
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU if host else ProfilerActivity.CUDA]) as prof:
        with torch.no_grad():
            model.generate(input_ids=ids, **kw)
        torch.cuda.synchronize()
    times = {}
    if not host:  # the device's idle time between its activities, short gaps and long ones
        spans = sorted((e.time_range.start, e.time_range.end) for e in prof.events()
                       if e.device_type == torch.autograd.DeviceType.CUDA)
        short = long = 0.0
        n_short = n_long = 0
        last = spans[0][1] if spans else 0.0
        for start, end in spans[1:]:
            gap = start - last
            if gap > GAP_US:
                long, n_long = long + gap, n_long + 1
            elif gap > 0:
                short, n_short = short + gap, n_short + 1
            last = max(last, end)
        times[f"(idle: gaps <= {GAP_US} us)"] = (n_short, short)
        times[f"(idle: gaps > {GAP_US} us)"] = (n_long, long)
    for e in prof.key_averages():
        us = (e.self_cpu_time_total if host else
              getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0))
        if us:
            calls, total = times.get(e.key, (0, 0.0))
            times[e.key] = (calls + e.count, total + us)
    return times


def step_profile(model, ids, short, long, top=30, host=False):
    """Per decode step, by kernel (host: by host event, its self CPU time): its time in a
    generate of `long` tokens less in one of `short`, divided by the steps between."""
    a, b = kernel_times(model, ids, short, host), kernel_times(model, ids, long, host)
    steps = long - short
    rows = []
    for name, (calls, us) in b.items():
        c0, us0 = a.get(name, (0, 0.0))
        rows.append(dict(kernel=name[:160], calls_per_step=round((calls - c0) / steps, 2),
                         us_per_step=round((us - us0) / steps, 2)))
    rows.sort(key=lambda r: -r["us_per_step"])
    busy = sum(r["us_per_step"] for r in rows if not r["kernel"].startswith("(idle"))
    return dict(busy_us_per_step=round(busy, 1), kernels=rows[:top])


def first_diff(a, b):
    """The first position of the sequences (the prompt's included) where two generations
    differ, in any row, or None."""
    if torch.equal(a, b):
        return None
    return int((a != b).any(dim=0).nonzero()[0].item())


def measure(name, load, ids, args, baseline_used):
    from torch._dynamo.utils import counters
    torch._dynamo.reset()
    counters.clear()
    gc.collect()
    torch.cuda.empty_cache()
    t0 = time.perf_counter()
    model = load()
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    with logged_guards() as guards:
        timed_generate(model, ids, args.short, 2)  # compiles the step, captures the graphs
    compile_s = time.perf_counter() - t0
    used = device_used() - baseline_used
    short_ms, _ = timed_generate(model, ids, args.short, args.repeat)
    long_ms, tokens = timed_generate(model, ids, args.long, args.repeat)
    step_ms = (long_ms - short_ms) / (args.long - args.short)
    eager = None
    if not args.no_eager:
        with torch.no_grad():  # the same tokens eagerly: the dynamic cache, nothing compiled
            eager = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                                   do_sample=False, max_new_tokens=args.long,
                                   min_new_tokens=args.long, eos_token_id=None, pad_token_id=0)
    profile = step_profile(model, ids, args.short, args.long) if args.profile else None
    if args.profile_host:
        host = step_profile(model, ids, args.short, args.long, host=True)
        print(f"{name}: host events' self CPU time {host['busy_us_per_step']} us per step "
              "(profiled)", flush=True)
        for k in host["kernels"][:20]:
            print(f"  {k['us_per_step']:9.2f} us {k['calls_per_step']:7.2f} calls  {k['kernel']}",
                  flush=True)
    skips = sum(counters["inductor"][k] for k in counters["inductor"] if "cudagraph_skip" in k)
    breaks = sum(counters["graph_break"].values())
    row = dict(model=name, load_s=round(load_s, 3), compile_s=round(compile_s, 1),
               step_ms=round(step_ms, 3), short_ms=round(short_ms, 2), long_ms=round(long_ms, 2),
               device_gb=round(used / 1e9, 3), cudagraph_skips=int(skips),
               graph_breaks=int(breaks), dynamo_graphs=int(counters["stats"]["unique_graphs"]),
               guard_eval_us=guard_latencies(guards))
    if eager is not None:
        row["compiled_first_diff_eager"] = first_diff(tokens, eager)
    print(json.dumps(row), flush=True)
    if args.profile_host:
        row["host_profile"] = host
    if profile is not None:
        row["profile"] = profile
        print(f"{name}: GPU busy {profile['busy_us_per_step']} us per step", flush=True)
        for k in profile["kernels"]:
            print(f"  {k['us_per_step']:9.2f} us {k['calls_per_step']:7.2f} calls  {k['kernel']}",
                  flush=True)
    del model
    return row, tokens.cpu()


def rotations(models, rounds):
    """Each round's order: the models rotated by one place a round."""
    n = len(models)
    return [models[r % n:] + models[:r % n] for r in range(rounds)]


def summarize(rounds_rows, reference="bf16"):
    """Per model, over rounds of {model: row}: its step times, their median, and (where the
    reference ran in the same round) its step time over the reference's in each round and the
    median of those ratios."""
    out = {}
    for rows in rounds_rows:
        ref = rows.get(reference)
        for name, row in rows.items():
            s = out.setdefault(name, dict(model=name, step_ms=[], vs_bf16=[]))
            s["step_ms"].append(row["step_ms"])
            if ref is not None and name != reference:
                s["vs_bf16"].append(round(row["step_ms"] / ref["step_ms"], 3))
    for s in out.values():
        s["median_step_ms"] = round(statistics.median(s["step_ms"]), 3)
        if s["vs_bf16"]:
            s["median_vs_bf16"] = round(statistics.median(s["vs_bf16"]), 3)
        else:
            del s["vs_bf16"]
    return list(out.values())


def read_rounds(paths):
    """The rounds of --keep's rounds.jsonl files (one {model: row} a line) or of --rounds'
    --json files (rows that name their round), in order."""
    out = []
    for path in paths:
        with open(path) as f:
            text = f.read()
        try:
            whole = json.loads(text)
        except json.JSONDecodeError:
            whole = None
        if isinstance(whole, dict) and "rows" in whole:
            rounds = {}
            for row in whole["rows"]:
                rounds.setdefault(row["round"], {})[row["model"]] = row
            out += [rounds[r] for r in sorted(rounds)]
        else:
            out += [json.loads(line) for line in text.splitlines() if line.strip()]
    return out


def run_rounds(args):
    """--rounds: each model in a process of its own (this script with --worker), in rotated
    order, round after round."""
    models = ([] if args.no_bf16 else ["bf16"]) + [f"df11 {m}" for m in args.modes.split(",")]
    rounds_rows = []
    with tempfile.TemporaryDirectory() as scratch:
        tmp = args.keep or scratch
        os.makedirs(tmp, exist_ok=True)
        for r, order in enumerate(rotations(models, args.rounds)):
            rows, tokens = {}, {}
            for name in order:
                out = os.path.join(tmp, f"{r}-{name.replace(' ', '-')}")
                cmd = [sys.executable, os.path.abspath(__file__), "--bf16", args.bf16,
                       "--df11", args.df11, "--batch", str(args.batch), "--prompt",
                       str(args.prompt), "--short", str(args.short), "--long", str(args.long),
                       "--repeat", str(args.repeat), "--worker", name, "--worker-out", out]
                cmd += ["--no-eager"] if r > 0 else []
                cmd += ["--profile"] if args.profile else []
                cmd += ["--profile-host"] if args.profile_host else []
                print(f"round {r + 1}: {name}", flush=True)
                subprocess.run(cmd, check=True)
                with open(out + ".json") as f:
                    row = json.load(f)
                row["round"] = r + 1
                rows[name] = row
                tokens[name] = torch.load(out + ".pt")
            for name, row in rows.items():
                if "bf16" in tokens and name != "bf16":
                    row["tokens_equal_bf16"] = bool(torch.equal(tokens[name], tokens["bf16"]))
                    row["first_diff_bf16"] = first_diff(tokens[name], tokens["bf16"])
            rounds_rows.append(rows)
            if args.keep:
                with open(os.path.join(args.keep, "rounds.jsonl"), "a") as f:
                    f.write(json.dumps(rows) + "\n")
    summary = summarize(rounds_rows)
    for s in summary:
        print(json.dumps(s), flush=True)
    return summary, [row for rows in rounds_rows for row in rows.values()]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bf16", default="")
    p.add_argument("--df11", default="")
    p.add_argument("--modes", default="decode,exec")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--prompt", type=int, default=16)
    p.add_argument("--short", type=int, default=16)
    p.add_argument("--long", type=int, default=144)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--profile", action="store_true", help="each step's GPU time by kernel")
    p.add_argument("--profile-host", action="store_true",
                   help="each step's host events by self CPU time (torch.profiler)")
    p.add_argument("--no-bf16", action="store_true",
                   help="df11's modes only (to compare two versions of df11 with each other)")
    p.add_argument("--rounds", type=int, default=1,
                   help="more than 1: each model in a process of its own, in rotated order")
    p.add_argument("--keep", default="",
                   help="--rounds: keep the processes' outputs and each round's rows here")
    p.add_argument("--summarize", nargs="+", default=[],
                   help="report the rounds of these files together (--keep's rounds.jsonl, "
                   "--rounds' --json)")
    p.add_argument("--json", default="")
    p.add_argument("--no-eager", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--worker", default="", help=argparse.SUPPRESS)
    p.add_argument("--worker-out", default="", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.summarize:
        rounds_rows = read_rounds(args.summarize)
        summary = summarize(rounds_rows)
        for s in summary:
            print(json.dumps(s), flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(dict(rounds=len(rounds_rows), summary=summary,
                               rows=[row for rows in rounds_rows for row in rows.values()]),
                          f, indent=1)
        return
    if not (args.bf16 and args.df11):
        p.error("--bf16 and --df11 are required (but with --summarize)")
    if args.rounds > 1 and not args.worker:
        summary, rows = run_rounds(args)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(dict(gpu=torch.cuda.get_device_name(), torch=torch.__version__,
                               transformers=__import__("transformers").__version__,
                               batch=args.batch, prompt=args.prompt, short=args.short,
                               long=args.long, repeat=args.repeat, rounds=args.rounds,
                               summary=summary, rows=rows), f, indent=1)
        return
    from transformers import AutoModelForCausalLM

    import df11
    torch.cuda.init()
    baseline = device_used()
    g = torch.Generator().manual_seed(0)
    from transformers import AutoConfig
    vocab = AutoConfig.from_pretrained(args.bf16).vocab_size
    ids = torch.randint(0, vocab, (args.batch, args.prompt), generator=g).cuda()
    if args.worker:  # one model of one round (run_rounds)
        if args.worker == "bf16":
            row, tokens = measure("bf16", lambda: AutoModelForCausalLM.from_pretrained(
                args.bf16, dtype=torch.bfloat16, device_map="cuda").eval(), ids, args, baseline)
        else:
            mode = args.worker.split(" ", 1)[1]
            row, tokens = measure(args.worker, lambda: df11.from_pretrained(
                args.df11, device="cuda", mode=mode), ids, args, baseline)
        with open(args.worker_out + ".json", "w") as f:
            json.dump(row, f)
        torch.save(tokens, args.worker_out + ".pt")
        return
    rows = []
    ref_row = ref_tokens = None
    if not args.no_bf16:
        ref_row, ref_tokens = measure(
            "bf16", lambda: AutoModelForCausalLM.from_pretrained(
                args.bf16, dtype=torch.bfloat16, device_map="cuda").eval(), ids, args, baseline)
        rows.append(ref_row)
    for mode in args.modes.split(","):
        row, tokens = measure(f"df11 {mode}", lambda: df11.from_pretrained(
            args.df11, device="cuda", mode=mode), ids, args, baseline)
        if ref_row is None:
            rows.append(row)
            continue
        row["tokens_equal_bf16"] = bool(torch.equal(tokens, ref_tokens))
        row["first_diff_bf16"] = first_diff(tokens, ref_tokens)
        row["vs_bf16"] = round(row["step_ms"] / ref_row["step_ms"], 3)
        rows.append(row)
        print(json.dumps({k: row[k] for k in ("model", "tokens_equal_bf16", "first_diff_bf16",
                                              "vs_bf16")}),
              flush=True)
    result = dict(gpu=torch.cuda.get_device_name(), torch=torch.__version__,
                  transformers=__import__("transformers").__version__, batch=args.batch,
                  prompt=args.prompt, short=args.short, long=args.long, repeat=args.repeat,
                  rows=rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
