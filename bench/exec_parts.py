#!/usr/bin/env python3
"""Above the fused GEMM's token counts the execution mode decodes a layer's blob to BF16 and
runs F.linear on it: the decode writes the whole BF16 matrix to device memory and F.linear reads
it back. This measures the alternative of decoding the matrix in parts of at most --part-mb MB
of BF16 (whole strips of 16 rows) into a buffer small enough to stay in the GPU's L2 cache (the decode's plain stores,
DF11_EXEC_CACHE_OUTPUT), each part multiplied by F.linear as soon as it is decoded, so that the
BF16 bytes never go to device memory; serially on one stream, and with the next part's decode
on a second stream beside the current part's GEMM (two buffers); with the parts' stores
evict-first (as the whole decode's), and the parts' decodes alone.

The Llama-3.1-8B block's layers as a serving engine runs them (q/k/v one layer, gate/up one
layer, o, down) over --layers distinct blocks (the weights stream from device memory), Gaussian
weights (std 0.02), each cell a CUDA graph of the layers' calls, CUDA-event median of --runs
replays after warm-up (exec_peers.timed); ratio = time / F.linear's on the BF16 weights. Every
variant's output is first compared with the whole decode's (the layer's decoded weight, then
F.linear), and the count of differing outputs printed: F.linear on a part of the rows may
reduce differently from F.linear on the whole matrix (bench/head_parts_equality.py).

    python3 bench/exec_parts.py [--layers 8] [--tokens 65,128,256] [--part-mb 8,16,24]
                                [--runs 30] [--json OUT]
"""
import argparse
import json
import sys

import torch

from exec_peers import timed

import df11
from df11 import _capi, exec_mode
from df11._cuda import raw_stream

HIDDEN, KV, FFN = 4096, 1024, 14336
KINDS = {"qkv": [(HIDDEN, HIDDEN), (KV, HIDDEN), (KV, HIDDEN)], "o": [(HIDDEN, HIDDEN)],
         "gate_up": [(FFN, HIDDEN), (FFN, HIDDEN)], "down": [(HIDDEN, FFN)]}


class Parts:
    """One layer's weight packed as blobs of at most `mb` MB of BF16 each (whole strips),
    decoded part by part."""

    def __init__(self, w: torch.Tensor, mb: int, what: str):
        self.cols = w.shape[1]
        rows = max(16, (mb << 20) // (2 * self.cols) // 16 * 16)
        self.parts = []
        for r0 in range(0, w.shape[0], rows):
            blob, mats = exec_mode.pack_bf16([w[r0:r0 + rows]], f"{what} rows {r0}")
            self.parts.append(exec_mode.ExecWeight(blob, mats, f"{what} rows {r0}"))
        self.rows = max(p.rows for p in self.parts)

    def decode_into(self, i: int, buf: torch.Tensor, flags: int) -> torch.Tensor:
        ew = self.parts[i]
        out = buf[:ew.rows * self.cols].view(ew.rows, self.cols)
        ew._outs[0] = out.data_ptr()
        rc = ew._to_bf16(None, ew.mats, ew._outs, 1, ew.status.data_ptr(),
                         _capi.EXEC_STATUS_BYTES, _capi.EXEC_KEEP_STATUS | flags,
                         raw_stream(ew.device_index))
        if rc != 0:
            raise RuntimeError(f"decode: {_capi.status_name(rc)}")
        return out


class Runner:
    """The part-wise decode + F.linear of a layer, serially or on two streams."""

    def __init__(self, mb: int):
        self.bufs = [torch.empty((mb << 20) // 2, dtype=torch.bfloat16, device="cuda")
                     for _ in range(2)]
        self.side = torch.cuda.Stream()
        self.decoded = [torch.cuda.Event() for _ in range(2)]
        self.used = [torch.cuda.Event() for _ in range(2)]

    def serial(self, parts: Parts, x: torch.Tensor, flags: int) -> torch.Tensor:
        ys = [torch.nn.functional.linear(x, parts.decode_into(i, self.bufs[0], flags))
              for i in range(len(parts.parts))]
        return torch.cat(ys, dim=-1)

    def overlapped(self, parts: Parts, x: torch.Tensor, flags: int) -> torch.Tensor:
        main = torch.cuda.current_stream()
        n = len(parts.parts)
        self.side.wait_stream(main)
        views = [None] * n
        with torch.cuda.stream(self.side):
            views[0] = parts.decode_into(0, self.bufs[0], flags)
            self.decoded[0].record(self.side)
        ys = []
        for i in range(n):
            if i + 1 < n:
                with torch.cuda.stream(self.side):
                    if i >= 1:  # part i - 1's GEMM read the buffer part i + 1 overwrites
                        self.side.wait_event(self.used[(i + 1) % 2])
                    views[i + 1] = parts.decode_into(i + 1, self.bufs[(i + 1) % 2], flags)
                    self.decoded[(i + 1) % 2].record(self.side)
            main.wait_event(self.decoded[i % 2])
            ys.append(torch.nn.functional.linear(x, views[i]))
            self.used[i % 2].record(main)
        main.wait_stream(self.side)
        return torch.cat(ys, dim=-1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--tokens", default="65,128,256")
    ap.add_argument("--part-mb", default="8,16,24")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--json")
    a = ap.parse_args()
    torch.set_grad_enabled(False)
    gpu = torch.cuda.get_device_name(0)
    gen = torch.Generator(device="cuda").manual_seed(0)
    part_rows = [int(r) for r in a.part_mb.split(",")]
    bf16, whole, parts = [], [], {r: [] for r in part_rows}
    for b in range(a.layers):
        ws = {k: torch.cat([(torch.randn(*s, device="cuda", generator=gen) * 0.02)
                            .to(torch.bfloat16) for s in shapes]) for k, shapes in KINDS.items()}
        bf16.append(ws)
        row = {}
        for k, w in ws.items():
            blob, mats = exec_mode.pack_bf16([w], f"block {b} {k}")
            row[k] = exec_mode.ExecWeight(blob, mats, f"block {b} {k}")
        whole.append(row)
        for r in part_rows:
            parts[r].append({k: Parts(w, r, f"block {b} {k}") for k, w in ws.items()})
    runners = {r: Runner(r) for r in part_rows}
    cache = _capi.EXEC_CACHE_OUTPUT
    variants = {"whole": lambda b, k, x: torch.nn.functional.linear(x, whole[b][k].decode())}
    for r in part_rows:
        run = runners[r]
        variants[f"parts{r}MB"] = (lambda b, k, x, r=r, run=run:
                                 run.serial(parts[r][b][k], x, cache))
        variants[f"parts{r}MB-evict"] = (lambda b, k, x, r=r, run=run:
                                       run.serial(parts[r][b][k], x, 0))
        variants[f"parts{r}MB-2s"] = (lambda b, k, x, r=r, run=run:
                                    run.overlapped(parts[r][b][k], x, cache))
        variants[f"decodes{r}MB"] = (lambda b, k, x, r=r, run=run: [
            parts[r][b][k].decode_into(i, run.bufs[0], cache)
            for i in range(len(parts[r][b][k].parts))])
    timing_only = {n for n in variants if n.startswith("decodes")}
    print(f"{gpu}: {a.layers} blocks of Llama-3.1-8B shapes; ms per step over all blocks")
    print(f"{'tokens':>6} {'layer':>8} {'F.linear':>9} "
          + " ".join(f"{n:>22}" for n in variants))
    rows, diffs = [], []
    for t in [int(x) for x in a.tokens.split(",")]:
        g = torch.Generator(device="cuda").manual_seed(t)
        xs = {k: torch.randn(t, FFN if k == "down" else HIDDEN, device="cuda",
                             generator=g).to(torch.bfloat16) for k in KINDS}
        for name, fn in variants.items():
            if name in timing_only:
                continue
            for k in KINDS:
                ref = torch.nn.functional.linear(xs[k], bf16[0][k])
                got = fn(0, k, xs[k])
                torch.cuda.synchronize()
                n = int((got.view(torch.int16) != ref.view(torch.int16)).sum())
                diffs.append({"tokens": t, "variant": name, "layer": k, "differing": n,
                              "outputs": ref.numel()})
                if n:
                    print(f"  {name} {k} at {t} tokens: {n} of {ref.numel()} outputs differ "
                          "from F.linear on the whole matrix")
        for kind in list(KINDS) + ["step"]:
            kinds = list(KINDS) if kind == "step" else [kind]

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
                ms = timed(run, a.runs, a.warmup)
                row[f"{name}_ms"] = ms
                row[f"{name}_ratio"] = ms / row["cublas_ms"]
            rows.append(row)
            print(f"{t:>6} {kind:>8} {row['cublas_ms']:>9.4f} " + " ".join(
                f"{row[f'{n}_ms']:>13.4f} ({row[f'{n}_ratio']:.3f})" for n in variants))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"gpu": gpu, "torch": torch.__version__, "layers": a.layers,
                       "df11": df11.version(),
                       "command": " ".join(["python3", "bench/exec_parts.py"] + sys.argv[1:]),
                       "differing": diffs, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
