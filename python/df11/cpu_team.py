"""The threads df11's CPU decodes run on: torch's own, where torch computes on OpenMP.

torch's CPU kernels run on the OpenMP runtime it loaded (GNU OpenMP in the Linux wheels), whose
threads keep spinning for a while after each parallel region, waiting for the next one. A decode
that starts then on the C library's oneTBB threads (the default of df11_decode_group_range)
competes with those spinning threads for the cores, and on a machine with as many threads as
cores runs at about half its speed. Given that runtime's GOMP_parallel (df11_team_run), the C
library shares a decode's blocks out among torch's own threads instead: the threads that were
spinning decode, and the next matmul finds them where it left them. The bits are the same on
any threads (df11's decoder is exact whatever the split).

team() is what the CPU decoders pass to _capi's decodes: (GOMP_parallel's address, torch's
thread count), or None (oneTBB's threads) where torch's parallel backend is not OpenMP, its
runtime is not found among the process's libraries, or DF11_CPU_DECODE_THREADS=tbb is set in
the environment.
"""
from __future__ import annotations

import ctypes
import os
import threading
from typing import List, Optional, Tuple

import torch

_lock = threading.Lock()
_found = False
_run: Optional[int] = None
_OPENMP_NAMES = ("libgomp", "libiomp5", "libomp")


def openmp_libraries() -> List[str]:
    """Paths of the OpenMP runtimes mapped into this process (Linux: /proc/self/maps), those
    under torch's own directory first."""
    try:
        with open("/proc/self/maps") as f:
            fields = [line.split(None, 5) for line in f]
    except OSError:
        return []
    paths = {f[5].strip() for f in fields if len(f) == 6}
    found = [p for p in paths if os.path.basename(p).startswith(_OPENMP_NAMES) and ".so" in p]
    torch_dir = os.path.dirname(os.path.realpath(torch.__file__)) + os.sep
    return sorted(found, key=lambda p: (not os.path.realpath(p).startswith(torch_dir), p))


def _find_run() -> Optional[int]:
    if os.environ.get("DF11_CPU_DECODE_THREADS", "").lower() == "tbb":
        return None
    if "parallel backend: OpenMP" not in torch.__config__.parallel_info():
        return None
    libs = openmp_libraries()
    if not libs:
        return None
    try:
        # RTLD_NOLOAD: the runtime already loaded (torch's), never a second copy of it.
        lib = ctypes.CDLL(libs[0], mode=os.RTLD_NOLOAD | os.RTLD_LOCAL)
        run = ctypes.cast(lib.GOMP_parallel, ctypes.c_void_p).value
    except (OSError, AttributeError):
        return None
    return run or None


def team() -> Optional[Tuple[int, int]]:
    """(GOMP_parallel of torch's OpenMP runtime, torch.get_num_threads()), or None: oneTBB."""
    global _found, _run
    if not _found:
        with _lock:
            if not _found:
                _run = _find_run()
                _found = True
    if _run is None:
        return None
    return _run, torch.get_num_threads()
