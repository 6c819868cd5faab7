"""Coded weights on a GPU and a functional decode op: the core an engine adapter builds on.

  - `decoded_tensors(folder)` yields every tensor of a DF11 folder by its original name, decoded
    on the CPU (df11's multi-threaded decoder: every stream checked, and in df11 folders every
    member's checksum), or with `gpu=` on a GPU (every group uploaded once, decoded whole and
    its streams checked; the stored checksums are the caller's to check, StoredChecks). An
    engine's own loader takes them as it takes a BF16 checkpoint's, so that its name mapping,
    fusing and slicing stay its own.
  - `GpuGroup` is one coded group whose parts were uploaded once to a GPU, with a plan that
    decodes spans of it into memory the caller gives (df11_cuda_decode_spans: the plan has no
    fixed output, so nothing BF16 stays resident).
  - `SpansWeight` is one weight matrix of an engine's layer made of members of one group (a
    fused q/k/v weight is three members, in the engine's order, whatever order the group
    stores them in): `decode()` returns it as a fresh BF16 tensor.
  - `ExpertsWeight` is a mixture-of-experts layer's experts' weights, (experts, ...) coded as one
    group with a row per expert: `decode_into(out, mask)` decodes the experts a step routed to
    (df11_cuda_decode_selected_rows, the routing read on the GPU) into the caller's buffer.
  - `torch.ops.df11.decode_weight(like, key)` is that decode as a torch custom op: functional
    (a new tensor from torch's allocator, no input mutated), launched on torch's current stream,
    no host synchronisation. Inductor sees an ordinary producer, so torch.compile and CUDA
    graphs take it as they take a matmul: the capture records the launch, a replay repeats it.

Why spans: a group usually codes a whole transformer block while an engine's layer needs a few
of its members. Each member is a span of the group's weights; one launch decodes the layer's
spans, one after the other, into its output, each stream block covering them once, spread over
the whole GPU (decoder/cuda/NOTES.md, "Spans decode").
"""
from __future__ import annotations

import ctypes
import hashlib
import math
import os
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import torch

from . import _capi
from ._capi import Df11Error
from ._cuda import raw_stream
from ._tensors import TORCH_DTYPES


ALIGN_BYTES = 256  # part offsets in a group's device buffer (the decoder reads them faster)



def _round_up(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def decoded_tensors(folder: _capi.Model, gpu: Optional["GpuUploads"] = None
                    ) -> Iterator[Tuple[str, torch.Tensor]]:
    """(original name, tensor) for every tensor of `folder`, in storage order: members of a
    coded group as BF16 views of the group decoded once, raw tensors in their own dtype (on the
    CPU), and a group that codes a copy of another tensor (a tied head stored again for the
    dfloat11 loader) under the copy's name. Groups decode on the CPU (df11_decode_group: every
    stream checked, df11 folders' member checksums compared), or, with `gpu`, on its device
    from the group uploaded through it (GpuUploads.group), their streams checked before their
    tensors are yielded. A corrupt group raises Df11Error naming the file and group. Each
    yielded tensor is a fresh buffer (or a view of one): the caller may keep it."""
    decode = _decode_group if gpu is None else gpu.decode_group
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
            current, decoded = g, None
            decoded = decode(folder, g)
        offset = folder.tensor_group_offset(t)
        yield name, decoded[offset:offset + math.prod(shape)].view(shape)
    decoded = None
    for g in range(folder.group_count()):
        alias = folder.group_alias_of(g)
        if alias is not None:
            yield folder.group_alias_name(g), decode(folder, g).view(folder.tensor_shape(alias))


def _decode_group(folder: _capi.Model, g: int) -> torch.Tensor:
    n = folder.group_element_count(g)
    out = torch.empty(n, dtype=torch.bfloat16)
    folder.decode_group(g, out.data_ptr(), 2 * n)
    return out


class GpuUploads:
    """The groups of one folder uploaded to `device` for a load (decoded_tensors with `gpu`):
    `keep` True keeps each GpuGroup (`groups`, by group
    index) for the engine's layers to decode from afterwards; False drops it once decoded (a
    tensor-parallel rank, whose layers are slices the groups cannot give)."""

    def __init__(self, device: torch.device, keep: bool):
        self.device = device
        self.keep = keep
        self.groups: Dict[int, "GpuGroup"] = {}

    def group(self, folder: _capi.Model, g: int) -> "GpuGroup":
        found = self.groups.get(g)
        if found is None:
            found = GpuGroup(folder, g, self.device)
            if self.keep:
                self.groups[g] = found
        return found

    def decode_group(self, folder: _capi.Model, g: int) -> torch.Tensor:
        """Group g decoded whole into a new BF16 tensor on the device, its streams checked
        (Df11Error naming the file, group and block)."""
        group = self.group(folder, g)
        n = folder.group_element_count(g)
        with torch.cuda.device(self.device):
            out = torch.empty(n, dtype=torch.bfloat16, device=self.device)
            whole = (ctypes.c_uint64 * 1)(0), (ctypes.c_uint64 * 1)(n)
            group.decode_spans(whole[0], whole[1], 1, out)
            group.check()
        return out

    def check_stored(self, folder: _capi.Model) -> None:
        """The stored checksums of every kept group, hashed on the device where its bytes lie,
        in one launch (decoders.check_parts_on_gpu): Df11Error (corrupt_data) naming the file,
        the group and the stored tensor. The decode checks the streams' structure, this every
        bit."""
        from .decoders import check_parts_on_gpu
        kept = sorted(self.groups)
        check_parts_on_gpu(folder, kept, [self.groups[g].parts for g in kept], self.device)


def layer_spans(folder: _capi.Model, members: Sequence[int], shape: Tuple[int, int]
                ) -> Tuple[Optional[int], List[Tuple[int, int]], str]:
    """(group, (offset, numel) spans) under which tensors `members` of `folder`, concatenated in
    that order, decode to a weight of `shape` (an engine's fused layer: q, k, v); group None
    and the reason where they cannot."""
    groups = {folder.tensor_group(t) for t in members}
    if len(groups) != 1 or None in groups:
        return None, [], "its members are not in one coded group"
    if len(members) > _capi.CUDA_MAX_DECODE_SPANS:
        return None, [], f"it has more than {_capi.CUDA_MAX_DECODE_SPANS} members"
    g = groups.pop()
    spans = [(folder.tensor_group_offset(t), math.prod(folder.tensor_shape(t)))
             for t in members]
    if sum(n for _, n in spans) != shape[0] * shape[1]:
        return None, [], "its members' sizes differ from the layer's"
    return g, spans, ""


SHARED_MEMORY_DIR = "/dev/shm"


def scratch_dir(nbytes: int, candidate: str = SHARED_MEMORY_DIR) -> Optional[str]:
    """Where a temporary folder of about `nbytes` goes: `candidate` (shared memory, so that the
    folder is written to and read from RAM, not a disk) where it is a writable directory with
    twice that free, else None (tempfile's default directory)."""
    try:
        if not (os.path.isdir(candidate) and os.access(candidate, os.W_OK | os.X_OK)):
            return None
        st = os.statvfs(candidate)
    except OSError:
        return None
    return candidate if st.f_bavail * st.f_frsize >= 2 * nbytes else None


def encode(weights: Dict[str, torch.Tensor], out_dir: str,
           shard_bytes: Optional[int] = None, threads: int = 0) -> _capi.Model:
    """Writes `weights` (tensors by name, in host memory or on a GPU, which df11.compress reads
    64 MiB at a time: encode_batches is faster there) as the DF11 folder `out_dir`, one coded
    group per tensor (df11.compress: df11's encoder on all cores), and opens it. For an
    engine whose weights are not the folder's tensors as they are (a tensor-parallel rank's
    slice, a weight its loader transformed): the engine's own tensor, coded. A tensor the
    encoder stores raw has no group in the result (tensor_group() is None). `shard_bytes`
    cuts the folder into shards of about that many bytes, which the encoder writes side by
    side as far as its memory bound allows (default: one shard). `threads`: the encoder's
    worker threads (0: every core the process may use)."""
    from .checkpoint import compress
    compress(weights, out_dir, config={"df11": "engine weights"}, group_by="tensor",
             max_shard_size=shard_bytes, threads=threads)
    return _capi.Model(out_dir)


ENCODE_BATCH_BYTES = 1 << 30  # BF16 bytes a batch of encode_batches codes at once
ENCODE_SHARD_BYTES: Optional[int] = 256 << 20  # a batch's shards, written side by side


def weight_batches(sizes: Dict[str, int], cap: int) -> List[List[str]]:
    """`sizes` (name -> bytes) cut into runs of consecutive names of at most `cap` bytes each
    (a name larger than `cap` alone in its run)."""
    batches: List[List[str]] = []
    total = 0
    for name, nbytes in sizes.items():
        if not batches or (total + nbytes > cap and batches[-1]):
            batches.append([])
            total = 0
        batches[-1].append(name)
        total += nbytes
    return batches


def encode_batches(weights: Dict[str, torch.Tensor], out_dir: str,
                   batch_bytes: int = ENCODE_BATCH_BYTES,
                   shard_bytes: Optional[int] = ENCODE_SHARD_BYTES, threads: int = 0
                   ) -> List[Tuple[_capi.Model, List[str]]]:
    """`weights` written as DF11 folders (encode) in batches of about `batch_bytes` of BF16 each,
    `out_dir`/0, 1, ...: [(the opened folder, its tensors' names)]. Weights on a GPU reach the
    encoder through two pinned host buffers of a batch each: the copy of batch k + 1 runs on
    a stream of its own while the CPU codes batch k, so no host copy of all of them exists at
    once and the copy adds little to the encoder's time; the buffers go back to the system
    after the last batch. Host tensors are coded where they are. The caller closes the
    folders."""
    sizes = {name: _round_up(t.numel() * t.element_size(), 16) for name, t in weights.items()}
    batches = weight_batches(sizes, batch_bytes)
    staged = [b for b in batches if any(weights[n].device.type == "cuda" for n in b)]
    cap = max((sum(sizes[n] for n in b) for b in staged), default=0)
    bufs = [torch.empty(cap, dtype=torch.uint8, pin_memory=True)
            for _ in range(min(2, len(staged)))]
    copies: Dict[int, Tuple[Dict[str, torch.Tensor], Optional[torch.cuda.Event]]] = {}

    def start(k: int) -> None:
        """Batch k's tensors in host memory: views of a pinned buffer, their copies enqueued
        on the side stream of the weights' device (an event marks the end), or the host
        tensors themselves."""
        names = batches[k]
        if not any(weights[n].device.type == "cuda" for n in names):
            copies[k] = ({n: weights[n] for n in names}, None)
            return
        buf = bufs[staged.index(names) % len(bufs)]
        device = next(weights[n].device for n in names if weights[n].device.type == "cuda")
        stream = torch.cuda.Stream(device)
        stream.wait_stream(torch.cuda.current_stream(device))  # the weights are written
        host, at = {}, 0
        with torch.cuda.stream(stream):
            for n in names:
                t = weights[n]
                view = buf[at:at + t.numel() * t.element_size()].view(t.dtype).view(t.shape)
                view.copy_(t, non_blocking=True)
                host[n] = view
                at += sizes[n]
            done = torch.cuda.Event()
            done.record(stream)
        copies[k] = (host, done)

    out: List[Tuple[_capi.Model, List[str]]] = []
    os.makedirs(out_dir, exist_ok=True)
    try:
        if batches:
            start(0)
        for k, names in enumerate(batches):
            done = copies[k][1]
            if done is not None:
                done.synchronize()
            if k + 1 < len(batches):
                start(k + 1)  # into the other buffer: batch k - 1's, coded already
            out.append((encode(copies.pop(k)[0], os.path.join(out_dir, str(k)), shard_bytes,
                               threads), names))
    except BaseException:
        for folder, _ in out:
            folder.close()
        raise
    finally:
        copies.clear()  # the views into the buffers
        bufs.clear()
        # torch keeps freed pinned blocks cached for reuse: give these (2 x a batch) back.
        if staged and hasattr(torch._C, "_host_emptyCache"):
            torch._C._host_emptyCache()
    return out


def tensor_spans(folder: _capi.Model, t: int) -> Optional[Tuple[int, List[Tuple[int, int]]]]:
    """(group, spans) under which tensor `t` alone decodes from its group, or None (stored
    raw)."""
    g = folder.tensor_group(t)
    if g is None:
        return None
    return g, [(folder.tensor_group_offset(t), math.prod(folder.tensor_shape(t)))]


class GpuGroup:
    """One coded group's parts on `device` (one uint8 tensor, uploaded once) and a plan over it
    without an output (df11_cuda_plan_create validates the group on the host), with a
    workspace from torch's allocator. `decode_spans` enqueues on torch's current stream."""

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
            self.parts = p  # part -> its device address
            dev = _capi.CudaGroup(p[_capi.PART_LUTS], p[_capi.PART_ENCODED_EXPONENT],
                                  p[_capi.PART_SIGN_MANTISSA], p[_capi.PART_OUTPUT_POSITIONS],
                                  p[_capi.PART_GAPS], None)
            self._planned(_capi.CudaPlan(folder, [g], [dev]))
        self.n_elements = folder.group_element_count(g)

    @classmethod
    def encoded(cls, weight: torch.Tensor, name: str, what: str) -> "GpuGroup":
        """`weight` (BF16, on a GPU) coded there as one group (libdf11-tools' GPU encoder: the
        bytes df11's CPU encoder writes), its parts on the same GPU, and a plan over them:
        what an engine keeps of a weight that it holds only on the GPU (a tensor-parallel
        rank's slice). Df11Error where it cannot be coded (an Inf or NaN: `uncodable`).
        `what` and `name` lead the messages of its decodes."""
        from . import _tools
        self = cls.__new__(cls)
        self.what = f"{what}: group '{name}'"
        self.n_elements = weight.numel()
        device = weight.device
        self.device = device
        self.device_index = device.index if device.index is not None else 0
        w = weight.detach().reshape(-1)
        if w.dtype != torch.bfloat16 or device.type != "cuda" or not w.is_contiguous():
            raise ValueError(f"df11: {self.what}: the GPU encoder takes a contiguous BF16 "
                             f"tensor on a GPU, not {w.dtype} on {device}")
        with torch.cuda.device(device):
            stream = torch.cuda.current_stream(device).cuda_stream
            hist = torch.empty(_tools.HISTOGRAM_SCRATCH_BYTES, dtype=torch.uint8, device=device)
            try:
                enc = _tools.CudaEncoding(w.data_ptr(), w.numel(), hist.data_ptr(),
                                          _tools.HISTOGRAM_SCRATCH_BYTES, stream)
            except _capi.Df11Error as e:
                raise _capi.Df11Error(e.code, e.status, f"{self.what}: {e.message}") from None
            with enc:
                s = enc.sizes
                sizes = {_capi.PART_LUTS: s.luts_bytes,
                         _capi.PART_ENCODED_EXPONENT: s.encoded_exponent_capacity,
                         _capi.PART_SIGN_MANTISSA: s.sign_mantissa_bytes,
                         _capi.PART_OUTPUT_POSITIONS: s.output_positions_bytes,
                         _capi.PART_GAPS: s.gaps_bytes}
                offsets, size = {}, 0
                for part, nbytes in sizes.items():
                    offsets[part] = size
                    size = _round_up(size + nbytes, ALIGN_BYTES)
                self.coded = torch.empty(size, dtype=torch.uint8, device=device)
                luts = enc.luts()
                self.coded[:len(luts)].copy_(torch.frombuffer(bytearray(luts), dtype=torch.uint8))
                base = self.coded.data_ptr()
                p = {part: base + offset for part, offset in offsets.items()}
                scratch = torch.empty(max(s.scratch_bytes, 1), dtype=torch.uint8, device=device)
                enc.encode(w.data_ptr(), p[_capi.PART_ENCODED_EXPONENT],
                           p[_capi.PART_SIGN_MANTISSA], p[_capi.PART_OUTPUT_POSITIONS],
                           p[_capi.PART_GAPS], scratch.data_ptr(), stream)
                at = offsets[_capi.PART_OUTPUT_POSITIONS]
                op = self.coded[at:at + s.output_positions_bytes].cpu()  # waits for the encode
                del scratch
                host = _capi.GroupHostParts(
                    name.encode(), ctypes.cast(ctypes.c_char_p(luts), ctypes.c_void_p),
                    len(luts), op.data_ptr(), op.numel(), None, 0, s.encoded_exponent_bytes,
                    s.sign_mantissa_bytes, s.gaps_bytes)
                self.parts = p
                dev = _capi.CudaGroup(p[_capi.PART_LUTS], p[_capi.PART_ENCODED_EXPONENT],
                                      p[_capi.PART_SIGN_MANTISSA],
                                      p[_capi.PART_OUTPUT_POSITIONS], p[_capi.PART_GAPS], None)
                self._planned(_capi.CudaPlan.from_parts([host], [dev], what))
        return self

    def _planned(self, plan: _capi.CudaPlan) -> None:
        """The plan over this group's parts, its workspace (initialised on torch's current
        stream) and the spans decode's entry point."""
        self.plan = plan
        self.ws_bytes = plan.workspace_bytes
        self.workspace = torch.empty(_round_up(self.ws_bytes, ALIGN_BYTES), dtype=torch.uint8,
                                     device=self.device)
        plan.workspace_init(self.workspace.data_ptr(), self.ws_bytes,
                            torch.cuda.current_stream(self.device).cuda_stream)
        self._fn = _capi.lib().df11_cuda_decode_spans
        self._selected = _capi.lib().df11_cuda_decode_selected_rows
        self._ws = ctypes.c_void_p(self.workspace.data_ptr())

    @property
    def nbytes(self) -> int:
        return self.coded.numel()

    def decode_spans(self, offsets, counts, n: int, out: torch.Tensor) -> None:
        """out (the spans' weights, BF16, on this device) <- the group's spans, one after the
        other (offsets, counts: ctypes arrays of n uint64). One launch on torch's current
        stream; no wait."""
        rc = self._fn(self.plan.handle, 0, offsets, counts, n, ctypes.c_void_p(out.data_ptr()),
                      self._ws, self.ws_bytes, ctypes.c_void_p(raw_stream(self.device_index)))
        if rc != 0:
            self.plan._check(rc)

    def decode_selected_rows(self, mask: torch.Tensor, row_elements: int, expected: int,
                             out: torch.Tensor) -> None:
        """out (the group's weights, BF16, on this device) <- the rows of `row_elements` weights
        that `mask` (int32, one per row, on this device) selects; the other rows of `out` are
        left as they are. One launch on torch's current stream, sized for `expected` selected
        rows; no wait."""
        rc = self._selected(self.plan.handle, 0, ctypes.c_void_p(mask.data_ptr()), row_elements,
                            expected, ctypes.c_void_p(out.data_ptr()), self._ws, self.ws_bytes,
                            ctypes.c_void_p(raw_stream(self.device_index)))
        if rc != 0:
            self.plan._check(rc)

    def check(self) -> None:
        """Waits for torch's current stream and raises Df11Error (naming the file, group and
        block) if the latest decode found a corrupt stream."""
        self.plan.status_sync(self.workspace.data_ptr(),
                              torch.cuda.current_stream(self.device).cuda_stream)


class SpansWeight:
    """A weight matrix `shape` made of (offset, numel) spans of a GpuGroup, in order. `chain`:
    the SpansChain it belongs to (position `position` in it), if any."""

    def __init__(self, group: GpuGroup, spans: Sequence[Tuple[int, int]],
                 shape: Tuple[int, int]):
        self.group = group
        self.spans = list(spans)
        self.shape = tuple(shape)
        n = len(self.spans)
        self._offsets = (ctypes.c_uint64 * n)(*[o for o, _ in self.spans])
        self._counts = (ctypes.c_uint64 * n)(*[c for _, c in self.spans])
        self.chain: Optional["SpansChain"] = None
        self.position = 0

    def decode(self) -> torch.Tensor:
        previous = _LAST_DECODE[0]
        _LAST_DECODE[0] = self
        chain = self.chain
        if chain is not None:
            got = chain.decode(self.position, previous)
            if got is not None:
                return got
        out = torch.empty(self.shape, dtype=torch.bfloat16, device=self.group.device)
        self.group.decode_spans(self._offsets, self._counts, len(self.spans), out)
        return out


class ExpertsWeight:
    """The experts' weights of a mixture-of-experts layer, a BF16 tensor of `shape` (experts,
    ...) coded as the GpuGroup `group` (a row per expert, in order). An engine keeps one BF16
    buffer of that shape per device and layer kind (every layer's experts decode into it just
    before that layer's experts run) and calls `decode_into(buffer, mask)`: with `mask` (int32,
    one per expert, on the device, non-zero for the experts a step routed to) one launch
    decodes those experts alone (df11_cuda_decode_selected_rows: the routing is read on the
    GPU, so a CUDA graph's replay decodes the experts of its own step) and leaves the other
    rows of the buffer as they are, which the experts' kernels then do not read; without a mask
    every expert. `expected`: the experts one token selects (its top k), the fewest rows a
    launch is sized for (launch_rows)."""

    def __init__(self, group: GpuGroup, shape: Sequence[int], expected: int):
        self.group = group
        self.shape = tuple(shape)
        self.experts = self.shape[0]
        self.row_elements = math.prod(self.shape[1:])
        if not 0 < self.experts <= _capi.CUDA_MAX_SELECTED_ROWS:
            raise ValueError(f"df11: {getattr(group, 'what', 'experts')}: {self.experts} "
                             f"experts, at most {_capi.CUDA_MAX_SELECTED_ROWS}")
        self.expected = max(1, min(int(expected), self.experts))
        numel = self.experts * self.row_elements
        self._offsets = (ctypes.c_uint64 * 1)(0)
        self._counts = (ctypes.c_uint64 * 1)(numel)

    @staticmethod
    def routed_mask(topk_ids: torch.Tensor, experts: int) -> torch.Tensor:
        """The int32 mask (one per expert, on topk_ids' device) of the experts that `topk_ids`
        (a step's routing: each token's expert ids, in [0, experts)) names. On the device, with
        no host synchronisation: capturable in a CUDA graph."""
        mask = torch.zeros(experts, dtype=torch.int32, device=topk_ids.device)
        mask.index_fill_(0, topk_ids.reshape(-1).to(torch.int64), 1)
        return mask

    def launch_rows(self, picks: Optional[int]) -> int:
        """The selected rows a launch is sized for when the mask comes from `picks` (token,
        expert) choices (a step's tokens times its top k): half the distinct experts that many
        uniform choices name on average, E (1 - (1 - 1/E)^picks), and at least `expected`.
        Sized for fewer rows than it selects, the launch gives each row more thread blocks than
        the GPU holds at once (a few percent slower per row); for more, it leaves the GPU part
        idle (up to twice as slow), and a trained router names fewer distinct experts than a
        uniform one (bench/selected_rows.py, BENCHMARKS.md "vLLM")."""
        if not picks or picks <= self.expected:
            return self.expected
        e = self.experts
        uniform = e * -math.expm1(picks * math.log1p(-1.0 / e)) if e > 1 else 1.0
        return max(self.expected, min(e, round(uniform / 2)))

    def decode_into(self, out: torch.Tensor, mask: Optional[torch.Tensor] = None,
                    picks: Optional[int] = None) -> None:
        """`out` (BF16 of `shape`, contiguous, on the group's device) <- the experts `mask`
        selects, or all of them. `picks`: the (token, expert) choices the mask was made from,
        which size the launch (launch_rows). One launch on torch's current stream; no wait."""
        if mask is None:
            self.group.decode_spans(self._offsets, self._counts, 1, out)
        else:
            self.group.decode_selected_rows(mask, self.row_elements, self.launch_rows(picks),
                                            out)


# The SpansWeight that decoded last, in this process (what SpansChain.decode compares with).
_LAST_DECODE: List[Optional[SpansWeight]] = [None]
_capturing = getattr(torch._C, "_cuda_isCurrentStreamCapturing", None)


def _capture_state(device: torch.device) -> bool:
    """Whether torch's current stream is capturing a CUDA graph (False off CUDA)."""
    return device.type == "cuda" and _capturing is not None and bool(_capturing())


class SpansChain:
    """SpansWeights of one group that a forward pass decodes one right after another, with no
    other coded weight decoded between them: in a decoder layer the attention's output
    projection and the MLP's weights (o, gate/up, down), whose matmuls follow each other after
    the attention. The first one's decode decodes them all in one launch (their spans one after
    the other, each weight starting 256-byte aligned, as a fresh tensor does) into one new
    tensor, returns its own part, and holds the others' parts (views of that tensor) for the
    next calls: one launch where there were several, whose start and end each left the GPU
    partly idle (decoder/cuda/NOTES.md, "Spans decode"). Each weight's bits are what its own
    decode gives, so the matmuls and their outputs are the same.

    A held part is handed out only to the weight at the next position, called right after the
    previous one (`previous`, the SpansWeight decoded last), in the same CUDA-graph capture
    state; otherwise the call decodes alone and the chain stops chaining (a model that calls
    these layers in another order would make the first decode everything for nothing)."""

    def __init__(self, weights: Sequence[SpansWeight]):
        self.weights = list(weights)
        self.group = self.weights[0].group
        self.sizes = [math.prod(w.shape) for w in self.weights]
        spans = [s for w in self.weights for s in w.spans]
        self._offsets = (ctypes.c_uint64 * len(spans))(*[o for o, _ in spans])
        self._counts = (ctypes.c_uint64 * len(spans))(*[c for _, c in spans])
        self._n = len(spans)
        self._held: List[Optional[torch.Tensor]] = [None] * len(self.weights)
        self._captured = False
        self.enabled = True
        for i, w in enumerate(self.weights):
            w.chain, w.position = self, i

    @staticmethod
    def eligible(weights: Sequence[SpansWeight]) -> Optional[str]:
        """Why `weights` cannot form a chain, or None if they can."""
        if len(weights) < 2:
            return "fewer than two weights"
        if any(w.group is not weights[0].group for w in weights):
            return "weights of several groups"
        if any(w.chain is not None for w in weights):
            return "a weight in another chain"
        if sum(len(w.spans) for w in weights) > _capi.CUDA_MAX_DECODE_SPANS:
            return f"more than {_capi.CUDA_MAX_DECODE_SPANS} spans"
        if any(2 * math.prod(w.shape) % ALIGN_BYTES for w in weights[:-1]):
            return f"a weight of a size that is not a multiple of {ALIGN_BYTES} bytes"
        return None

    def decode(self, i: int, previous: Optional[SpansWeight]) -> Optional[torch.Tensor]:
        """Weight i's BF16 tensor, or None where the caller decodes it alone."""
        if not self.enabled:
            return None
        if i == 0:
            out = torch.empty(sum(self.sizes), dtype=torch.bfloat16, device=self.group.device)
            self.group.decode_spans(self._offsets, self._counts, self._n, out)
            parts = [p.view(w.shape) for p, w in zip(out.split(self.sizes), self.weights)]
            self._held = [None] + parts[1:]
            self._captured = _capture_state(out.device)
            return parts[0]
        held, self._held[i] = self._held[i], None
        if (held is None or previous is not self.weights[i - 1] or
                self._captured != _capture_state(held.device)):
            self.enabled = False
            self._held = [None] * len(self.weights)
            return None
        return held


_WEIGHTS: Dict[int, SpansWeight] = {}


def weight_key(*parts: str) -> int:
    """A key for a SpansWeight that is the same in every process and every load of the same
    layer of the same folder: a compiled graph caches the key as a constant, and a graph
    compiled once (vLLM's compile cache) must find the layer again under it."""
    digest = hashlib.blake2b("\0".join(parts).encode(), digest_size=7).digest()
    return int.from_bytes(digest, "little")


def registered_weight(key: int) -> Optional[SpansWeight]:
    return _WEIGHTS.get(key)


def register_weight(key: int, weight: SpansWeight) -> None:
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
    return like.new_empty(_WEIGHTS[int(key)].shape, dtype=torch.bfloat16)
