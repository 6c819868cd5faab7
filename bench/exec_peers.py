#!/usr/bin/env python3
"""cuBLAS (torch F.linear) and glyd-gpu's layouts on the Llama-3.1-8B block, on this GPU, for
the execution-layout comparison of BENCHMARKS.md ("Execution layout"). Gaussian weights (std
0.02) as df11's bench workload draws them; Y = X W^T for all seven matrices per run, CUDA-event
median of --runs after --warmup. glyd-gpu (PyPI, BUSL licence, closed source) is optional: its
rows are left out when it does not import. Nothing of glyd is part of df11; it is measured only.

    PYTHONPATH=<glyd-gpu unpacked> python3 bench/exec_peers.py [--runs 30] [--warmup 5]
"""
import argparse
import inspect
import sys
import traceback

import torch
import torch.nn.functional as F

from df11.tune import timed as df11_timed

SHAPES = [(4096, 4096), (1024, 4096), (1024, 4096), (4096, 4096), (14336, 4096), (14336, 4096),
          (4096, 14336)]


def timed(fn, runs, warmup):
    """Median ms of fn, replayed from a CUDA graph when it can be captured (no Python launch
    gaps in the time, as in df11-cuda-bench's C++ loop), else called eagerly (df11.tune.timed)."""
    ms, captured = df11_timed(fn, runs, warmup)
    if not captured:
        print("  (not captured in a CUDA graph; timed eagerly)")
    return ms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    o = ap.parse_args()
    torch.manual_seed(1)
    dev = torch.device("cuda")
    print("device:", torch.cuda.get_device_name(0), "torch", torch.__version__)
    ws = [(torch.randn(r, c, device=dev) * 0.02).to(torch.bfloat16) for r, c in SHAPES]
    batches = [1, 2, 4, 8, 16]
    xs = {m: [torch.randn(m, c, device=dev).to(torch.bfloat16) for _, c in SHAPES] for m in batches}
    rows = {}
    for m in batches:
        rows[m] = {"cublas": timed(lambda: [F.linear(x, w) for x, w in zip(xs[m], ws)], o.runs,
                                   o.warmup)}
    try:
        import glyd_gpu
        import glyd_gpu.kernels as K
        print("glyd_gpu", getattr(glyd_gpu, "__version__", "?"))
        for name in ("pack_mma12", "pack_mma", "mma_linear", "unpack", "mma_unpack", "Mma12",
                     "best_layout", "pack"):
            f = getattr(K, name, None)
            try:
                sig = str(inspect.signature(f)) if f is not None else "absent"
            except (TypeError, ValueError):
                sig = "(no signature)"
            print(f"  glyd_gpu.kernels.{name}{sig}: {(getattr(f, '__doc__', '') or '')[:300]!r}")
        for layout, packer in (("mma12", "pack_mma12"), ("mma", "pack_mma")):
            try:
                packs = [getattr(K, packer)(w) for w in ws]
                p0 = packs[0]
                print(f"  {packer} -> {type(p0).__name__}: {[a for a in dir(p0) if not a.startswith('__')]}")
                nb = sum(p.nbytes() if callable(p.nbytes) else p.nbytes for p in packs)
                total = sum(w.numel() for w in ws)
                print(f"  {layout}: {nb} bytes, {8 * nb / total:.3f} bits per weight")
                y = K.mma_linear(packs[0], xs[1][0])
                ref = F.linear(xs[1][0], ws[0])
                print(f"  {layout}: mma_linear out {tuple(y.shape)}, max |y - F.linear| "
                      f"{(y.float() - ref.float()).abs().max().item():.3g}")
                for m in batches:
                    rows[m][layout] = timed(lambda: [K.mma_linear(p, x) for p, x in zip(packs, xs[m])],
                                            o.runs, o.warmup)
                unpack = getattr(K, "mma_unpack", None) or getattr(K, "unpack", None)
                if unpack is not None:
                    back = unpack(packs[0])
                    print(f"  {layout}: unpack exact: {torch.equal(back.view(torch.int16), ws[0].view(torch.int16))}")
                    rows.setdefault("unpack", {})[layout] = timed(lambda: [unpack(p) for p in packs],
                                                                  o.runs, o.warmup)
            except Exception:  # noqa: BLE001 - a peer's API we only measure
                print(f"  {layout}: failed:\n" + traceback.format_exc(limit=3))
    except Exception:  # noqa: BLE001
        print("glyd_gpu not usable:\n" + traceback.format_exc(limit=2))
    print("\n(CUDA-graph replays where capture worked; ratios against F.linear in this process)")
    print("batch  cuBLAS ms  " + "  ".join(f"{k:>14s}" for k in ("mma12", "mma")))
    for m in batches:
        r = rows[m]
        cells = []
        for k in ("mma12", "mma"):
            cells.append(f"{r[k]:7.3f} ({r[k] / r['cublas']:.2f}x)" if k in r else f"{'-':>14s}")
        print(f"{m:5d}  {r['cublas']:9.3f}  " + "  ".join(cells))
    if "unpack" in rows:
        print("unpack to BF16, all seven:", {k: f"{v:.3f} ms" for k, v in rows["unpack"].items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
