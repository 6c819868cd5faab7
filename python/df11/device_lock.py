"""One device's shared buffers, used by one forward pass at a time.

A DF11 model decodes every coded group into one reused buffer per device (and the execution
mode keeps one BF16 scratch per device), so two forward passes that interleave on one model
(a threaded server calling `model(ids)` from several threads) would overwrite each other's
weights between a decode and the matmuls that read it. `DeviceLock` serialises the span from
a unit's decode to the end of its forward across threads:

  - a re-entrant lock, held by one thread at a time;
  - on a GPU, stream order: the work a holder enqueued reads the buffer after the kernels run,
    not when the Python returns. The next holder's stream therefore waits for the previous
    holder's stream when the two differ (one event, recorded when the lock changes hands);
    on one stream the GPU already runs the work in the order the holders enqueued it.

Nothing is locked while torch.compile traces (the lock would break the graph) or while a CUDA
graph is captured (a replay runs no Python; concurrent replays of one graph are not safe in
torch either).
"""
from __future__ import annotations

import threading
from typing import Optional

import torch

from ._cuda import raw_stream


_capturing = getattr(torch._C, "_cuda_isCurrentStreamCapturing", None)


class DeviceLock:
    """Serialises the use of one device's shared buffers across threads and streams."""

    def __init__(self, device: torch.device):
        self._lock = threading.RLock()
        self._cuda = device.type == "cuda"
        self._index = device.index if device.index is not None else 0
        self._device = device
        self._stream: Optional[int] = None  # the latest holder's raw cudaStream_t
        self._held = threading.local()

    def acquire(self) -> bool:
        """Takes the lock for the calling thread (blocking). Returns False, taking nothing,
        while tracing or capturing; release() must then not be called."""
        if torch.compiler.is_compiling():
            return False
        return self.acquire_running()

    def acquire_running(self) -> bool:
        """acquire() for code that runs and is never traced (a custom op's body, an eager
        forward that has checked): the same, less the tracing test."""
        if self._cuda and _capturing is not None and _capturing():
            return False
        self._lock.acquire()
        if self._cuda:
            stream = raw_stream(self._index)
            previous = self._stream
            if previous is not None and previous != stream:
                # The buffer may still be read by work the previous holder enqueued.
                torch.cuda.current_stream(self._device).wait_stream(
                    torch.cuda.ExternalStream(previous, device=self._device))
            self._stream = stream
        return True

    def release(self) -> None:
        self._lock.release()

    # A per-thread stack of whether each enter() took the lock, so that the matching exit()
    # (a module's forward hook, which also runs after an exception) releases what was taken.
    def enter(self) -> None:
        stack = getattr(self._held, "stack", None)
        if stack is None:
            stack = self._held.stack = []
        stack.append(self.acquire())

    def exit(self) -> None:
        stack = getattr(self._held, "stack", None)
        if stack and stack.pop():
            self.release()

    def __enter__(self) -> "DeviceLock":
        self.enter()
        return self

    def __exit__(self, *exc) -> None:
        self.exit()
