"""Coded weights on a GPU and a functional decode op: the core an engine adapter builds on.

  - `decoded_tensors(folder)` yields every tensor of a DF11 folder by its original name, decoded
    on the CPU (df11's multi-threaded decoder: every stream checked, and in df11 folders every
    member's checksum). An engine's own loader takes them as it takes a BF16 checkpoint's, so
    that its name mapping, fusing and slicing stay its own.
  - `GpuGroup` is one coded group whose parts were uploaded once to a GPU, with a plan that
    decodes rows of it into memory the caller gives (df11_cuda_decode_rows: the plan has no
    fixed output, so nothing BF16 stays resident).
  - `RowsWeight` is one weight matrix of an engine's layer made of members of one group (a
    fused q/k/v weight is three members, in the engine's order): `decode()` returns it as a
    fresh BF16 tensor.
  - `torch.ops.df11.decode_weight(like, key)` is that decode as a torch custom op: functional
    (a new tensor from torch's allocator, no input mutated), launched on torch's current stream,
    no host synchronisation. Inductor sees an ordinary producer, so torch.compile and CUDA
    graphs take it as they take a matmul: the capture records the launch, a replay repeats it.

Why rows: a group usually codes a whole transformer block while an engine's layer needs a few
of its members. Seen as a matrix of rows of `row_elements` weights (a divisor of every member's
offset and size), a member is a range of rows, and decoding exactly those rows into the layer's
output is one launch with no copy. Each row's thread block decodes the one or few ~12k-weight
stream blocks holding it (decoder/cuda/NOTES.md, "Rows decode"), so rows of 16k-64k weights keep
the redundant work small.
"""
from __future__ import annotations

import ctypes
import hashlib
import math
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import torch

from . import _capi
from ._capi import Df11Error
from ._cuda import raw_stream
from ._tensors import TORCH_DTYPES


ALIGN_BYTES = 256  # part offsets in a group's device buffer (the decoder reads them faster)
MAX_ROW_ELEMENTS = 1 << 16  # rows of at most 64k weights: ~1.2 stream blocks decoded per block
MIN_ROW_ELEMENTS = 1 << 9  # below this the rows decode costs several times a full decode


def _round_up(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def decoded_tensors(folder: _capi.Model) -> Iterator[Tuple[str, torch.Tensor]]:
    """(original name, CPU tensor) for every tensor of `folder`, in storage order: members of a
    coded group as BF16 views of the group decoded once (df11_decode_group), raw tensors in
    their own dtype, and a group that codes a copy of another tensor (a tied head stored again
    for the dfloat11 loader) under the copy's name. A corrupt group raises Df11Error naming
    the file and group. Each yielded tensor is a fresh buffer (or a view of one): the caller
    may keep it."""
    current: Optional[int] = None
    decoded: Optional[torch.Tensor] = None
    for t in range(folder.tensor_count()):
        name = folder.tensor_name(t)
        shape = folder.tensor_shape(t)
        g = folder.tensor_group(t)
        if g is None:
            dtype = TORCH_DTYPES.get(folder.tensor_dtype(t))
            if dtype is None:
                raise Df11Error.named("unsupported",
                                      f"tensor '{name}': dtype {folder.tensor_dtype(t)} has "
                                      "no torch dtype here")
            out = torch.empty(shape, dtype=dtype)
            folder.decode_tensor(t, out.data_ptr(), folder.tensor_byte_size(t))
            yield name, out
            continue
        if g != current:
            current, decoded = g, _decode_group(folder, g)
        offset = folder.tensor_group_offset(t)
        yield name, decoded[offset:offset + math.prod(shape)].view(shape)
    for g in range(folder.group_count()):
        alias = folder.group_alias_of(g)
        if alias is not None:
            yield folder.group_alias_name(g), _decode_group(folder, g).view(
                folder.tensor_shape(alias))


def _decode_group(folder: _capi.Model, g: int) -> torch.Tensor:
    n = folder.group_element_count(g)
    out = torch.empty(n, dtype=torch.bfloat16)
    folder.decode_group(g, out.data_ptr(), 2 * n)
    return out


def row_elements(group_elements: int, spans: Sequence[Tuple[int, int]]) -> int:
    """The row width (weights) under which every (offset, numel) span of a group is a whole
    number of rows: the largest power of two that divides the group's element count and every
    offset and size, capped at MAX_ROW_ELEMENTS. 0 if that is below MIN_ROW_ELEMENTS (the
    spans are then not worth decoding as rows)."""
    g = group_elements
    for offset, numel in spans:
        g = math.gcd(g, math.gcd(offset, numel))
    if g == 0:
        return 0
    r = min(g & -g, MAX_ROW_ELEMENTS)
    return r if r >= MIN_ROW_ELEMENTS else 0


def span_rows(spans: Sequence[Tuple[int, int]], r: int) -> List[int]:
    """The row ids of the spans, in order (row k holds weights [k * r, (k + 1) * r))."""
    ids: List[int] = []
    for offset, numel in spans:
        ids.extend(range(offset // r, (offset + numel) // r))
    return ids


def members_rows(folder: _capi.Model, members: Sequence[int], shape: Tuple[int, int]
                 ) -> Tuple[Optional[int], int, List[Tuple[int, int]], str]:
    """(group, row width, spans) under which tensors `members` of `folder`, concatenated in
    that order, decode to a weight of `shape` (an engine's fused layer: q, k, v); group None
    and the reason where they cannot."""
    groups = {folder.tensor_group(t) for t in members}
    if len(groups) != 1 or None in groups:
        return None, 0, [], "its members are not in one coded group"
    g = groups.pop()
    spans = [(folder.tensor_group_offset(t), math.prod(folder.tensor_shape(t)))
             for t in members]
    if sum(n for _, n in spans) != shape[0] * shape[1]:
        return None, 0, [], "its members' sizes differ from the layer's"
    r = row_elements(folder.group_element_count(g), spans)
    if r == 0:
        return None, 0, [], "its members' offsets share no row width worth decoding"
    return g, r, spans, ""


def encode(weights: Dict[str, torch.Tensor], out_dir: str) -> _capi.Model:
    """Writes `weights` (tensors by name, in host memory) as the DF11 folder `out_dir`, one
    coded group per tensor (df11.compress: df11's encoder on all cores), and opens it. For an
    engine whose weights are not the folder's tensors as they are (a tensor-parallel rank's
    slice, a weight its loader transformed): the engine's own tensor, coded. A tensor the
    encoder stores raw has no group in the result (tensor_group() is None)."""
    from .checkpoint import compress
    compress(weights, out_dir, config={"df11": "engine weights"}, group_by="tensor")
    return _capi.Model(out_dir)


def tensor_rows(folder: _capi.Model, t: int) -> Optional[Tuple[int, int, List[Tuple[int, int]]]]:
    """(group, row width, spans) under which tensor `t` alone decodes from its group, or None
    (stored raw, or no row width worth decoding)."""
    g = folder.tensor_group(t)
    if g is None:
        return None
    spans = [(folder.tensor_group_offset(t), math.prod(folder.tensor_shape(t)))]
    r = row_elements(folder.group_element_count(g), spans)
    return (g, r, spans) if r else None


class GpuGroup:
    """One coded group's parts on `device` (one uint8 tensor, uploaded once) and a plan over it
    without an output (df11_cuda_plan_create validates the group on the host), with a
    workspace from torch's allocator. `decode_rows` enqueues on torch's current stream."""

    def __init__(self, folder: _capi.Model, g: int, device: torch.device):
        from .decoders import Uploader  # the pinned double-buffered copy of mapped bytes
        self.what = f"{folder.group_file(g)}: group '{folder.group_name(g)}'"
        self.device = device
        self.device_index = device.index if device.index is not None else 0
        layout, size = {}, 0
        for part in _capi.DEVICE_PARTS:
            addr, nbytes = folder.group_part(g, part)
            layout[part] = (size, addr, nbytes)
            size = _round_up(size + nbytes, ALIGN_BYTES)
        with torch.cuda.device(device):
            self.coded = torch.empty(max(size, ALIGN_BYTES), dtype=torch.uint8, device=device)
            uploader = Uploader(device)
            for offset, addr, nbytes in layout.values():
                uploader.copy(self.coded[offset:offset + nbytes], addr, nbytes)
            uploader.finish()
            base = self.coded.data_ptr()
            p = {part: base + offset for part, (offset, _, _) in layout.items()}
            dev = _capi.CudaGroup(p[_capi.PART_LUTS], p[_capi.PART_ENCODED_EXPONENT],
                                  p[_capi.PART_SIGN_MANTISSA], p[_capi.PART_OUTPUT_POSITIONS],
                                  p[_capi.PART_GAPS], None)
            self.plan = _capi.CudaPlan(folder, [g], [dev])
            self.ws_bytes = self.plan.workspace_bytes
            self.workspace = torch.empty(_round_up(self.ws_bytes, ALIGN_BYTES), dtype=torch.uint8,
                                         device=device)
            self.plan.workspace_init(self.workspace.data_ptr(), self.ws_bytes,
                                     torch.cuda.current_stream(device).cuda_stream)
        self._fn = _capi.lib().df11_cuda_decode_rows
        self._ws = ctypes.c_void_p(self.workspace.data_ptr())

    @property
    def nbytes(self) -> int:
        return self.coded.numel()

    def decode_rows(self, ids: torch.Tensor, r: int, out: torch.Tensor) -> None:
        """out (ids.numel() * r BF16 weights on this device) <- rows `ids` (int64, on this
        device). One launch on torch's current stream; no wait."""
        rc = self._fn(self.plan.handle, 0, ctypes.c_void_p(ids.data_ptr()), ids.numel(), r,
                      ctypes.c_void_p(out.data_ptr()), self._ws, self.ws_bytes,
                      ctypes.c_void_p(raw_stream(self.device_index)))
        if rc != 0:
            self.plan._check(rc)

    def check(self) -> None:
        """Waits for torch's current stream and raises Df11Error (naming the file, group and
        block) if the latest decode found a corrupt stream."""
        self.plan.status_sync(self.workspace.data_ptr(),
                              torch.cuda.current_stream(self.device).cuda_stream)


@dataclass
class RowsWeight:
    """A weight matrix (rows, cols) made of rows `ids` of a GpuGroup seen as rows of `r`."""
    group: GpuGroup
    ids: torch.Tensor  # int64 on the group's device
    r: int
    shape: Tuple[int, int]

    def decode(self) -> torch.Tensor:
        out = torch.empty(self.shape, dtype=torch.bfloat16, device=self.group.device)
        self.group.decode_rows(self.ids, self.r, out)
        return out


_WEIGHTS: Dict[int, RowsWeight] = {}


def weight_key(*parts: str) -> int:
    """A key for a RowsWeight that is the same in every process and every load of the same
    layer of the same folder: a compiled graph caches the key as a constant, and a graph
    compiled once (vLLM's compile cache) must find the layer again under it."""
    digest = hashlib.blake2b("\0".join(parts).encode(), digest_size=7).digest()
    return int.from_bytes(digest, "little")


def register_weight(key: int, weight: RowsWeight) -> None:
    _WEIGHTS[key] = weight


def unregister_weight(key: int) -> None:
    _WEIGHTS.pop(key, None)


@torch.library.custom_op("df11::decode_weight", mutates_args=())
def decode_weight(like: torch.Tensor, key: int) -> torch.Tensor:
    """The weight registered under `key`, decoded into a new BF16 tensor on `like`'s device
    (`like` is the layer's input: it gives the op its device for tracing)."""
    return _WEIGHTS[key].decode()


@decode_weight.register_fake
def _(like, key):
    return like.new_empty(_WEIGHTS[key].shape, dtype=torch.bfloat16)
