#!/usr/bin/env python3
"""What the decode's status copy costs the GPU's timeline, in a CUDA graph and eagerly.

    python bench/status_copy.py [--layers 32] [--replays 200]

A DF11 Llama of `--layers` blocks with tiny matrices (hidden 64) in the default mode on the
GPU, so that each block's decode kernel is a few microseconds and what lies between kernels
shows. The blocks' decodes are enqueued back to back, one pass over the blocks at a time:
  - "decode + status copy": each block's call as the default mode makes it
    (df11_cuda_decode_and_copy_status: the kernel, then a copy of its status records into
    pinned host memory on the same stream);
  - "decode only": df11_cuda_decode alone.
Each captured in a CUDA graph and replayed (CUDA events, median of 5 rounds of `--replays`),
and run eagerly (the same, `--replays` / 4 passes); ms per pass and us per block (`--json`:
the same rows).
Needs the df11 CLI (DF11_CLI) to compress the model."""
import argparse
import ctypes
import json
import os
import statistics
import sys
import tempfile

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python",
                                "tests"))
import df11  # noqa: E402
import models  # noqa: E402
from df11 import _capi, decoders  # noqa: E402


def timed(fn, passes: int, rounds: int = 5) -> float:
    """ms per call of fn, median of rounds."""
    out = []
    for _ in range(rounds):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        for _ in range(passes):
            fn()
        end.record()
        torch.cuda.synchronize()
        out.append(start.elapsed_time(end) / passes)
    return statistics.median(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--replays", type=int, default=200)
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        bf16_dir, df11_dir = models.llama_folders(work, num_hidden_layers=args.layers)
        model = df11.from_pretrained(df11_dir, device="cuda")
        decs = [rt.decoder for u in model.df11.units for rt in u.groups
                if isinstance(rt.decoder, decoders.CudaDecoder)]
        lib = _capi.lib()

        def with_copy():
            for d in decs:
                d.decode_now()

        def decode_only():
            stream = torch.cuda.current_stream().cuda_stream
            for d in decs:
                rc = lib.df11_cuda_decode(d._plan, ctypes.c_void_p(d.ws_ptr), d.ws_bytes,
                                          ctypes.c_void_p(stream))
                if rc != 0:
                    d.plan._check(rc)

        print(f"{torch.cuda.get_device_name()}: {len(decs)} block decodes a pass "
              f"({args.layers}-block Llama, hidden 64)", flush=True)
        rows = {}
        for name, fn in (("decode + status copy", with_copy), ("decode only", decode_only)):
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                fn()  # warm-up, outside capture
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                fn()
            graph.replay()
            rows[name] = (timed(graph.replay, args.replays), timed(fn, args.replays // 4))
            model.df11.check_status()
        for name, (g, e) in rows.items():
            print(f"{name:22s} graph {g:.4f} ms a pass ({1e3 * g / len(decs):.2f} us a block), "
                  f"eager {e:.4f} ms ({1e3 * e / len(decs):.2f} us a block)", flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"gpu": torch.cuda.get_device_name(), "blocks": len(decs),
                           "rows": {n: {"graph_ms": g, "eager_ms": e}
                                    for n, (g, e) in rows.items()}}, f, indent=1)


if __name__ == "__main__":
    main()
