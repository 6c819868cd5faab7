"""python -m df11.bench MODEL: generation speed and memory of a DF11 model, as the official
package's inference.py measures them, beside the BF16 model and the official loader.

    python -m df11.bench DF11_DIR --bf16 BF16_DIR --batch 1,8 --tokens 256 \\
        --compare bf16,dfloat11,df11-exec --cuda-graphs [--repeat 3] [--json results.json]

Each variant runs in its own process (so that load time and peak memory are its own): df11
(this package), bf16 (transformers from --bf16, the original weights), dfloat11 (the
official loader on the same folder, when the package is installed), df11-exec (this
package with mode="exec", whose tokens are not expected to equal BF16's: its products at
<= 16 tokens are the execution layout's reference GEMM's, not cuBLAS's), bf16-offload (the
BF16 model through accelerate's device_map="auto", its layers beyond the GPU's memory kept
in CPU memory and moved in for each forward pass) and glyd (glyd.from_pretrained on the BF16
folder, when the glyd package is installed). For each batch size it
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
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


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


def _load(variant: str, args):
    import torch
    if variant in ("df11", "df11-exec"):
        import df11
        return df11.from_pretrained(args.model, device="cuda",
                                    mode="exec" if variant == "df11-exec" else "decode")
    if variant == "bf16":
        from transformers import AutoModelForCausalLM
        return AutoModelForCausalLM.from_pretrained(args.bf16, dtype=torch.bfloat16,
                                                    device_map="cuda").eval()
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


def _prompt(vocab: int, batch: int, length: int):
    import torch
    g = torch.Generator().manual_seed(1234)
    return torch.randint(1, vocab, (batch, length), generator=g).cuda()


def _generate(model, ids, tokens):
    import torch
    with torch.no_grad():
        return model.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                              do_sample=False, max_new_tokens=tokens, min_new_tokens=tokens,
                              eos_token_id=None, pad_token_id=0)[:, ids.shape[1]:]


def _decode_ms(model, rounds=20):
    """Median time of decoding every coded group once (df11 only), CUDA events."""
    import torch
    units = model.df11.units
    times = []
    for _ in range(rounds + 3):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for unit in units:
            unit.mode.pre_forward()
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


def _partial(result) -> None:
    """The results so far, in case a later run fails (the parent takes the last line)."""
    import torch
    result["peak_allocated_gb"] = torch.cuda.max_memory_allocated() / 1e9
    result["peak_reserved_gb"] = torch.cuda.max_memory_reserved() / 1e9
    print("DF11BENCH " + json.dumps(result), flush=True)


def worker(args) -> dict:
    import torch
    variant = args.worker
    if args.gpu_memory:
        total = torch.cuda.get_device_properties(0).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, args.gpu_memory * 1e9 / total), 0)
    torch.cuda.reset_peak_memory_stats()
    before = _before_load(variant, args)
    t0 = time.perf_counter()
    try:
        model = _load(variant, args)
    except torch.OutOfMemoryError as e:
        print(f"bench: {variant} does not fit in {_gpu_budget(args):.1f} GB of GPU memory: "
              f"{str(e).splitlines()[0]}", file=sys.stderr)
        raise
    torch.cuda.synchronize()
    result = {"variant": variant, "load_s": time.perf_counter() - t0, "before_load": before,
              "gpu": torch.cuda.get_device_name(0), "runs": [],
              "gpu_memory_gb": round(_gpu_budget(args), 2)}
    vocab = model.config.vocab_size
    for batch in args.batches:  # one forward pass's logits, compared bit for bit
        ids = _prompt(vocab, batch, args.prompt)
        with torch.no_grad():
            logits = model(input_ids=ids).logits[:, -1].float().cpu()
        path = os.path.join(args.out, f"{variant}-logits-b{batch}.pt")
        torch.save(logits, path)
        result.setdefault("logits", {})[str(batch)] = path
    result["peak_after_forward_gb"] = torch.cuda.max_memory_allocated() / 1e9
    eager_tokens = args.eager_tokens or args.tokens
    for batch in (args.batches if "eager" in args.modes else []):
        ids = _prompt(vocab, batch, args.prompt)
        _generate(model, ids, 4)  # warm-up
        times, outs = [], []
        for _ in range(args.repeat):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            out = _generate(model, ids, eager_tokens)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
            outs.append(out)
        path = os.path.join(args.out, f"{variant}-eager-b{batch}.pt")
        torch.save(out.cpu(), path)
        result["runs"].append(_run_row("eager", batch, eager_tokens, times, path, outs))
        _partial(result)
    result["peak_eager_allocated_gb"] = torch.cuda.max_memory_allocated() / 1e9
    result["peak_eager_reserved_gb"] = torch.cuda.max_memory_reserved() / 1e9
    if args.cuda_graphs and "graph" in args.modes and variant in ("df11", "df11-exec", "bf16"):
        from .generation import greedy_static
        for batch in (args.graph_batches or args.batches):
            ids = _prompt(vocab, batch, args.prompt)
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
        result["decode_all_ms"] = _decode_ms(model)
    if variant.startswith("df11"):
        result["df11_bytes"] = model.df11.memory_bytes()
        result["load_phases"] = model.df11.load_seconds
    result["peak_allocated_gb"] = torch.cuda.max_memory_allocated() / 1e9
    result["peak_reserved_gb"] = torch.cuda.max_memory_reserved() / 1e9
    return result


def _table(results, args) -> str:
    import torch
    lines = [f"{'variant':12} {'mode':10} {'batch':>5} {'new':>4} {'tok/s':>9} {'ms/token':>9} "
             f"{'load s':>7} {'peak alloc GB':>13} {'peak resv GB':>12}  tokens"]
    tokens = {}
    for r in results:
        for run in r["runs"]:
            tokens[(r["variant"], run["mode"], run["batch"])] = torch.load(run["tokens"])
    reference = "bf16" if any(r["variant"] == "bf16" for r in results) else "df11"
    ref_logits = next((r.get("logits", {}) for r in results if r["variant"] == reference), {})
    for r in results:
        for batch, path in r.get("logits", {}).items():
            if r["variant"] not in (reference, "df11-exec", "glyd") and batch in ref_logits:
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
            elif r["variant"] in ("df11-exec", "glyd") and key in tokens:
                # Not expected equal: at <= 16 tokens its products are the reference GEMM's.
                why = ("exec products are not cuBLAS's" if r["variant"] == "df11-exec" else
                       "its products are its own kernels'")
                same = ("equal" if torch.equal(mine, tokens[key]) else
                        f"differ ({int((mine != tokens[key]).sum())} of {mine.numel()}; {why})")
            elif key in tokens:
                same = "equal" if torch.equal(mine, tokens[key]) else \
                    f"DIFFER ({int((mine != tokens[key]).sum())} of {mine.numel()})"
                run["tokens_equal_reference"] = same == "equal"
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
                         f"{r['load_s']:>7.2f} {r['peak_allocated_gb']:>13.2f} "
                         f"{r['peak_reserved_gb']:>12.2f}  {same}")
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
            lines.append(f"df11: decoding every coded group once takes {r['decode_all_ms']:.2f} "
                         f"ms (median of 20, CUDA events)")
    return "\n".join(lines)


VARIANTS = ("bf16", "dfloat11", "df11-exec", "bf16-offload", "glyd")


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
                             "(mode='exec'), bf16-offload (accelerate CPU offload), glyd; "
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
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.batches = [int(b) for b in args.batch.split(",") if b]
    args.graph_batches = [int(b) for b in args.graph_batch.split(",") if b]
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
        if v in ("dfloat11", "glyd"):
            import importlib.util
            if importlib.util.find_spec(v) is None:
                print(f"bench: the {v} package is not installed; skipped", file=sys.stderr)
                continue
        variants.append(v)
    results = []
    with tempfile.TemporaryDirectory() as out:
        for v in variants:
            cmd = [sys.executable, "-m", "df11.bench", args.model, "--worker", v, "--out", out,
                   "--batch", args.batch, "--tokens", str(args.tokens), "--prompt",
                   str(args.prompt), "--repeat", str(args.repeat), "--eager-tokens",
                   str(args.eager_tokens), "--graph-batch", args.graph_batch]
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
        print(f"GPU: {results[0]['gpu']}; {args.tokens} new tokens, prompt {args.prompt}, greedy")
        print(_table(results, args))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    same = all(run.get("tokens_equal_reference", True) for r in results for run in r["runs"])
    same = same and all(all(r.get("logits_equal_reference", {}).values()) for r in results)
    return 0 if same else 2


if __name__ == "__main__":
    sys.exit(main())
