"""The next weight matrix decoded on a side stream while this one's GEMM runs.

Above the fused GEMM's tokens a layout mode decodes each Linear's blob to BF16 and calls
F.linear on it (exec_mode): a decode bound by memory, then a GEMM bound by memory or, at
hundreds of tokens, by the tensor cores, one after the other on one stream. A model's Linears
run in the same order at every step, so the next one is known. `DecodeAhead` (one per device)
learns that order: the first time a matrix is decoded here, the matrix decoded just before it on
the same stream names it as its successor. A matrix met again teaches nothing, so the order never
wraps from a pass's last Linear to the next pass's first. From then on each call

  1. takes its weight from the stream's slot if its predecessor decoded it there (the same
     matrix, and the same CUDA graph capture or none), else decodes it on the current stream;
  2. decodes its successor on the side stream into a new tensor from torch's allocator, after
     the work enqueued so far on the current stream (that memory's last readers), so that the
     decode runs beside
  3. its own GEMM, which the caller enqueues on the current stream;
  4. makes the current stream wait for the side stream (finish()): no call leaves side work
     unjoined, as a CUDA graph capture requires, and the successor's weight is ready when the
     current stream's next kernel starts.

A weight has the same bits whichever call decodes it, and its GEMM is the same F.linear call,
so outputs do not change. A prediction that misses (another matrix comes next, or the fused GEMM
serves the next call) costs that one decode, and the tensor is dropped at the stream's next
call here. Inside a capture a slot serves only the capture that filled it
(df11_cuda_stream_capture_id): a buffer one graph writes is read by that graph alone. An edge
found to leave its capture (a forward pass captured in pieces, as vLLM's piecewise CUDA graphs
split it at attention: the successor's call met the slot after the capture that filled it)
decodes nothing ahead in later captures.

DF11_DECODE_AHEAD=0 in the environment (or ENABLED = False) makes each call decode its own
weight, as before this existed.
"""
from __future__ import annotations

import ctypes
import os
import threading
import weakref
from dataclasses import dataclass
from typing import Dict, Optional, Tuple

import torch

from . import _capi
from ._capi import Df11Error

ENABLED = os.environ.get("DF11_DECODE_AHEAD", "1") != "0"


def capture_id(stream: int) -> int:
    """The id of the CUDA graph capture the raw cudaStream_t `stream` takes part in, 0 when it is
    not capturing."""
    out = ctypes.c_uint64(0)
    rc = _capi.lib().df11_cuda_stream_capture_id(stream, ctypes.byref(out))
    if rc != 0:
        raise Df11Error(rc, _capi.status_name(rc), "df11: the CUDA stream's capture state")
    return out.value


@dataclass
class _Ahead:
    """A successor's weight decoded on the side stream, until its call takes it."""
    owner: "weakref.ref"  # the matrix it is the weight of
    producer: "weakref.ref"  # the matrix whose call decoded it
    weight: torch.Tensor
    capture: int


class Pending:
    """What start() launched on the side stream, for finish()."""
    __slots__ = ("stream", "ahead", "done")

    def __init__(self, stream: torch.cuda.Stream, ahead: _Ahead, done: torch.cuda.Event):
        self.stream = stream
        self.ahead = ahead
        self.done = done


class DecodeAhead:
    """One device's successor order, side stream and per-stream slots.

    A matrix is any object with `shape` (rows, cols) and `decode_into(out, stream, background)`,
    which enqueues its BF16 decode into the tensor `out` on the raw cudaStream_t `stream` (in
    few thread blocks if `background`), touching no state another thread's call could use."""

    def __init__(self, device: torch.device):
        self.device = device
        self._lock = threading.Lock()
        self._side: Optional[torch.cuda.Stream] = None
        self._next: "weakref.WeakKeyDictionary[object, weakref.ref]" = weakref.WeakKeyDictionary()
        self._seen: "weakref.WeakSet[object]" = weakref.WeakSet()
        self._crossing: "weakref.WeakSet[object]" = weakref.WeakSet()
        self._last: Dict[int, "weakref.ref"] = {}  # stream -> the matrix decoded last on it
        self._slots: Dict[int, _Ahead] = {}  # stream -> its successor's weight

    def successor(self, matrix) -> Optional[object]:
        """The matrix learned to follow `matrix`, if any."""
        ref = self._next.get(matrix)
        return ref() if ref is not None else None

    def start(self, matrix, decode_own) -> Tuple[torch.Tensor, Optional[Pending]]:
        """`matrix`'s weight as a BF16 [rows, cols] tensor (taken from the slot, or
        `decode_own()` on the current stream), and its successor's decode launched on the side
        stream. The caller enqueues its GEMM on the weight, then calls finish(pending)."""
        stream = torch.cuda.current_stream(self.device)
        raw = stream.cuda_stream
        capture = capture_id(raw)
        with self._lock:
            taken = self._take(matrix, raw, capture)
            succ = self._learn(matrix, raw)
            if succ is not None and capture != 0 and matrix in self._crossing:
                succ = None
        weight = taken if taken is not None else decode_own()
        if succ is None or not ENABLED:
            return weight, None
        rows, cols = succ.shape
        out = torch.empty((rows, cols), dtype=torch.bfloat16, device=self.device)
        side = self._side_stream()
        before = torch.cuda.Event()
        before.record(stream)  # after the own decode, before the caller's GEMM
        side.wait_event(before)
        succ.decode_into(out, side.cuda_stream, background=True)
        done = torch.cuda.Event()
        done.record(side)
        ahead = _Ahead(weakref.ref(succ), weakref.ref(matrix), out, capture)
        return weight, Pending(stream, ahead, done)

    def finish(self, pending: Optional[Pending]) -> None:
        """After the caller's GEMM: the current stream waits for the successor's decode, which
        then waits in the stream's slot for its call."""
        if pending is None:
            return
        pending.stream.wait_event(pending.done)
        with self._lock:
            self._slots[pending.stream.cuda_stream] = pending.ahead

    def _take(self, matrix, raw: int, capture: int) -> Optional[torch.Tensor]:
        ahead = self._slots.pop(raw, None)
        if ahead is None or ahead.owner() is not matrix:
            return None
        if ahead.capture != capture:  # filled by another capture, or outside one
            producer = ahead.producer()
            if producer is not None and ahead.capture != 0:  # its capture ended before this
                self._crossing.add(producer)
            return None
        return ahead.weight

    def _learn(self, matrix, raw: int) -> Optional[object]:
        last = self._last.get(raw)
        self._last[raw] = weakref.ref(matrix)
        if matrix not in self._seen:
            self._seen.add(matrix)
            before = last() if last is not None else None
            if before is not None and before is not matrix and before not in self._next:
                self._next[before] = weakref.ref(matrix)
        return self.successor(matrix)

    def _side_stream(self) -> torch.cuda.Stream:
        if self._side is None:
            self._side = torch.cuda.Stream(device=self.device)
        return self._side


_DEVICES: Dict[int, DecodeAhead] = {}
_DEVICES_LOCK = threading.Lock()


def for_device(device: torch.device) -> DecodeAhead:
    """The device's DecodeAhead (one per GPU, shared by every model on it)."""
    index = device.index if device.index is not None else torch.cuda.current_device()
    with _DEVICES_LOCK:
        ahead = _DEVICES.get(index)
        if ahead is None:
            ahead = _DEVICES[index] = DecodeAhead(torch.device("cuda", index))
        return ahead
