"""The decode as a torch custom op (torch.library), so that torch can trace and capture it.

`torch.ops.df11.decode_group(out, workspace, key)` decodes the coded group that `key` names
(a slot of `_DECODERS`, filled at load time) into `out`:
  - CUDA: df11_cuda_decode on torch's current stream, into `out` (the device's reused decode
    buffer) with `workspace` (the group's slice of a workspace allocated through torch's
    allocator at load), then df11_cuda_status_copy of the group's status into pinned host
    memory on the same stream: two launches, no allocation, no host synchronisation. Inside a
    CUDA graph capture both are recorded and the Python here never runs again on replay.
  - CPU: df11_decode_group (df11's multi-threaded CPU decoder, with its checksums).
The fake implementation does nothing (the op only mutates its arguments), which is what
torch.compile needs to trace it.

`torch.ops.df11.embed_rows(ids, key)` is an input embedding's lookup served from its coded
group (engine._RowsDecoder): a new (*ids.shape, hidden) BF16 tensor from torch's allocator,
filled by df11_cuda_decode_rows_and_copy_status on torch's current stream (only the rows the
ids name are decoded; no host synchronisation). Its fake returns an empty tensor of that shape.
"""
from __future__ import annotations

from typing import Dict

import torch

# key -> an object with decode(out, workspace) (engine._CudaDecoder / engine._CpuDecoder).
_DECODERS: Dict[int, object] = {}
_next_key = [0]


def register(decoder) -> int:
    key = _next_key[0]
    _next_key[0] += 1
    _DECODERS[key] = decoder
    return key


def unregister(key: int) -> None:
    _DECODERS.pop(key, None)


@torch.library.custom_op("df11::decode_group", mutates_args=("out", "workspace"))
def decode_group(out: torch.Tensor, workspace: torch.Tensor, key: int) -> None:
    _DECODERS[key].decode(out, workspace)


@decode_group.register_fake
def _(out, workspace, key):
    return None


@torch.library.custom_op("df11::embed_rows", mutates_args=())
def embed_rows(ids: torch.Tensor, key: int) -> torch.Tensor:
    return _DECODERS[key].lookup(ids)


@embed_rows.register_fake
def _(ids, key):
    return ids.new_empty((*ids.shape, _DECODERS[key].row_elements), dtype=torch.bfloat16)
