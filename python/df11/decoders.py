"""How a coded group becomes BF16 on its device, one class per way: `CpuDecoder` (the CPU
decoder into the engine's buffer), `CudaDecoder` (a plan's decode on torch's current stream,
its status copied for the deferred check), `RowsDecoder` (only the embedding rows a lookup
names), and at load `upload` (the coded bytes through two pinned buffers), `StoredChecks` (the
stored checksums, beside the upload) and `decode_at_load` (every group decoded once and its
status read)."""
from __future__ import annotations

import time
from typing import Dict, List, Optional

import torch

from . import _capi, _ops, cpu_team
from ._capi import Df11Error
from ._cuda import on_device, raw_stream
from ._tensors import _mapped
from .device_lock import DeviceLock
from .groups import ALIGN_BYTES, Group, round_up
from .modules import ListsCodedWeight

_ROWS_CLASSES: Dict[type, type] = {}


class CpuDecoder:
    """df11_decode_group into a CPU tensor: df11's multi-threaded CPU decoder, every stream
    checked and (df11 folders) every member's checksum compared."""

    def __init__(self, folder: _capi.Model, group: Group, offset: int):
        self.folder = folder
        self.group = group
        self.offset = offset  # elements: where the group starts in the device's buffer
        self.use: Optional["BufferUse"] = None  # the CPU parts layout's record of the buffer

    def decode_into(self, buffer: torch.Tensor) -> None:
        n = self.group.elements
        if self.use is not None:
            self.use.holding = None
        if buffer.numel() < self.offset + n or not buffer.is_contiguous():
            raise ValueError(f"df11: {self.group.what}: a decode buffer of {buffer.numel()} "
                             f"weights cannot hold weights {self.offset}..{self.offset + n}")
        self.folder.decode_group(self.group.index, buffer.data_ptr() + 2 * self.offset, 2 * n,
                                 cpu_team.team())

    def check(self) -> None:
        pass


class CpuRowsDecoder:
    """An input embedding on the CPU served from its coded group: each lookup decodes only the
    rows the ids name (df11_decode_group_range, one call per distinct id: the blocks holding
    that row) into a fresh (*ids.shape, hidden) BF16 tensor. Its stored bytes are checked at
    load (check_all)."""

    def __init__(self, folder: _capi.Model, group: Group, rows: int, row_elements: int):
        self.folder = folder
        self.group = group
        self.group_index = group.index
        self.rows = rows
        self.row_elements = row_elements
        self.device = torch.device("cpu")
        self.workspace = torch.empty(0, dtype=torch.uint8)  # none: memory_bytes counts it

    def lookup(self, ids: torch.Tensor) -> torch.Tensor:
        flat = ids.reshape(-1)
        n = flat.numel()
        width = self.row_elements
        if n and (int(flat.min()) < 0 or int(flat.max()) >= self.rows):
            raise IndexError(f"df11: {self.group.what}: an id outside [0, {self.rows}) "
                             "(index out of range in self)")
        unique, inverse = torch.unique(flat, return_inverse=True)
        rows = torch.empty((unique.numel(), width), dtype=torch.bfloat16)
        decode, g, base = self.folder.decode_group_range, self.group_index, rows.data_ptr()
        team = cpu_team.team()
        for k, i in enumerate(unique.tolist()):
            decode(g, i * width, base + 2 * k * width, 2 * width, team)
        return rows.index_select(0, inverse).view(*ids.shape, width)

    def check_all(self, buffer: torch.Tensor) -> None:
        """The load-time check of a group no unit decodes whole: its stored bytes against
        their checksums, and every block decoded once (in parts of `buffer`'s size)."""
        self.folder.check_stored(self.group_index)
        decode_in_parts(self.folder, self.group, buffer)

    def check(self) -> None:
        pass


def decode_in_parts(folder: _capi.Model, group: Group, buffer: torch.Tensor) -> None:
    """Decodes the whole group once, `buffer.numel()` weights at a time (df11_decode_group_range):
    every block's stream checked without a buffer the group's size."""
    step, team = buffer.numel(), cpu_team.team()
    for first in range(0, group.elements, step):
        n = min(step, group.elements - first)
        folder.decode_group_range(group.index, first, buffer.data_ptr(), 2 * n, team)


def release_pages(folder: _capi.Model, group: Group) -> None:
    """Hands the pages of the group's stored bytes back to the OS (madvise MADV_DONTNEED on the
    whole pages inside each part): they leave the process's resident set and are read again
    from the file, as they were first, if a decode needs them. The shards are mapped read-only
    (never written), so nothing is lost. A no-op where madvise is not found."""
    import ctypes
    import mmap
    try:
        madvise = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    page = mmap.PAGESIZE
    for part in _capi.ALL_PARTS:
        addr, nbytes = folder.group_part(group.index, part)
        start, end = round_up(addr, page), (addr + nbytes) // page * page
        if addr and end > start:
            madvise(start, end - start, 4)  # MADV_DONTNEED


class BufferUse:
    """What a CPU device's decode buffer holds: `holding` is the Segment decoded there last,
    None after any other write (a part, a unit's whole decode, a check)."""

    def __init__(self):
        self.holding: Optional["Segment"] = None


class Segment:
    """Members of one group stored side by side (each 256-byte aligned from the first) that fit
    the decode buffer together, a block's attention matrices say: one df11_decode_group_range
    when the first of their Linears runs, the others then reading the buffer as it is. Any
    other write to the buffer clears `use.holding`, so a Linear never reads another's weights."""

    def __init__(self, folder: _capi.Model, group: Group, first: int, count: int,
                 use: BufferUse):
        self.folder, self.group, self.first, self.count, self.use = folder, group, first, count, use

    def load(self, buffer: torch.Tensor) -> None:
        if self.use.holding is not self:
            self.use.holding = None
            self.folder.decode_group_range(self.group.index, self.first, buffer.data_ptr(),
                                           2 * self.count, cpu_team.team())
            self.use.holding = self


class PartsDecoder:
    """A Linear whose weight is a coded member (df11_decode_group_range), decoded within its
    forward into the start of the device's decode buffer (256-byte aligned, as a fresh
    allocation is; the buffer holds the largest such weight: engine._cpu_parts) and multiplied
    whole, as the BF16 model multiplies it: a block is decoded in parts, one Linear (or a run
    of Linears stored side by side: Segment) at a time, never a matrix in parts of its rows
    (torch's CPU GEMM on some of an output head's rows does not always round as on all of
    them)."""

    def __init__(self, folder: _capi.Model, group: Group, first: int, shape, buffer: torch.Tensor,
                 bias: Optional[torch.Tensor]):
        out_features, in_features = shape
        self.folder = folder
        self.group = group
        self.first = first  # elements: the member's first weight in its group
        self.out_features, self.in_features = out_features, in_features
        self.shape = (out_features, in_features)
        if buffer.numel() < out_features * in_features:
            raise ValueError(f"df11: {group.name}: a {out_features} x {in_features} weight "
                             f"does not fit the decode buffer ({buffer.numel()} weights)")
        self.buffer = buffer  # the device's decode buffer (256-byte aligned)
        self.bias = bias
        self.use: Optional[BufferUse] = None
        self.segment: Optional[Segment] = None  # a weight stored beside others: their run
        self.at = 0  # elements: where the weight starts in its segment

    def decode(self) -> torch.Tensor:
        """The whole weight, decoded into the buffer (a view of it)."""
        if self.use is not None:
            self.use.holding = None
        w = self.buffer[:self.out_features * self.in_features].view(self.shape)
        self.folder.decode_group_range(self.group.index, self.first, w.data_ptr(),
                                       2 * w.numel(), cpu_team.team())
        return w

    def linear(self, x: torch.Tensor) -> torch.Tensor:
        linear, bias = torch.nn.functional.linear, self.bias
        if torch.is_grad_enabled() and x.requires_grad:
            # Training: the weight in a tensor of its own, which autograd keeps for the
            # backward pass (the buffer is overwritten by the next Linear's decode).
            whole = torch.empty(self.shape, dtype=torch.bfloat16)
            self.folder.decode_group_range(self.group.index, self.first, whole.data_ptr(),
                                           2 * whole.numel(), cpu_team.team())
            return linear(x, whole, bias)
        if self.segment is not None:
            self.segment.load(self.buffer)
            return linear(x, self.buffer[self.at:self.at + self.out_features *
                                         self.in_features].view(self.shape), bias)
        return linear(x, self.decode(), bias)

    def check(self) -> None:
        pass


class CudaDecoder:
    """One df11_cuda_plan over one group whose coded parts stay on the GPU (or in pinned host
    memory, copied to a staging buffer by the hook before the decode)."""

    def __init__(self, folder: _capi.Model, group: Group, parts: Dict[int, int], out_ptr: int,
                 device: torch.device):
        dev = _capi.CudaGroup(parts[_capi.PART_LUTS], parts[_capi.PART_ENCODED_EXPONENT],
                              parts[_capi.PART_SIGN_MANTISSA], parts[_capi.PART_OUTPUT_POSITIONS],
                              parts[_capi.PART_GAPS], out_ptr)
        self.group = group
        self.out_ptr = out_ptr
        self.device_index = device.index if device.index is not None else 0
        self.plan = _capi.CudaPlan(folder, [group.index], [dev])  # validates on the host
        self._fn = _capi.lib().df11_cuda_decode_and_copy_status
        self._decode = _capi.lib().df11_cuda_decode
        self._plan = self.plan.handle
        self.ws_ptr = 0
        self.ws_bytes = self.plan.workspace_bytes
        self.h_status = 0
        self.status_bytes = self.plan.status_bytes
        self.parts = parts
        self._args = ()  # set by set_buffers: the call's arguments but the stream
        self.copied = False  # a status copy was ever enqueued (graph replays repeat it)
        self.out: Optional[torch.Tensor] = None  # the planned output (set by upload)
        self.offset = 0  # elements: where the planned output starts in the device's buffer
        self.staging: Optional[torch.Tensor] = None  # cpu_offload: the coded bytes' target
        self.host_packed: Optional[torch.Tensor] = None  # cpu_offload: pinned coded bytes

    def set_buffers(self, ws_ptr: int, h_status: int) -> None:
        import ctypes
        self.ws_ptr, self.h_status = ws_ptr, h_status
        self._args = (self._plan, ctypes.c_void_p(ws_ptr), ctypes.c_size_t(self.ws_bytes),
                      ctypes.c_void_p(h_status), ctypes.c_size_t(self.status_bytes))
        self._decode_args = self._args[:3]

    def decode_now(self) -> None:
        """Enqueues the decode into the buffer the plan was made with, and the copy of its
        status into pinned memory, on torch's current stream: one foreign call
        (df11_cuda_decode_and_copy_status), no wait, no allocation, no Python object made. A
        captured decode replays safely (each launch leaves its tail-pool counter at 0)."""
        rc = self._fn(*self._args, raw_stream(self.device_index))
        if rc != 0:
            self.plan._check(rc)
        self.copied = True

    def decode_only(self) -> None:
        """decode_now without the status copy: an eager forward pass's decode, whose status
        its device copies with the other units' at the pass's end (StatusBatch)."""
        rc = self._decode(*self._decode_args, raw_stream(self.device_index))
        if rc != 0:
            self.plan._check(rc)

    def decode_into(self, buffer: torch.Tensor) -> None:
        """The custom op's body (staging the coded bytes first under cpu_offload). `buffer` is
        the device's decode buffer, whose slice at `offset` the plan writes, except where
        torch.compile's functionalization hands the op a copy to mutate: then the decode still
        goes to the planned output and is copied into the copy."""
        if self.staging is not None:
            self.staging.copy_(self.host_packed, non_blocking=True)
        self.decode_now()
        n = self.group.elements
        if buffer.data_ptr() + 2 * self.offset != self.out_ptr:
            buffer[self.offset:self.offset + n].copy_(self.out)

    def check(self) -> None:
        """Reads the latest copied status (the caller knows the copy has completed)."""
        if self.copied:
            self.plan.group_status(self.h_status, self.status_bytes, 0)


class StatusBatch:
    """The decode statuses of one device's units (their CudaDecoders, whose status slots lie
    one after another, `slot` bytes apart from `h_status`, in one page-locked buffer): copied
    into those slots in one launch (df11_cuda_status_copy_many) at the end of an eager forward
    pass, whose decodes copy none (CudaDecoder.decode_only), and read in one call
    (df11_cuda_group_status_many): two foreign calls a pass instead of two per unit."""

    def __init__(self, decoders: List[CudaDecoder], h_status: int, slot: int):
        import ctypes
        n = len(decoders)
        self.decoders = decoders
        self.device_index = decoders[0].device_index
        plans = (ctypes.c_void_p * n)(*[d.plan.handle for d in decoders])
        workspaces = (ctypes.c_void_p * n)(*[d.ws_ptr for d in decoders])
        lib = _capi.lib()
        self._copy = lib.df11_cuda_status_copy_many
        self._read = lib.df11_cuda_group_status_many
        self._copy_args = (plans, workspaces, n, ctypes.c_void_p(h_status), slot)
        self._read_args = (plans, n, ctypes.c_void_p(h_status), slot)
        self._index = ctypes.c_size_t
        self._ref = ctypes.byref
        self._plans = plans  # kept alive with the arguments that point into them

    def copy(self) -> None:
        """Enqueues the copy on torch's current stream (the device's lock held by the caller)."""
        rc = self._copy(*self._copy_args, raw_stream(self.device_index))
        if rc != 0:
            self.decoders[0].plan._check(rc)

    def check(self) -> None:
        """Reads the latest copied statuses (the caller knows the copy has completed); raises
        Df11Error naming the first corrupt group."""
        failed = self._index(0)  # this call's own: threads may check at once
        rc = self._read(*self._read_args, self._ref(failed))
        if rc != 0:
            self.decoders[failed.value].plan._check(rc)


class RowsDecoder:
    """An input embedding served from its coded group: each lookup decodes only the rows the
    ids name (df11_cuda_decode_rows_and_copy_status) into a fresh (*ids.shape, hidden) BF16
    tensor from torch's allocator, on torch's current stream: one foreign call, no wait. It
    uses the group's plan (that of the tied head's unit, or one of its own without an output)
    with a workspace and a status slot of its own, so that the head's decode of the same group
    does not overwrite the lookup's status before check_status reads it."""

    def __init__(self, plan: _capi.CudaPlan, group_name: str, row_elements: int,
                 device: torch.device, lock: DeviceLock):
        import ctypes
        self.plan = plan
        self.lock = lock  # the workspace and status slot serve one lookup at a time
        self.group_name = group_name
        self.row_elements = row_elements
        self.device = device
        self.device_index = device.index if device.index is not None else 0
        self.workspace = torch.empty(round_up(plan.workspace_bytes, ALIGN_BYTES),
                                     dtype=torch.uint8, device=device)
        self.status = torch.zeros(plan.status_bytes, dtype=torch.uint8, pin_memory=True)
        self._fn = _capi.lib().df11_cuda_decode_rows_and_copy_status
        self._args = (ctypes.c_void_p(self.workspace.data_ptr()),
                      ctypes.c_size_t(plan.workspace_bytes),
                      ctypes.c_void_p(self.status.data_ptr()), ctypes.c_size_t(plan.status_bytes))
        self._void_p = ctypes.c_void_p
        self.copied = False
        with torch.cuda.device(device):
            plan.workspace_init(self.workspace.data_ptr(), plan.workspace_bytes,
                                torch.cuda.current_stream(device).cuda_stream)

    def lookup(self, ids: torch.Tensor) -> torch.Tensor:
        flat = ids.reshape(-1)
        if flat.dtype != torch.int64 or flat.device != self.device:
            flat = flat.to(device=self.device, dtype=torch.int64)
        flat = flat.contiguous()
        n = flat.numel()
        out = torch.empty((n, self.row_elements), dtype=torch.bfloat16, device=self.device)
        if n:
            with on_device(self.device_index), self.lock:
                rc = self._fn(self.plan.handle, 0, self._void_p(flat.data_ptr()), n,
                              self.row_elements, self._void_p(out.data_ptr()), *self._args,
                              raw_stream(self.device_index))
            if rc != 0:
                self.plan._check(rc)
            self.copied = True
        return out.view(*ids.shape, self.row_elements)

    def check(self) -> None:
        """Reads the latest lookup's copied status. An error (an id outside the vocabulary) is
        raised once: the next forward pass, with good ids, runs."""
        if self.copied:
            try:
                self.plan.group_status(self.status.data_ptr(), self.plan.status_bytes, 0)
            except Df11Error:
                self.copied = False
                raise

    def check_all(self, rows: int, chunk_rows: int = 8192) -> None:
        """Decodes every row once (in chunks, into transient tensors) and reads each chunk's
        status: the load-time check of a group no unit decodes whole."""
        for start in range(0, rows, chunk_rows):
            ids = torch.arange(start, min(rows, start + chunk_rows), device=self.device)
            self.lookup(ids)
            torch.cuda.current_stream(self.device).synchronize()
            self.check()


class RowsLookup(ListsCodedWeight, torch.nn.Embedding):
    """Placed after an embedding's own class in its MRO (see _serve_rows): nn.Embedding's
    forward, which the class's forward reaches through super(), becomes the rows decode; what
    the class adds after the lookup (Gemma 3's embed_scale) runs as written. Its weight, a
    CodedWeight, is listed in state_dict() as a coded Linear's is."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:  # noqa: A002 (nn.Embedding's name)
        key = self.__dict__["_df11_rows_key"]
        if torch.compiler.is_compiling():
            rows, positions = torch.ops.df11.embed_rows(input, key)
            return torch.nn.functional.embedding(positions, rows)
        return _ops._DECODERS[key].lookup(input)


def rows_class(cls: type) -> Optional[type]:
    """The class that serves `cls`'s lookups by rows, or None if `cls`'s forward does not
    reach nn.Embedding.forward through super() (it may read the weight itself)."""
    if cls is torch.nn.Embedding:
        return RowsLookup
    if not issubclass(cls, torch.nn.Embedding):
        return None
    for klass in cls.__mro__:
        if klass is torch.nn.Embedding:
            break
        fwd = klass.__dict__.get("forward")
        if fwd is not None:
            code = fwd.__code__
            if "__class__" not in code.co_freevars or "embedding" in code.co_names:
                return None
    if cls not in _ROWS_CLASSES:
        _ROWS_CLASSES[cls] = type(cls.__name__, (cls, RowsLookup),
                                  {"__module__": cls.__module__, "__qualname__": cls.__qualname__})
    return _ROWS_CLASSES[cls]


def rows_eligible(emb, group: "Group", device: torch.device, cpu_offload: bool, mode: str,
                  resident_groups, tied: bool) -> bool:
    """The embedding can be served by rows decodes: a CUDA device or the CPU, one 2-D member at the
    group's start, a class that reaches nn.Embedding's forward, no max_norm (which rewrites
    the weight). In a layout mode only an untied embedding: a tied head multiplies from the
    embedding's weight, which is then decoded once (the layout of the head and the coded
    embedding beside it would hold more)."""
    if (device.type not in ("cuda", "cpu") or cpu_offload or (mode != "decode" and tied) or
            (mode != "decode" and device.type != "cuda") or group.name in resident_groups):
        return False
    if len(group.members) != 1 or group.members[0].offset != 0 or len(group.members[0].shape) != 2:
        return False
    return rows_class(type(emb)) is not None and getattr(emb, "max_norm", None) is None


def decode_at_load(state, runtimes: list, rows: Optional["RowsDecoder"], rows_count: int,
                   folder: _capi.Model, uploaded: Optional[list] = None,
                   times: Optional[Dict[str, float]] = None) -> None:
    """Decodes every group of the device once and waits for the statuses, so that a corrupt
    stream is refused at load (naming the file, group and block), never met by a forward pass
    first. A group that only serves an embedding's lookups is decoded row by row. Then the
    stored bytes of every uploaded group (`uploaded`, default `runtimes`) are checked against
    the checksums df11's metadata records, hashed on the GPU where they lie (check_stored_on_gpu):
    the decoder checks the streams' structure, the checksums every bit. `times`, if given, gets
    the seconds of the two added under "load check" and "load check (stored checksums on the
    GPU)"."""
    t0 = time.perf_counter()
    with torch.cuda.device(state.device):
        for rt in runtimes:
            if rt.staging is not None:
                rt.staging.copy_(rt.host_packed, non_blocking=True)
            rt.decoder.decode_now()
        torch.cuda.current_stream(state.device).synchronize()
        for rt in runtimes:
            rt.decoder.check()
        if rows is not None:
            rows.check_all(rows_count)
        t1 = time.perf_counter()
        check_stored_on_gpu(folder, runtimes if uploaded is None else uploaded, state.device)
    if times is not None:
        hashed = time.perf_counter() - t1
        for key, seconds in (("load check", t1 - t0),
                             ("load check (stored checksums on the GPU)", hashed)):
            times[key] = times.get(key, 0.0) + seconds


def check_stored_on_gpu(folder: _capi.Model, runtimes: list, device: torch.device) -> None:
    """The stored checksums of the runtimes' groups, hashed on `device` (torch's current
    stream): those whose coded parts stay on the GPU in one launch, each one staged from
    pinned host memory (cpu_offload) in the staging buffer it decodes from. Raises Df11Error
    (corrupt_data) naming the file, the group and the stored tensor."""
    resident = [rt for rt in runtimes if rt.staging is None]
    staged = [rt for rt in runtimes if rt.staging is not None]
    scratch = check_scratch(len(resident), device)
    check_parts_on_gpu(folder, [rt.group.index for rt in resident],
                       [rt.decoder.parts for rt in resident], device, scratch)
    for rt in staged:
        rt.staging.copy_(rt.host_packed, non_blocking=True)
        check_parts_on_gpu(folder, [rt.group.index], [rt.decoder.parts], device, scratch)


def check_scratch(n_groups: int, device: torch.device) -> torch.Tensor:
    """Device memory for check_parts_on_gpu over up to n_groups groups."""
    return torch.empty(max(_capi.check_stored_scratch_bytes(max(n_groups, 1)), 16),
                       dtype=torch.uint8, device=device)


def check_parts_on_gpu(folder: _capi.Model, groups: List[int], parts: List[Dict[int, int]],
                       device: torch.device, scratch: Optional[torch.Tensor] = None) -> None:
    """The stored checksums of `folder`'s groups `groups`, whose device parts lie at `parts[i]`
    (part -> device address) on `device`, hashed there in one launch on torch's current stream
    (df11_cuda_check_stored; synchronises it). Raises Df11Error (corrupt_data) naming the file,
    the group and the stored tensor. Nothing to check in a folder the dfloat11 tools
    published."""
    if not groups:
        return
    if scratch is None:
        scratch = check_scratch(len(groups), device)
    dev = [_capi.CudaGroup(p[_capi.PART_LUTS], p[_capi.PART_ENCODED_EXPONENT],
                           p[_capi.PART_SIGN_MANTISSA], p[_capi.PART_OUTPUT_POSITIONS],
                           p[_capi.PART_GAPS], None) for p in parts]
    with torch.cuda.device(device):
        stream = torch.cuda.current_stream(device)
        folder.check_stored_on_gpu(groups, dev, scratch.data_ptr(), scratch.numel(),
                                   stream.cuda_stream)


class StoredChecks:
    """df11_group_check_stored over the groups on a few threads (ctypes releases the GIL), from
    construction to join(), which waits for all of them and raises the first failure in group
    order. Each thread checks through a model handle of its own: a handle's error message is
    valid until its next failure, so a failing check must not share a handle with the load's
    own calls (or another check) that may fail at the same time."""

    def __init__(self, folder: _capi.Model, groups: List[int]):
        import os
        import threading
        from concurrent.futures import ThreadPoolExecutor
        workers = max(1, min(8, (os.cpu_count() or 2) // 2, len(groups)))
        self._path = folder.path
        self._shapes = getattr(folder, "shapes", None)
        self._local = threading.local()
        self._handles: List[_capi.Model] = []
        self._handles_lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="df11-check")
        self._futures = [self._pool.submit(self._check, g) for g in groups]

    def _check(self, group: int) -> None:
        handle = getattr(self._local, "handle", None)
        if handle is None:
            handle = self._local.handle = _capi.Model(self._path, self._shapes)
            with self._handles_lock:
                self._handles.append(handle)
        handle.check_stored(group)

    def join(self) -> None:
        try:
            for future in self._futures:
                future.result()
        finally:
            self.wait()

    def wait(self) -> None:
        """Waits without raising (after another failure), then closes the handles."""
        self._pool.shutdown(wait=True, cancel_futures=True)
        for handle in self._handles:
            handle.close()
        self._handles.clear()


class Uploader:
    """Copies mapped (pageable) bytes to the GPU through two pinned buffers: torch's
    multi-threaded CPU copy fills one while the other's DMA runs, on the current stream. A
    pageable cudaMemcpy stages through the driver's own small buffers on one thread and waits
    for each copy (~6 GB/s from the page cache on the H100 hosts)."""

    CHUNK = 64 << 20

    def __init__(self, device: torch.device):
        self.device = device
        self.buffers: List[torch.Tensor] = []
        self.events: List[Optional[torch.cuda.Event]] = [None, None]
        self.turn = 0

    def copy(self, dst: torch.Tensor, addr: int, nbytes: int) -> None:
        """dst (uint8 on the GPU, nbytes long) <- the nbytes at addr. Returns once the bytes
        are read from addr (the DMA may still run: finish() waits for it)."""
        if nbytes == 0:
            return
        if not self.buffers:
            self.buffers = [torch.empty(self.CHUNK, dtype=torch.uint8, pin_memory=True)
                            for _ in range(2)]
        src = _mapped(addr, nbytes)
        stream = torch.cuda.current_stream(self.device)
        for at in range(0, nbytes, self.CHUNK):
            n = min(self.CHUNK, nbytes - at)
            i = self.turn
            self.turn ^= 1
            if self.events[i] is not None:
                self.events[i].synchronize()  # its previous DMA has read the buffer
            buf = self.buffers[i][:n]
            buf.copy_(src[at:at + n])
            dst[at:at + n].copy_(buf, non_blocking=True)
            event = torch.cuda.Event()
            event.record(stream)
            self.events[i] = event

    def finish(self) -> None:
        """Waits for the last copies (the pinned buffers are then free)."""
        for event in self.events:
            if event is not None:
                event.synchronize()
        self.buffers = []


def upload(state, folder: _capi.Model, runtimes: list, offloaded,
            pin_memory: bool, times: Optional[Dict[str, float]] = None) -> None:
    """Copies the coded parts of each group to the GPU once (or to pinned host memory when
    offloaded; Uploader), then makes one plan per group (the host validation of every group),
    and sizes the workspaces and status records, all through torch's allocator. `times`, if
    given, gets the seconds of the copies and of the rest."""
    t0 = time.perf_counter()
    dev = state.device
    layouts = []  # per group: ({part: (offset, address, bytes)}, packed size)
    for rt in runtimes:
        offset, layout = 0, {}
        for part in _capi.DEVICE_PARTS:
            addr, nbytes = folder.group_part(rt.group.index, part)
            layout[part] = (offset, addr, nbytes)
            offset = round_up(offset + nbytes, ALIGN_BYTES)
        layouts.append((layout, max(offset, ALIGN_BYTES)))
    resident = sum(size for (_, size), off in zip(layouts, offloaded) if not off)
    staging = max([size for (_, size), off in zip(layouts, offloaded) if off], default=0)
    with torch.cuda.device(dev):
        state.coded = torch.empty(resident, dtype=torch.uint8, device=dev)
        if staging:
            state.staging = torch.empty(staging, dtype=torch.uint8, device=dev)
        base = 0
        targets = []
        uploader = Uploader(dev)
        for rt, (layout, size), off in zip(runtimes, layouts, offloaded):
            if off:
                packed = torch.empty(size, dtype=torch.uint8, pin_memory=pin_memory)
                for o, addr, nbytes in layout.values():
                    packed[o:o + nbytes].copy_(_mapped(addr, nbytes))
                rt.host_packed = packed
                rt.staging = target = state.staging[:size]
            else:
                target = state.coded[base:base + size]
                base += size
                for o, addr, nbytes in layout.values():
                    uploader.copy(target[o:o + nbytes], addr, nbytes)
            targets.append(target)
        uploader.finish()
        if times is not None:
            times["coded groups to the GPU"] = time.perf_counter() - t0
            t0 = time.perf_counter()
        for rt, (layout, _), target in zip(runtimes, layouts, targets):
            parts = {part: target.data_ptr() + o for part, (o, _, _) in layout.items()}
            rt.decoder = CudaDecoder(folder, rt.group, parts,
                                      rt.out.data_ptr() if rt.out is not None else 0, dev)
        ws_slot = round_up(max(rt.decoder.ws_bytes for rt in runtimes), ALIGN_BYTES)
        st_slot = round_up(max(rt.decoder.status_bytes for rt in runtimes), 64)
        state.workspace = torch.empty(ws_slot * len(runtimes), dtype=torch.uint8, device=dev)
        state.status = torch.zeros(st_slot * len(runtimes), dtype=torch.uint8, pin_memory=True)
        state.status_slot = st_slot
        stream = torch.cuda.current_stream(dev).cuda_stream
        for i, rt in enumerate(runtimes):
            d = rt.decoder
            rt.workspace = state.workspace[i * ws_slot:i * ws_slot + d.ws_bytes]
            d.out, d.offset = rt.out, rt.offset
            d.staging, d.host_packed = rt.staging, rt.host_packed
            d.set_buffers(rt.workspace.data_ptr(), state.status.data_ptr() + i * st_slot)
            d.plan.workspace_init(d.ws_ptr, d.ws_bytes, stream)
    if times is not None:
        times["plans, workspaces"] = time.perf_counter() - t0
