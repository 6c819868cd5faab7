#!/usr/bin/env python3
"""Where a decoding step's Linear time goes in the execution layouts: the Llama-3.1-8B block's
Linear layers as a serving engine runs them (q/k/v one layer, gate/up one layer, o, down:
df11.exec_mode.ExecWeight, as vLLM's modes "exec" and "compact" do) against F.linear on the
same BF16 weights (cuBLAS), over --layers distinct blocks so that the weights stream from device
memory as in a model's step (not from the L2 cache, as a loop over one matrix would), at each
token count. Gaussian weights (std 0.02), packed into each layout of --layouts on the GPU
(exec_mode.pack_bf16: the blobs a DF11 group of the same weights transcodes to at load). Each
cell: CUDA graph of the layers' calls, CUDA-event median of --runs replays after warm-up
(exec_peers.timed); a row per layer kind and one for the whole step; ratio = layout / cuBLAS
time. Outputs are compared with df11's reference GEMM first. Up to --fused-max-tokens tokens
(default exec_mode.fused_max_tokens() of the layout and GPU: 64 exec, 128 on an H100 80GB HBM3,
32 compact) the fused GEMM runs (up to 256: the wide kernel above 32 tokens,
decoder/cuda/EXEC_KERNEL.md v9), above it decode + F.linear (0: decode + F.linear at every token
count).

--peers adds glyd-gpu's `mma12` (12 bits) and `mma` (~10.75 bits) layouts (PyPI, closed source,
measured only, when it imports) on the same weights and inputs, each layer packed whole by its
own packer and run by its `mma_linear`: the same cells, in the same process.

    python3 bench/exec_step.py [--layers 8] [--tokens 1,2,4,8,16] [--runs 30] [--json OUT]
                               [--layouts exec,compact] [--peers] [--fused-max-tokens N]
    (df11 importable with its CUDA library)
"""
import argparse
import json
import sys
import traceback

import torch

from exec_peers import timed

import df11
from df11 import exec_mode
from df11.tune import HIDDEN, FFN, LAYERS, build

GLYD = {"glyd-mma12": "pack_mma12", "glyd-mma": "pack_mma"}


def glyd_packs(bf16):
    """glyd-gpu's layouts of every layer ({name: (mma_linear, [per block {kind: pack}], bits)}),
    or {} when glyd_gpu does not import."""
    try:
        import glyd_gpu
        import glyd_gpu.kernels as K
    except Exception:  # noqa: BLE001 - an optional peer
        print("glyd_gpu not importable: its columns are left out")
        return {}
    print("glyd_gpu", getattr(glyd_gpu, "__version__", "?"))
    out = {}
    for name, packer in GLYD.items():
        try:
            packs = [{kind: getattr(K, packer)(w) for kind, w in blk.items()} for blk in bf16]
            nb = sum(p.nbytes() if callable(p.nbytes) else p.nbytes
                     for blk in packs for p in blk.values())
            total = sum(w.numel() for blk in bf16 for w in blk.values())
            out[name] = (K.mma_linear, packs, 8 * nb / total)
        except Exception:  # noqa: BLE001 - a peer's API we only measure
            print(f"{name}: packing failed:\n" + traceback.format_exc(limit=3))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--tokens", default="1,2,4,8,16")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--json")
    ap.add_argument("--layouts", default="exec", help="exec, compact or both, comma-separated")
    ap.add_argument("--peers", action="store_true", help="glyd-gpu's layouts too")
    ap.add_argument("--fused-max-tokens", type=int,
                    help="the fused GEMM's limit for every layout measured")
    a = ap.parse_args()
    layouts = a.layouts.split(",")
    for name in layouts:
        if name not in exec_mode.LAYOUTS:
            sys.exit(f"--layouts: {name!r} is not one of {sorted(exec_mode.LAYOUTS)}")
        if a.fused_max_tokens is not None:
            exec_mode.FUSED_MAX_TOKENS[name] = a.fused_max_tokens
    torch.set_grad_enabled(False)
    gpu = torch.cuda.get_device_name(0)
    bf16, packed = build(a.layers, layouts)
    peers = glyd_packs(bf16) if a.peers else {}
    variants = {name: (lambda blk, k, x, name=name: packed[name][blk][k].linear(x, None))
                for name in layouts}
    for name, (linear, packs, _) in peers.items():
        variants[name] = (lambda blk, k, x, linear=linear, packs=packs: linear(packs[blk][k], x))
    bits = {name: 8 * sum(w.nbytes for blk in packed[name] for w in blk.values())
            / sum(w.numel() for blk in bf16 for w in blk.values()) for name in layouts}
    bits.update({name: p[2] for name, p in peers.items()})
    print(f"{gpu}: {a.layers} blocks of Llama-3.1-8B shapes; ms per step over all blocks; "
          "bits per weight " + ", ".join(f"{k} {v:.3f}" for k, v in bits.items()))
    print(f"{'tokens':>6} {'layer':>8} {'cuBLAS ms':>10} "
          + " ".join(f"{name + ' ms (x)':>22}" for name in variants))
    rows, checks = [], []
    for t in [int(x) for x in a.tokens.split(",")]:
        gen = torch.Generator(device="cuda").manual_seed(t)
        xs = {k: torch.randn(t, HIDDEN if k != "down" else FFN, device="cuda",
                             generator=gen).to(torch.bfloat16) for k in LAYERS}
        for name in layouts:  # exactness first: the fused GEMM against its reference
            limit = exec_mode.fused_max_tokens(name)
            for b, blk in enumerate(packed[name]):
                for kind, ew in blk.items():
                    if not torch.equal(ew.linear(xs[kind], None), exec_mode.reference_linear(
                            xs[kind], bf16[b][kind], max_tokens=limit)):
                        sys.exit(f"{name} {kind}: the fused GEMM differs from df11's reference")
        for name in peers:  # a peer's own products: how far from F.linear, recorded
            try:
                gap = max((variants[name](0, k, xs[k]).float() - torch.nn.functional.linear(
                    xs[k], bf16[0][k]).float()).abs().max().item() for k in LAYERS)
            except Exception as e:  # noqa: BLE001 - a peer that cannot run this shape
                gap = f"{type(e).__name__}: {e}"
            checks.append({"tokens": t, "variant": name, "max_abs_diff_vs_f_linear": gap})
        for kind in list(LAYERS) + ["step"]:
            kinds = list(LAYERS) if kind == "step" else [kind]

            def run_cublas():
                for b in range(a.layers):
                    for k in kinds:
                        torch.nn.functional.linear(xs[k], bf16[b][k])
            row = {"tokens": t, "layer": kind, "cublas_ms": timed(run_cublas, a.runs, a.warmup)}
            for name, fn in variants.items():
                def run(fn=fn):
                    for b in range(a.layers):
                        for k in kinds:
                            fn(b, k, xs[k])
                try:
                    ms = timed(run, a.runs, a.warmup)
                except Exception as e:  # noqa: BLE001 - a peer that cannot run this shape
                    print(f"  {name} at {t} tokens: {type(e).__name__}: {e}")
                    ms = None
                row[f"{name}_ms"] = ms
                row[f"{name}_ratio"] = ms / row["cublas_ms"] if ms is not None else None
            rows.append(row)
            cells = [f"{row[f'{n}_ms']:>13.4f} ({row[f'{n}_ratio']:.3f})"
                     if row[f"{n}_ms"] is not None else f"{'-':>22}" for n in variants]
            print(f"{t:>6} {kind:>8} {row['cublas_ms']:>10.4f} " + " ".join(cells))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"gpu": gpu, "torch": torch.__version__, "layers": a.layers,
                       "df11": df11.version(), "bits_per_weight": bits,
                       "fused_max_tokens": {n: exec_mode.fused_max_tokens(n) for n in layouts},
                       "command": " ".join(["python3", "bench/exec_step.py"] + sys.argv[1:]),
                       "peer_checks": checks, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
