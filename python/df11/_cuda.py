"""Where df11's launches go: torch's current stream and device, read as cheaply as torch
allows (these run once per block or per Linear, on the CPU's critical path at batch 1)."""
from __future__ import annotations

import contextlib

import torch


def _raw_stream_fn():
    """device index -> torch's current cudaStream_t as an int (torch.cuda.current_stream()
    builds a Stream object per call)."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw
    return lambda index: torch.cuda.current_stream(index).cuda_stream


raw_stream = _raw_stream_fn()
# The current device's index, without torch.cuda.current_device()'s lazy-init check (df11's
# GPU paths run only after CUDA is initialised).
current_device = getattr(torch._C, "_cuda_getDevice", None) or torch.cuda.current_device


def on_device(index: int):
    """A context that makes GPU `index` current for df11's own launches, which go to the
    current device (the C API refuses a plan made for another): nothing when it already is
    (one ~1 us query); torch.cuda.device(index) when not, as under device_map="auto" with the
    module on another GPU than the current one."""
    if current_device() == index:
        return contextlib.nullcontext()
    return torch.cuda.device(index)
