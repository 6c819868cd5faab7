"""Are the load's checksum checks bound by their threads or by memory shared with the upload?
Times df11_group_check_stored over every group of a DF11 folder on 8 and 16 threads alone (no
upload), then df11.from_pretrained on a GPU with the checks on 8 or 16 threads (median of 3
loads each, in alternating rounds): the whole load, the wait for the checks after the GPU's own
work, the upload and the model's construction.

    python bench/load_check_threads.py DF11_FOLDER
"""
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import torch

import df11
from df11 import _capi, decoders


def with_threads(n):
    """StoredChecks.__init__ with n threads (the package's takes min(8, cores / 2))."""
    def __init__(self, folder, groups):
        self._path = folder.path
        self._local = threading.local()
        self._handles = []
        self._handles_lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix="df11-check")
        self._futures = [self._pool.submit(self._check, g) for g in groups]
    return __init__


def main(folder):
    model = _capi.Model(folder)
    groups = list(range(model.group_count()))
    for n in (8, 16):
        decoders.StoredChecks.__init__ = with_threads(n)
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            decoders.StoredChecks(model, groups).join()
            times.append(round(time.perf_counter() - t0, 3))
        print(f"checks alone, {n} threads: {times} s", flush=True)
    for n in (8, 16, 8, 16):
        decoders.StoredChecks.__init__ = with_threads(n)
        runs = []
        for _ in range(3):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            loaded = df11.from_pretrained(folder, device="cuda")
            torch.cuda.synchronize()
            phases = loaded.df11.load_seconds
            runs.append((time.perf_counter() - t0,
                         phases.get("load check (waiting for the stored checksums)", 0.0),
                         phases.get("coded groups to the GPU", 0.0), phases.get("model", 0.0)))
            del loaded
            torch.cuda.empty_cache()
        total, wait, upload, built = (statistics.median(r[i] for r in runs) for i in range(4))
        print(f"load, {n} check threads: total {total:.3f} wait {wait:.3f} upload {upload:.3f} "
              f"model {built:.3f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
