"""python -m df11.bench MODEL: generation speed and memory of a DF11 model, as the official
package's inference.py measures them, beside the BF16 model and the official loader.

    python -m df11.bench DF11_DIR --bf16 BF16_DIR --batch 1,8 --tokens 256 \\
        --compare bf16,dfloat11,df11-exec --cuda-graphs [--repeat 3] [--json results.json]

Each variant runs in its own process (so that load time and peak memory are its own): df11
(this package), bf16 (transformers from --bf16, the original weights), dfloat11 (the
official loader on the same folder, when the package is installed), df11-exec (this
package with mode="exec", whose tokens are not expected to equal BF16's: its products at
<= 256 tokens are the execution layout's reference GEMM's, not cuBLAS's), df11-compact (the
same from the compact execution layout), bf16-offload (the BF16 model through accelerate's
device_map="auto", its layers beyond the GPU's memory kept in CPU memory and moved in for
each forward pass) and glyd (glyd.from_pretrained on the BF16 folder, when the glyd package
is installed). For each batch size it
runs HF generate (greedy, a random prompt of --prompt tokens, --tokens new tokens, end of
sequence ignored) after a short warm-up, --repeat times (the median is reported), and prints
tokens/s, the time per generated token
(latency), peak GPU memory (allocated and reserved), the load time (from a warm page cache:
each process first reads its folder's files and imports transformers and the model's
modeling module, which is the same for every loader, then times the load), and whether each
variant's tokens equal BF16's (else df11's). --cuda-graphs adds a static-cache run with one
decode step captured in a CUDA graph (df11.generation.greedy_static; the official loader's
CuPy kernel cannot be captured), and the time df11 takes to decode every coded group once.

--gpu-memory GB caps what every variant's process may allocate on the GPU
(torch.cuda.set_per_process_memory_fraction): a GPU of that size. With a cap under the BF16
model's size, bf16 does not fit (its row says so) while df11 may, and bf16-offload is how
BF16 runs there: the seeds' scenario ("fits one GPU only in DF11").

--device cpu (the default without a CUDA GPU) runs df11 and bf16 on the CPU: the same rows,
timed with time.perf_counter, with the resident set instead of GPU memory (peak: getrusage's
ru_maxrss; added: the resident set after the load and one forward pass less the one after the
imports, from /proc/self/statm), the decode of every coded group timed on the CPU, and the
CPU model and torch's thread count printed. The official loader (its decode kernel is CUDA,
through CuPy), df11-exec, df11-compact, bf16-offload, glyd and --cuda-graphs need a GPU: each
is skipped with a line that says so.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

# The variants measured on the CPU (--device cpu); the others need a CUDA GPU.
CPU_VARIANTS = ("df11", "bf16")


def _folder(variant: str, args) -> str:
    """The folder a variant loads: the DF11 folder, or the BF16 one."""
    return args.bf16 if variant in ("bf16", "bf16-offload", "glyd") else args.model


def _before_load(variant: str, args) -> dict:
    """What every variant's process does before its load is timed, so that the load rows
    compare the loaders' own work "from a warm page cache" (issue 19) and not which process
    ran first: every file of the variant's folder read once (the page cache), and
    transformers with the model's modeling module imported (8-12 s in a fresh process on the
    GPU hosts, the same for every loader). Returns the seconds each took."""
    t0 = time.perf_counter()
    folder = _folder(variant, args)
    read = 0
    for root, _, files in os.walk(folder):
        for name in files:
            with open(os.path.join(root, name), "rb") as f:
                while True:
                    chunk = f.read(16 << 20)
                    if not chunk:
                        break
                    read += len(chunk)
    t1 = time.perf_counter()
    import transformers
    config = transformers.AutoConfig.from_pretrained(folder)
    model_class = transformers.AutoModelForCausalLM._model_mapping[type(config)]
    import torch  # noqa: F401  (already imported by the worker; named for clarity)
    return {"page cache": t1 - t0, "imports": time.perf_counter() - t1, "bytes read": read,
            "model class": model_class.__name__}


# The variants whose coded Linear layers run from an execution layout (df11's fused GEMM).
LAYOUT_VARIANTS = ("df11-exec", "df11-compact")


def _load(variant: str, args):
    import torch
    if variant in ("df11",) + LAYOUT_VARIANTS:
        import df11
        return df11.from_pretrained(args.model, device=args.device,
                                    mode=variant[len("df11-"):] if variant != "df11" else "decode")
    if variant == "bf16":
        from transformers import AutoModelForCausalLM
        return AutoModelForCausalLM.from_pretrained(args.bf16, dtype=torch.bfloat16,
                                                    device_map=args.device).eval()
    if variant == "bf16-offload":
        from transformers import AutoModelForCausalLM
        gpu = f"{max(_gpu_budget(args) - OFFLOAD_HEADROOM_GB, 0.5):.2f}GB"
        return AutoModelForCausalLM.from_pretrained(
            args.bf16, dtype=torch.bfloat16, device_map="auto",
            max_memory={0: gpu, "cpu": "1000GB"}).eval()
    if variant == "glyd":
        import glyd
        return glyd.from_pretrained(args.bf16).eval()
    if variant == "dfloat11":
        _pkg_resources_shim()
        from dfloat11 import DFloat11Model
        from transformers import AutoConfig, AutoModelForCausalLM
        try:
            from transformers.initialization import no_init_weights
        except ImportError:  # transformers 4
            from transformers.modeling_utils import no_init_weights
        config = AutoConfig.from_pretrained(args.model)
        with no_init_weights():
            skeleton = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16).eval()
        return DFloat11Model.from_pretrained(args.model, device="cuda", bfloat16_model=skeleton)
    raise ValueError(variant)


# GPU memory bf16-offload leaves free under --gpu-memory for activations, the KV cache and the
# layer accelerate moves in (an 8B block is 0.44 GB).
OFFLOAD_HEADROOM_GB = 1.5


def _gpu_budget(args) -> float:
    """GB the variant may allocate on GPU 0: --gpu-memory, else the whole GPU."""
    import torch
    total = torch.cuda.get_device_properties(0).total_memory / 1e9
    return min(args.gpu_memory, total) if args.gpu_memory else total


def _pkg_resources_shim():
    # dfloat11 0.5.0 finds its PTX through pkg_resources, which new setuptools no longer has.
    try:
        import pkg_resources  # noqa: F401
    except ImportError:
        import importlib.util
        import types
        shim = types.ModuleType("pkg_resources")
        shim.resource_filename = lambda package, name: os.path.join(
            os.path.dirname(importlib.util.find_spec(package).origin), name)
        sys.modules["pkg_resources"] = shim


def _prompt(vocab: int, batch: int, length: int, device: str):
    import torch
    g = torch.Generator().manual_seed(1234)
    return torch.randint(1, vocab, (batch, length), generator=g).to(device)


def _sync(device: str) -> None:
    """Waits for the device's queued work (a no-op on the CPU, whose work is synchronous)."""
    if device == "cuda":
        import torch
        torch.cuda.synchronize()


def _rss_bytes() -> int:
    """This process's resident set now (/proc/self/statm's second field, in pages)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _peak_rss_bytes() -> int:
    """This process's largest resident set so far (getrusage: kilobytes on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _cpu_name() -> str:
    """The CPU's model name (/proc/cpuinfo), else platform.processor()'s, else "unknown"."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform
    return platform.processor() or "unknown"


def _hardware(device: str) -> str:
    """What the variant ran on, as the report's first line names it."""
    import torch
    if device == "cuda":
        return f"GPU: {torch.cuda.get_device_name(0)}"
    return (f"CPU: {_cpu_name()}, {torch.get_num_threads()} torch threads, "
            f"{os.cpu_count()} logical CPUs")


def _generate(model, ids, tokens):
    import torch
    with torch.no_grad():
        return model.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                              do_sample=False, max_new_tokens=tokens, min_new_tokens=tokens,
                              eos_token_id=None, pad_token_id=0)[:, ids.shape[1]:]


def _decode_ms(model, device: str, rounds=20):
    """Median time of decoding every coded group once (df11 only): CUDA events on the GPU,
    time.perf_counter on the CPU (whose decodes return when done)."""
    import torch
    units = model.df11.units
    times = []
    for _ in range(rounds + 3):
        if device != "cuda":
            t0 = time.perf_counter()
            for unit in units:
                unit.mode.decode_all()
            times.append(1000 * (time.perf_counter() - t0))
            continue
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for unit in units:
            unit.mode.decode_all()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    model.df11._mark_forward_end()
    model.df11.check_status(wait=True)
    times = sorted(times[3:])
    return times[len(times) // 2]


def _run_row(mode, batch, tokens, times, path, outs) -> dict:
    """One row: the median of the repeated runs (all of them kept), and whether the repeats
    generated the same tokens (a variant whose own runs differ cannot be held to another's)."""
    import torch
    seconds = sorted(times)[(len(times) - 1) // 2]
    return {"mode": mode, "batch": batch, "new_tokens": tokens, "seconds": seconds,
            "all_seconds": times, "tokens_per_s": batch * tokens / seconds,
            "ms_per_token": 1000 * seconds / tokens, "tokens": path,
            "repeats_equal": all(torch.equal(o, outs[0]) for o in outs)}


def _memory(result, prefix="peak") -> None:
    """The memory figures so far: GPU peaks (allocated, reserved) on CUDA; on the CPU the
    peak resident set."""
    import torch
    if result["device"] == "cuda":
        result[f"{prefix}_allocated_gb"] = torch.cuda.max_memory_allocated() / 1e9
        result[f"{prefix}_reserved_gb"] = torch.cuda.max_memory_reserved() / 1e9
    else:
        result[f"{prefix}_rss_gb"] = _peak_rss_bytes() / 1e9


def _partial(result) -> None:
    """The results so far, in case a later run fails (the parent takes the last line)."""
    _memory(result)
    print("DF11BENCH " + json.dumps(result), flush=True)


def worker(args) -> dict:
    import torch
    variant = args.worker
    device = args.device
    if device == "cuda":
        if args.gpu_memory:
            total = torch.cuda.get_device_properties(0).total_memory
            torch.cuda.set_per_process_memory_fraction(min(1.0, args.gpu_memory * 1e9 / total),
                                                       0)
        torch.cuda.reset_peak_memory_stats()
    before = _before_load(variant, args)
    rss_after_imports = _rss_bytes()
    t0 = time.perf_counter()
    try:
        model = _load(variant, args)
    except torch.OutOfMemoryError as e:
        print(f"bench: {variant} does not fit in {_gpu_budget(args):.1f} GB of GPU memory: "
              f"{str(e).splitlines()[0]}", file=sys.stderr)
        raise
    _sync(device)
    result = {"variant": variant, "load_s": time.perf_counter() - t0, "before_load": before,
              "device": device, "hardware": _hardware(device), "runs": []}
    if device == "cuda":
        result["gpu"] = torch.cuda.get_device_name(0)
        result["gpu_memory_gb"] = round(_gpu_budget(args), 2)
    else:
        result["torch_threads"] = torch.get_num_threads()
    vocab = model.config.vocab_size
    for batch in args.batches:  # one forward pass's logits, compared bit for bit
        ids = _prompt(vocab, batch, args.prompt, device)
        with torch.no_grad():
            logits = model(input_ids=ids).logits[:, -1].float().cpu()
        path = os.path.join(args.out, f"{variant}-logits-b{batch}.pt")
        torch.save(logits, path)
        result.setdefault("logits", {})[str(batch)] = path
    if device == "cuda":
        result["peak_after_forward_gb"] = torch.cuda.max_memory_allocated() / 1e9
    else:  # the CPU figure: what the model adds to a process that imported it all
        result["rss_after_imports_gb"] = rss_after_imports / 1e9
        result["rss_added_gb"] = (_rss_bytes() - rss_after_imports) / 1e9
        result["peak_after_forward_rss_gb"] = _peak_rss_bytes() / 1e9
    eager_tokens = args.eager_tokens or args.tokens
    for batch in (args.batches if "eager" in args.modes else []):
        ids = _prompt(vocab, batch, args.prompt, device)
        _generate(model, ids, 4)  # warm-up
        times, outs = [], []
        for _ in range(args.repeat):
            _sync(device)
            t0 = time.perf_counter()
            out = _generate(model, ids, eager_tokens)
            _sync(device)
            times.append(time.perf_counter() - t0)
            outs.append(out)
        path = os.path.join(args.out, f"{variant}-eager-b{batch}.pt")
        torch.save(out.cpu(), path)
        result["runs"].append(_run_row("eager", batch, eager_tokens, times, path, outs))
        _partial(result)
    _memory(result, "peak_eager")
    if (device == "cuda" and args.cuda_graphs and "graph" in args.modes
            and variant in ("df11", "bf16") + LAYOUT_VARIANTS):
        from .generation import greedy_static
        for batch in (args.graph_batches or args.batches):
            ids = _prompt(vocab, batch, args.prompt, device)
            greedy_static(model, ids, 4, cuda_graph=True)  # warm-up (its own cache, graph)
            times, outs = [], []
            for _ in range(args.repeat):
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                out, _ = greedy_static(model, ids, args.tokens, cuda_graph=True)
                torch.cuda.synchronize()
                times.append(time.perf_counter() - t0)
                outs.append(out)
            path = os.path.join(args.out, f"{variant}-graph-b{batch}.pt")
            torch.save(out.cpu(), path)
            result["runs"].append(_run_row("cuda-graph", batch, args.tokens, times, path, outs))
            _partial(result)
    if variant == "df11":
        result["decode_all_ms"] = _decode_ms(model, device)
    if variant.startswith("df11"):
        result["df11_bytes"] = model.df11.memory_bytes()
        result["load_phases"] = model.df11.load_seconds
    _memory(result)
    return result


# The two memory columns of the table: GPU peaks on CUDA, the resident set on the CPU.
MEMORY_COLUMNS = {"cuda": (("peak alloc GB", "peak_allocated_gb"),
                           ("peak resv GB", "peak_reserved_gb")),
                  "cpu": (("peak RSS GB", "peak_rss_gb"), ("RSS added GB", "rss_added_gb"))}


def _table(results, args) -> str:
    import torch
    (head_a, key_a), (head_b, key_b) = MEMORY_COLUMNS[args.device]
    lines = [f"{'variant':12} {'mode':10} {'batch':>5} {'new':>4} {'tok/s':>9} {'ms/token':>9} "
             f"{'load s':>7} {head_a:>13} {head_b:>12}  tokens"]
    tokens = {}
    for r in results:
        for run in r["runs"]:
            tokens[(r["variant"], run["mode"], run["batch"])] = torch.load(run["tokens"])
    reference = "bf16" if any(r["variant"] == "bf16" for r in results) else "df11"
    # Where the reference's own repeats differ (BF16 at batch 8 under CUDA graphs, on some
    # GPUs), its tokens are not a reference: a difference there checks nothing.
    ref_stable = {(run["mode"], run["batch"]): run.get("repeats_equal", True)
                  for r in results if r["variant"] == reference for run in r["runs"]}
    ref_logits = next((r.get("logits", {}) for r in results if r["variant"] == reference), {})
    for r in results:
        for batch, path in r.get("logits", {}).items():
            if r["variant"] not in (reference, "glyd") + LAYOUT_VARIANTS and batch in ref_logits:
                a, b = torch.load(path), torch.load(ref_logits[batch])
                same = torch.equal(a, b)
                r.setdefault("logits_equal_reference", {})[batch] = same
                lines.append(f"{r['variant']}: logits of one forward pass at batch {batch} "
                             f"{'torch.equal' if same else 'DIFFER'} to {reference}'s"
                             + ("" if same else f" (max |diff| {(a - b).abs().max().item():.4g})"))
    for r in results:
        for run in r["runs"]:
            key = (reference, run["mode"], run["batch"])
            mine = tokens[(r["variant"], run["mode"], run["batch"])]
            if r["variant"] == reference:
                same = "reference"
            elif r["variant"] in ("glyd",) + LAYOUT_VARIANTS and key in tokens:
                # Not expected equal: at <= 16 tokens its products are the reference GEMM's.
                why = ("exec products are not cuBLAS's" if r["variant"] in LAYOUT_VARIANTS else
                       "its products are its own kernels'")
                same = ("equal" if torch.equal(mine, tokens[key]) else
                        f"differ ({int((mine != tokens[key]).sum())} of {mine.numel()}; {why})")
            elif key in tokens:
                stable = ref_stable.get((run["mode"], run["batch"]), True)
                n = int((mine != tokens[key]).sum())
                same = ("equal" if n == 0 else f"DIFFER ({n} of {mine.numel()})" if stable else
                        f"differ ({n} of {mine.numel()}; {reference}'s own repeats differ: "
                        "no check)")
                run["tokens_equal_reference"] = n == 0 or not stable
            else:
                same = "-"
            if not run.get("repeats_equal", True):
                same += "; its own repeats differ"
            other = ("df11" if r["variant"] == "dfloat11" else
                     "dfloat11" if r["variant"] == "df11" else None)
            if other and (other, run["mode"], run["batch"]) in tokens:
                same += ("; = " if torch.equal(mine, tokens[(other, run["mode"], run["batch"])])
                         else "; != ") + other
            lines.append(f"{r['variant']:12} {run['mode']:10} {run['batch']:>5} "
                         f"{run.get('new_tokens', args.tokens):>4} {run['tokens_per_s']:>9.1f} {run['ms_per_token']:>9.2f} "
                         f"{r['load_s']:>7.2f} {r[key_a]:>13.2f} "
                         f"{r[key_b]:>12.2f}  {same}")
    for r in results:
        b = r.get("before_load")
        if b:
            lines.append(f"{r['variant']}: before its load was timed: {b['bytes read'] / 1e9:.2f} "
                         f"GB read into the page cache in {b['page cache']:.2f} s, transformers "
                         f"and {b['model class']} imported in {b['imports']:.2f} s")
    for r in results:
        if "load_phases" in r:
            phases = ", ".join(f"{k} {v:.2f}" for k, v in r["load_phases"].items())
            lines.append(f"{r['variant']}: load {r['load_s']:.2f} s, of which (s) {phases}")
    for r in results:
        if "decode_all_ms" in r:
            clock = "CUDA events" if args.device == "cuda" else "time.perf_counter"
            lines.append(f"df11: decoding every coded group once takes {r['decode_all_ms']:.2f} "
                         f"ms (median of 20, {clock})")
    return "\n".join(lines)


def _measured(args) -> str:
    """The report's second line: what the figures are and how they were taken."""
    what = (f"{args.tokens} new tokens (eager: {args.eager_tokens or args.tokens}), prompt "
            f"{args.prompt}, greedy; times: time.perf_counter, median of {args.repeat}")
    if args.device == "cuda":
        return what + "; memory: torch's peak GPU allocation and reservation"
    return (what + "; memory: peak resident set (getrusage ru_maxrss) and the resident set "
            "the load and one forward pass added to the process (/proc/self/statm)")


def _skip_reason(variant: str, args) -> str:
    """Why a variant is not run on this device; "" if it is."""
    if args.device == "cuda" or variant in CPU_VARIANTS:
        return ""
    return {"dfloat11": "the official loader decodes with a CUDA kernel (CuPy)",
            "df11-exec": "mode='exec' runs df11's CUDA GEMM",
            "df11-compact": "mode='compact' runs df11's CUDA GEMM",
            "bf16-offload": "it offloads from a GPU's memory",
            "glyd": "measured on the GPU only"}.get(variant, "needs a CUDA GPU")


VARIANTS = ("bf16", "dfloat11", "df11-exec", "df11-compact", "bf16-offload", "glyd")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m df11.bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help="DF11 model folder")
    parser.add_argument("--bf16", help="the original BF16 model folder (for --compare bf16)")
    parser.add_argument("--batch", default="1,8,32", help="batch sizes (default 1,8,32)")
    parser.add_argument("--tokens", type=int, default=256, help="new tokens (default 256)")
    parser.add_argument("--prompt", type=int, default=16, help="prompt tokens (default 16)")
    parser.add_argument("--compare", default="bf16,dfloat11",
                        help="other variants: bf16, dfloat11 (the official loader), df11-exec "
                             "(mode='exec'), df11-compact (mode='compact'), bf16-offload "
                             "(accelerate CPU offload), glyd; "
                             "VARIANT:MODES runs one in those modes only "
                             "(df11-exec:graph, modes joined by +)")
    parser.add_argument("--cuda-graphs", action="store_true",
                        help="also a static-cache run with a CUDA-graph decode step")
    parser.add_argument("--modes", default="eager,graph",
                        help="eager (HF generate) and/or graph (with --cuda-graphs)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs of each measurement; the median is reported (default 3)")
    parser.add_argument("--eager-tokens", type=int, default=0,
                        help="new tokens of the eager runs (default: --tokens)")
    parser.add_argument("--graph-batch", default="",
                        help="batch sizes of the CUDA-graph runs (default: --batch)")
    parser.add_argument("--gpu-memory", type=float, default=0.0,
                        help="GB of GPU memory each variant may allocate (default: all)")
    parser.add_argument("--device", choices=("cuda", "cpu"),
                        help="where every variant runs (default: cuda with a GPU, else cpu)")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.batches = [int(b) for b in args.batch.split(",") if b]
    args.graph_batches = [int(b) for b in args.graph_batch.split(",") if b]
    if args.device is None:
        import torch
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    if args.worker:
        print("DF11BENCH " + json.dumps(worker(args)), flush=True)
        return 0
    variants = ["df11"]
    modes = {"df11": args.modes}
    for spec in [v for v in args.compare.split(",") if v]:
        v, _, only = spec.partition(":")  # "df11-exec:graph": that variant in those modes
        modes[v] = only.replace("+", ",") if only else args.modes
        if v not in VARIANTS:
            parser.error(f"--compare: unknown variant {v!r}")
        if v in ("bf16", "bf16-offload", "glyd") and not args.bf16:
            print(f"bench: --compare {v} needs --bf16 DIR; skipped", file=sys.stderr)
            continue
        if _skip_reason(v, args):
            print(f"bench: --compare {v}: not on the CPU ({_skip_reason(v, args)}); skipped",
                  file=sys.stderr)
            continue
        if v in ("dfloat11", "glyd"):
            import importlib.util
            if importlib.util.find_spec(v) is None:
                print(f"bench: the {v} package is not installed; skipped", file=sys.stderr)
                continue
        variants.append(v)
    if args.cuda_graphs and args.device != "cuda":
        print("bench: --cuda-graphs: not on the CPU (CUDA graphs); skipped", file=sys.stderr)
        args.cuda_graphs = False
    results = []
    with tempfile.TemporaryDirectory() as out:
        for v in variants:
            cmd = [sys.executable, "-m", "df11.bench", args.model, "--worker", v, "--out", out,
                   "--batch", args.batch, "--tokens", str(args.tokens), "--prompt",
                   str(args.prompt), "--repeat", str(args.repeat), "--eager-tokens",
                   str(args.eager_tokens), "--graph-batch", args.graph_batch,
                   "--device", args.device]
            if args.bf16:
                cmd += ["--bf16", args.bf16]
            if args.cuda_graphs:
                cmd.append("--cuda-graphs")
            if args.gpu_memory:
                cmd += ["--gpu-memory", str(args.gpu_memory)]
            cmd += ["--modes", modes[v]]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("DF11BENCH ")]
            if proc.returncode != 0:
                print(f"bench: {v} failed (exit {proc.returncode}):\n{proc.stdout[-2000:]}"
                      f"{proc.stderr[-2000:]}", file=sys.stderr)
            if not lines:
                continue
            results.append(json.loads(lines[-1][len("DF11BENCH "):]))
            print(f"bench: {v} done: {lines[-1][len('DF11BENCH '):]}", file=sys.stderr,
                  flush=True)
        if not results:
            return 1
        print(results[0]["hardware"])
        print(_measured(args))
        print(_table(results, args))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    same = all(run.get("tokens_equal_reference", True) for r in results for run in r["runs"])
    same = same and all(all(r.get("logits_equal_reference", {}).values()) for r in results)
    return 0 if same else 2


if __name__ == "__main__":
    sys.exit(main())
