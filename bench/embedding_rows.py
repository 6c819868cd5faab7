#!/usr/bin/env python3
"""What a coded input embedding's lookup costs a step: decoders.RowsDecoder.lookup (the rows
decode behind torch.ops.df11.embed_rows, which vLLM's DF11EmbeddingMethod and the transformers
integration run) against F.embedding on the BF16 weight, for a Llama-3.1-8B-shaped embedding
(128,256 x 4,096, Gaussian, std 0.02) coded on the GPU (coded.GpuGroup.encoded). Each lookup's
rows are first checked bit for bit against the BF16 weight's. Per count of ids: CUDA-event
median of 200 calls after 20, eagerly and as a CUDA graph's replay (as vLLM runs a step).

    python3 bench/embedding_rows.py        (needs a CUDA GPU and libdf11-tools' GPU encoder)
"""
import statistics

import torch

from df11 import coded
from df11.decoders import RowsDecoder
from df11.device_lock import DeviceLock


def timed(fn, runs: int = 200, warmup: int = 20) -> float:
    """Median microseconds of fn() between two CUDA events."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1000)
    return statistics.median(times)


def graphed(fn):
    """fn captured in a CUDA graph (after three warm-up calls on a side stream): its replay."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph.replay


def main() -> None:
    dev = torch.device("cuda", 0)
    torch.manual_seed(0)
    w = (torch.randn(128256, 4096, device=dev) * 0.02).to(torch.bfloat16)
    group = coded.GpuGroup.encoded(w, "embed_tokens.weight", "bench")
    rows = RowsDecoder(group.plan, "embed_tokens.weight", 4096, dev, DeviceLock(dev))
    rows.group = group
    print(f"{torch.cuda.get_device_name(dev)}: embedding 128256 x 4096, "
          f"{w.numel() * 2 / 2**30:.3f} GiB of BF16 coded into {group.nbytes / 2**30:.3f} GiB")
    for n in (1, 8, 64, 256):
        ids = torch.randint(0, w.shape[0], (n,), device=dev)
        got = rows.lookup(ids)
        torch.cuda.synchronize()
        rows.check()
        if not torch.equal(got.view(torch.int16), w[ids].view(torch.int16)):
            raise SystemExit(f"ids {n}: the decoded rows differ from the BF16 weight's")
        lookup = lambda: rows.lookup(ids)  # noqa: E731
        embed = lambda: torch.nn.functional.embedding(ids, w)  # noqa: E731
        print(f"ids {n}: eager rows {timed(lookup):.1f} us, F.embedding {timed(embed):.1f} us; "
              f"graph rows {timed(graphed(lookup)):.1f} us, "
              f"F.embedding {timed(graphed(embed)):.1f} us", flush=True)


if __name__ == "__main__":
    main()
