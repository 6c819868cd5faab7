"""DF11 weights inside a torch model: coded groups kept where they run, decoded just before use.

`attach(model, folder, ...)` takes a model built without weights (or with weights to replace)
and the C API's view of a DF11 folder, and:
  - sets every tensor stored raw (norms, biases, side tensors) as the model's parameter or
    buffer, in the dtype the model gives it;
  - on a GPU, keeps the input embedding's group coded like the others, and serves each
    lookup by decoding only the rows the ids name (torch.ops.df11.embed_rows, through
    df11_cuda_decode_rows); a tied output head decodes the whole group before its forward as
    any other unit. On the CPU (and with cpu_offload or mode="exec") the embedding is decoded
    once into an ordinary parameter, tied to the head if the model ties them;
  - keeps every other coded group's bytes resident on its device (or in pinned host memory
    with cpu_offload), and registers a forward pre-hook on the group's module (a transformer
    block, lm_head, ...) that decodes the group into ONE reused buffer per device. The group's
    weights are views into that buffer, set once at load: the hook only enqueues the decode
    (torch.ops.df11.decode_group) on torch's current stream. The module tree stays as it was
    built, so accelerate's hooks, PEFT and generate() see an ordinary model.

Exactness: a view's address is at least 256-byte aligned, as a fresh allocation's is (the
buffer itself is a fresh allocation), because cuBLAS's kernel choice can depend on operand
alignment; a member that would land misaligned is copied into an aligned tensor of its own
after each decode. The decoded values are the original BF16 bits, so the logits equal the
BF16 model's bit for bit (torch.equal), which the tests check.

The layer "mode" is a strategy object per coded group (`DecodeMode` here); another execution
layout (a fused decode+GEMV per Linear, an execution layout of the C API's experimental
section) plugs in as another class with the same two methods.
"""
from __future__ import annotations

import math
import re
import time
import weakref
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

import torch

from . import _capi, _ops, exec_mode
from ._tensors import _mapped, _set_view
from ._cuda import current_device, on_device, raw_stream
from ._capi import Df11Error
from .device_lock import DeviceLock
from .modules import CodedLinear, codes_as_linear, replace_module

ALIGN_BYTES = 256  # cuBLASLt sees operand alignment up to 256 bytes (PyTorch passes it)

_DTYPES = {
    "BF16": torch.bfloat16, "F16": torch.float16, "F32": torch.float32, "F64": torch.float64,
    "I8": torch.int8, "U8": torch.uint8, "I16": torch.int16, "I32": torch.int32,
    "I64": torch.int64, "BOOL": torch.bool,
}


def _round_up(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def _aligned_empty(elements: int, device: torch.device) -> torch.Tensor:
    """A BF16 tensor whose first element is ALIGN_BYTES-aligned, as a fresh CUDA allocation is.
    The CPU allocator aligns to 64 bytes only: without this, every member view that must be
    aligned would need a copy of its own (a second BF16 copy of each block's weights)."""
    if device.type == "cuda":
        return torch.empty(elements, dtype=torch.bfloat16, device=device)
    raw = torch.empty(elements + ALIGN_BYTES // 2, dtype=torch.bfloat16, device=device)
    shift = (-raw.data_ptr() % ALIGN_BYTES) // 2
    return raw[shift:shift + elements]


@dataclass
class Member:
    tensor: int  # C API tensor index
    name: str  # "model.layers.0.mlp.up_proj.weight"
    shape: Tuple[int, ...]
    offset: int  # first weight within the group's decoded output
    module: str = ""  # "model.layers.0.mlp.up_proj"
    attr: str = ""  # "weight"

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


@dataclass
class Group:
    index: int
    name: str
    file: str
    elements: int
    members: List[Member] = field(default_factory=list)

    @property
    def what(self) -> str:
        return f"{self.file}: group '{self.name}'"


def read_groups(folder: _capi.Model) -> Tuple[List[Group], List[int]]:
    """The folder's coded groups (with their listed members) and its raw tensor indices."""
    groups = []
    for g in range(folder.group_count()):
        group = Group(g, folder.group_name(g), folder.group_file(g), folder.group_element_count(g))
        for t in folder.group_members(g):
            name = folder.tensor_name(t)
            module, _, attr = name.rpartition(".")
            group.members.append(Member(t, name, folder.tensor_shape(t),
                                        folder.tensor_group_offset(t), module, attr))
        groups.append(group)
    raws = [t for t in range(folder.tensor_count()) if folder.tensor_group(t) is None]
    return groups, raws


def _set_tensor(model: torch.nn.Module, name: str, value: torch.Tensor, as_param: bool) -> None:
    module_name, _, attr = name.rpartition(".")
    module = model.get_submodule(module_name) if module_name else model
    if attr in module._parameters or as_param:
        module._parameters.pop(attr, None)
        module._parameters[attr] = torch.nn.Parameter(value, requires_grad=False)
    else:
        module._buffers[attr] = value


class _CpuDecoder:
    """df11_decode_group into a CPU tensor: df11's multi-threaded CPU decoder, every stream
    checked and (df11 folders) every member's checksum compared."""

    def __init__(self, folder: _capi.Model, group: Group, offset: int):
        self.folder = folder
        self.group = group
        self.offset = offset  # elements: where the group starts in the device's buffer

    def decode_into(self, buffer: torch.Tensor) -> None:
        n = self.group.elements
        if buffer.numel() < self.offset + n or not buffer.is_contiguous():
            raise ValueError(f"df11: {self.group.what}: a decode buffer of {buffer.numel()} "
                             f"weights cannot hold weights {self.offset}..{self.offset + n}")
        self.folder.decode_group(self.group.index, buffer.data_ptr() + 2 * self.offset, 2 * n)

    def check(self) -> None:
        pass


class _CudaDecoder:
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
        self._plan = self.plan.handle
        self.ws_ptr = 0
        self.ws_bytes = self.plan.workspace_bytes
        self.h_status = 0
        self.status_bytes = self.plan.status_bytes
        self.parts = parts
        self._args = ()  # set by set_buffers: the call's arguments but the stream
        self.copied = False  # a status copy was ever enqueued (graph replays repeat it)
        self.out: Optional[torch.Tensor] = None  # the planned output (set by _upload)
        self.offset = 0  # elements: where the planned output starts in the device's buffer
        self.staging: Optional[torch.Tensor] = None  # cpu_offload: the coded bytes' target
        self.host_packed: Optional[torch.Tensor] = None  # cpu_offload: pinned coded bytes

    def set_buffers(self, ws_ptr: int, h_status: int) -> None:
        import ctypes
        self.ws_ptr, self.h_status = ws_ptr, h_status
        self._args = (self._plan, ctypes.c_void_p(ws_ptr), ctypes.c_size_t(self.ws_bytes),
                      ctypes.c_void_p(h_status), ctypes.c_size_t(self.status_bytes))

    def decode_now(self) -> None:
        """Enqueues the decode into the buffer the plan was made with, and the copy of its
        status into pinned memory, on torch's current stream: one foreign call
        (df11_cuda_decode_and_copy_status), no wait, no allocation, no Python object made. A
        captured decode replays safely (each launch leaves its tail-pool counter at 0)."""
        rc = self._fn(*self._args, raw_stream(self.device_index))
        if rc != 0:
            self.plan._check(rc)
        self.copied = True

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


class _RowsDecoder:
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
        self.workspace = torch.empty(_round_up(plan.workspace_bytes, ALIGN_BYTES),
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


class _RowsLookup(torch.nn.Embedding):
    """Placed after an embedding's own class in its MRO (see _serve_rows): nn.Embedding's
    forward, which the class's forward reaches through super(), becomes the rows decode; what
    the class adds after the lookup (Gemma 3's embed_scale) runs as written."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:  # noqa: A002 (nn.Embedding's name)
        key = self.__dict__["_df11_rows_key"]
        if torch.compiler.is_compiling():
            return torch.ops.df11.embed_rows(input, key)
        return _ops._DECODERS[key].lookup(input)


_ROWS_CLASSES: Dict[type, type] = {}


def _rows_class(cls: type) -> Optional[type]:
    """The class that serves `cls`'s lookups by rows, or None if `cls`'s forward does not
    reach nn.Embedding.forward through super() (it may read the weight itself)."""
    if cls is torch.nn.Embedding:
        return _RowsLookup
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
        _ROWS_CLASSES[cls] = type(cls.__name__, (cls, _RowsLookup),
                                  {"__module__": cls.__module__, "__qualname__": cls.__qualname__})
    return _ROWS_CLASSES[cls]


def _rows_eligible(emb, group: "Group", device: torch.device, cpu_offload: bool, mode: str,
                   resident_groups) -> bool:
    """The embedding can be served by rows decodes: a CUDA device, one 2-D member at the
    group's start, a class that reaches nn.Embedding's forward, no max_norm (which rewrites
    the weight)."""
    if device.type != "cuda" or cpu_offload or mode != "decode" or group.name in resident_groups:
        return False
    if len(group.members) != 1 or group.members[0].offset != 0 or len(group.members[0].shape) != 2:
        return False
    return _rows_class(type(emb)) is not None and getattr(emb, "max_norm", None) is None


class DecodeMode:
    """Default layer mode: decode the unit's groups into the device's buffer, then the module's
    own forward runs on BF16 views (torch's matmuls: bit-identical to the BF16 model)."""

    name = "decode"

    def __init__(self, unit: "Unit"):
        self.unit = unit
        self._steps: Optional[List[Callable[[], None]]] = None

    def _eager_steps(self) -> List[Callable[[], None]]:
        """What a forward pass runs before the module, as bound callables made once."""
        steps: List[Callable[[], None]] = []
        for rt in self.unit.groups:
            if rt.staging is not None:  # cpu_offload: coded bytes from pinned host memory
                steps.append(_stager(rt.staging, rt.host_packed))
            if isinstance(rt.decoder, _CudaDecoder):
                steps.append(rt.decoder.decode_now)
            else:
                steps.append(_caller(rt.decoder.decode_into, self.unit.buffer))
        steps.extend(self.unit.copies)
        return steps

    def pre_forward(self) -> None:
        # Traced (torch.compile), the decode is the custom op on the device's buffer, and the
        # unit's CodedLinear modules read views of that same tensor (modules.py); run eagerly
        # or captured in a CUDA graph, the op's body is called directly, saving the
        # dispatcher's overhead (tens of microseconds per call, at batch 1 on the CPU's
        # critical path).
        if torch.compiler.is_compiling():
            buffer = self.unit.buffer
            for rt in self.unit.groups:
                torch.ops.df11.decode_into(buffer, rt.key)
            for copy in self.unit.traced_copies:
                copy(buffer)
            return
        steps = self._steps
        if steps is None:
            steps = self._steps = self._eager_steps()
        for step in steps:
            step()

    def reads_done(self) -> None:
        """Traced only (the unit's forward hook): the unit's matmuls have read the buffer
        (torch.ops.df11.reads_done, _ops.py); the next decode into it comes after them."""
        reads = list(self.unit.reads)
        self.unit.reads.clear()
        torch.ops.df11.reads_done(self.unit.buffer, reads)


def _stager(staging, packed):
    def stage():
        staging.copy_(packed, non_blocking=True)
    return stage


def _caller(fn, *args):
    def call():
        fn(*args)
    return call


LAYER_MODES: Dict[str, Callable] = {"decode": DecodeMode}
# Modes from_pretrained takes: "exec" runs coded nn.Linear groups from the execution layout
# (exec_mode.py) and every other coded group in DecodeMode.
MODES = ("decode", "exec")


@dataclass
class GroupRuntime:
    group: Group
    device: torch.device
    key: int = -1
    out: Optional[torch.Tensor] = None  # the group's slice of the device's decode buffer
    offset: int = 0  # elements: where `out` starts in the device's decode buffer
    workspace: Optional[torch.Tensor] = None
    staging: Optional[torch.Tensor] = None  # cpu_offload: device copy target
    host_packed: Optional[torch.Tensor] = None  # cpu_offload: pinned coded bytes
    decoder: object = None


@dataclass
class Unit:
    """The groups decoded together before one module's forward (usually one group: a block;
    several when a model runs in one module what the folder codes in several groups, as the
    per-expert groups of a large MoE layer under transformers 5's fused experts)."""
    module: str
    device: torch.device
    groups: List[GroupRuntime] = field(default_factory=list)
    copies: List[Callable[[], None]] = field(default_factory=list)  # after the decodes
    # What a traced forward runs after the decodes instead, given the device's buffer (the
    # members that are not CodedLinear weights: aligned copies, fused experts).
    traced_copies: List[Callable[[torch.Tensor], None]] = field(default_factory=list)
    buffer: Optional[torch.Tensor] = None  # the device's decode buffer
    # Traced only: the outputs of the unit's CodedLinear modules in the forward being traced.
    reads: List[torch.Tensor] = field(default_factory=list)
    mode: object = None


class DeviceState:
    def __init__(self, device: torch.device):
        self.device = device
        self.buffer: Optional[torch.Tensor] = None  # BF16, the reused decode buffer
        self.assembly: Optional[torch.Tensor] = None  # BF16, fused weights rebuilt per unit
        self.coded: Optional[torch.Tensor] = None  # uint8, every resident coded part
        self.staging: Optional[torch.Tensor] = None
        self.workspace: Optional[torch.Tensor] = None
        self.status: Optional[torch.Tensor] = None  # pinned uint8
        self.event = None
        self.lock = DeviceLock(device)  # one forward pass at a time uses the buffers


class Df11Engine:
    """What attach() leaves on the model (model.df11): the folder handle, per-device buffers,
    the units and their hooks. Keeps the C handles alive as long as the model."""

    def __init__(self, folder: _capi.Model):
        self.folder = folder
        self.devices: Dict[torch.device, DeviceState] = {}
        self.units: List[Unit] = []
        self.hooks = []
        self.views = []  # (module, attr) whose weight is a view of a decode buffer
        self.resident: List[str] = []  # groups decoded once at load
        self.skipped: List[str] = []  # tied heads served by the embedding, alias groups
        self.mode = "decode"
        self.exec_states: Dict[torch.device, exec_mode.ExecState] = {}  # mode="exec"
        self.exec_keys: List[int] = []
        # Input embeddings served by rows decodes: (module, its own class, _RowsDecoder, key).
        self.rows: List[Tuple[torch.nn.Module, type, "_RowsDecoder", int]] = []
        # Host seconds of each phase of the load (from_pretrained adds "open" and "model"),
        # which python -m df11.bench prints: where a load's time goes.
        self.load_seconds: Dict[str, float] = {}
        self.stored_checks: Optional["StoredChecks"] = None  # while a load runs

    def add_time(self, phase: str, since: float) -> None:
        """Adds the seconds from `since` (a time.perf_counter()) to now to `phase`."""
        self.load_seconds[phase] = self.load_seconds.get(phase, 0.0) + time.perf_counter() - since

    @property
    def runtimes(self) -> List[GroupRuntime]:
        return [rt for u in self.units for rt in u.groups]

    # ---- status
    def check_status(self, wait: bool = True) -> None:
        """Reads the decode status of the latest forward pass on every GPU, raising Df11Error
        naming the group (and block) if a coded stream failed to decode. With wait=False it
        reads only devices whose work has completed (no host synchronisation)."""
        for state in self.devices.values():
            if state.event is None:
                continue
            if not wait and not state.event.query():
                continue
            if wait:
                state.event.synchronize()
            for rt in self.runtimes:
                if rt.device == state.device and rt.decoder is not None:
                    rt.decoder.check()
            for _, _, rows, _ in self.rows:
                if rows.device == state.device:
                    rows.check()
        if wait:  # the execution layout's records (mode="exec"): read after a sync
            for dev, state in self.exec_states.items():
                torch.cuda.current_stream(dev).synchronize()
                exec_mode.check(self.folder, state)

    def _mark_forward_end(self) -> None:
        if torch.cuda.is_available() and torch.cuda.is_current_stream_capturing():
            return
        for state in self.devices.values():
            if state.device.type != "cuda":
                continue
            if state.event is None:
                state.event = torch.cuda.Event()
            state.event.record(torch.cuda.current_stream(state.device))

    def close(self) -> None:
        for h in self.hooks:
            h.remove()
        self.hooks.clear()
        for rt in self.runtimes:
            _ops.unregister(rt.key)
            if isinstance(rt.decoder, _CudaDecoder):
                rt.decoder.plan.close()
        exec_mode.unregister(self.exec_keys)
        self.exec_keys.clear()
        for emb, cls, rows, key in self.rows:
            _ops.unregister(key)
            rows.plan.close()
            emb.__class__ = cls
        self.rows.clear()
        self.units.clear()
        self.devices.clear()
        self.exec_states.clear()

    def __del__(self):
        try:
            for rt in self.runtimes:
                _ops.unregister(rt.key)
        except Exception:  # noqa: BLE001 (interpreter shutdown)
            pass

    def memory_bytes(self) -> Dict[str, int]:
        """Bytes df11 holds per device: decode buffer, coded groups, staging, workspaces."""
        out = {}
        for dev, s in self.devices.items():
            out[str(dev)] = sum(t.numel() * t.element_size() for t in
                                (s.buffer, s.assembly, s.coded, s.staging, s.workspace)
                                if t is not None)
            out[str(dev)] += sum(r.workspace.numel() for _, _, r, _ in self.rows if r.device == dev)
        for dev, s in self.exec_states.items():
            out[str(dev)] = out.get(str(dev), 0) + s.memory_bytes()
        return out


# ---- where a member's weights go -------------------------------------------------------

_EXPERT = re.compile(
    r"^(?P<experts>.+)\.(?P<e>\d+)\.(?P<proj>gate_proj|up_proj|down_proj|w1|w2|w3)$")
_FUSED_KIND = {"gate_proj": "gate", "w1": "gate", "up_proj": "up", "w3": "up",
               "down_proj": "down", "w2": "down"}


def _existing_module(modules: Dict[str, torch.nn.Module], path: str) -> Optional[str]:
    while True:
        if path in modules:
            return path
        if not path:
            return None
        path = path.rpartition(".")[0]


@dataclass
class Target:
    """Where a decoded member goes: `module.attr` (a view of the buffer), or expert `e`'s
    gate/up/down matrix of a fused-experts module (transformers 5 holds a MoE layer's experts
    as 3-D parameters gate_up_proj [E, 2I, H] and down_proj [E, H, I], while checkpoints and
    DF11 folders hold one matrix per expert)."""
    module: str
    attr: str
    fused: Optional[str] = None  # "gate" | "up" | "down"
    expert: int = 0


def _resolve_member(model, modules, group: Group, m: Member) -> Target:
    if m.module in modules:
        module = modules[m.module]
        current = getattr(module, m.attr, None)
        if not isinstance(current, torch.Tensor):
            raise Df11Error.named("bad_group",
                                  f"{group.what}: member '{m.name}': module '{m.module}' "
                                  f"({type(module).__name__}) has no tensor '{m.attr}'")
        if tuple(current.shape) != tuple(m.shape):
            raise Df11Error.named("bad_shape",
                                  f"{group.what}: member '{m.name}' has shape "
                                  f"{list(m.shape)}, the model's is {list(current.shape)}")
        return Target(m.module, m.attr)
    match = _EXPERT.match(m.module)
    if match and m.attr == "weight" and match["experts"] in modules:
        experts = modules[match["experts"]]
        kind = _FUSED_KIND[match["proj"]]
        attr = "down_proj" if kind == "down" else "gate_up_proj"
        fused = getattr(experts, attr, None)
        e = int(match["e"])
        if isinstance(fused, torch.Tensor) and fused.dim() == 3 and e < fused.shape[0]:
            rows = fused.shape[1] if kind == "down" else fused.shape[1] // 2
            if (rows, fused.shape[2]) == tuple(m.shape):
                return Target(match["experts"], attr, kind, e)
        raise Df11Error.named("bad_shape",
                              f"{group.what}: member '{m.name}' {list(m.shape)} does "
                              f"not fit '{match['experts']}.{attr}' of the model")
    raise Df11Error.named("bad_group",
                          f"{group.what}: member '{m.name}': the model has no module "
                          f"'{m.module}'")


def _unit_module(modules, group: Group, targets: List[Target]) -> str:
    """The module whose forward uses every member: the group's own module when it holds them
    all (a block, lm_head), else the deepest existing module above all of them."""
    paths = [t.module for t in targets]
    if group.name in modules and all(p == group.name or p.startswith(group.name + ".")
                                     for p in paths):
        return group.name
    parts = [p.split(".") for p in paths]
    common = []
    for level in zip(*parts):
        if all(x == level[0] for x in level):
            common.append(level[0])
        else:
            break
    return _existing_module(modules, ".".join(common)) or ""


def attach(model: torch.nn.Module, folder: _capi.Model, device_of: Callable[[str], torch.device],
           cpu_offload: bool = False, cpu_offload_blocks: Optional[int] = None,
           pin_memory: bool = True, mode: str = "decode",
           resident_groups: Optional[List[str]] = None) -> Df11Engine:
    """Loads the folder into `model` (see the module docstring). `device_of(module_name)` says
    where a module runs. Raises Df11Error (naming the file and group) on any mismatch or a
    group that fails validation; then nothing the load made stays allocated on the GPU."""
    if mode not in MODES:
        raise ValueError(f"df11: unknown mode {mode!r} (known: {', '.join(MODES)})")
    if mode == "exec" and cpu_offload:
        raise ValueError("df11: mode='exec' keeps the execution layout on the GPU; it does not "
                         "combine with cpu_offload")
    engine = Df11Engine(folder)
    engine.mode = mode
    try:
        _attach(engine, model, folder, device_of, cpu_offload, cpu_offload_blocks, pin_memory,
                mode, resident_groups or [])
    except Df11Error as e:
        _release(engine, model)
        # A fresh exception: the original's traceback holds the load's frames, whose locals
        # (slices of the coded bytes, the decode buffer) would keep GPU memory alive as long
        # as the caller keeps the exception.
        error = Df11Error(e.code, e.status, e.message)
    except BaseException:
        _release(engine, model)
        raise
    else:
        return engine
    raise error from None


def _release(engine: Df11Engine, model: torch.nn.Module) -> None:
    """After a failed load: hooks removed, plans destroyed, and every GPU tensor the load made
    (parameters, buffers, views of the decode buffer) replaced by a meta tensor, so that no GPU
    memory stays allocated."""
    if engine.stored_checks is not None:
        engine.stored_checks.wait()
    for state in engine.devices.values():
        state.buffer = state.assembly = state.coded = state.staging = None
        state.workspace = state.status = None
    for state in engine.exec_states.values():
        for lin in state.linears:
            lin.module.__dict__.pop("forward", None)
        state.blobs, state.scratch, state.status, state.sites, state.linears = [], None, None, [], []
    for rt in engine.runtimes:
        rt.out = rt.workspace = rt.staging = rt.host_packed = None
        if isinstance(rt.decoder, _CudaDecoder):
            rt.decoder.out = rt.decoder.staging = rt.decoder.host_packed = None
    for unit in engine.units:
        unit.buffer = None
    engine.close()
    for module, attr in engine.views:
        if isinstance(module, CodedLinear):
            module._df11_buffer = torch.empty(0, dtype=torch.bfloat16, device="meta")
        view = module.__dict__.get(attr)
        if isinstance(view, torch.Tensor):
            object.__setattr__(module, attr, torch.empty(view.shape, dtype=view.dtype,
                                                         device="meta"))
    engine.views.clear()
    for module in model.modules():
        for table in (module._parameters, module._buffers):
            for name, t in list(table.items()):
                if t is not None and t.device.type == "cuda":
                    meta = torch.empty(t.shape, dtype=t.dtype, device="meta")
                    table[name] = (torch.nn.Parameter(meta, requires_grad=False)
                                   if table is module._parameters else meta)
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.empty_cache()


def _input_embedding(model: torch.nn.Module) -> Optional[torch.nn.Module]:
    try:
        return model.get_input_embeddings()
    except (NotImplementedError, AttributeError):
        return None


def _output_embedding(model: torch.nn.Module) -> Optional[torch.nn.Module]:
    try:
        return model.get_output_embeddings()
    except (NotImplementedError, AttributeError):
        return None


def _ties_embeddings(model: torch.nn.Module, emb, head) -> bool:
    if emb is None or head is None:
        return False
    if getattr(head, "weight", None) is not None and head.weight is emb.weight:
        return True
    config = getattr(model, "config", None)
    if config is None:
        return False
    try:
        text = config.get_text_config()
    except AttributeError:
        text = config
    return bool(getattr(text, "tie_word_embeddings", getattr(config, "tie_word_embeddings",
                                                             False)))


def _load_raw(model, folder: _capi.Model, t: int, device_of, tensors_set) -> None:
    name = folder.tensor_name(t)
    try:
        current, as_param = model.get_parameter(name), True
    except AttributeError:
        try:
            current, as_param = model.get_buffer(name), False
        except AttributeError:
            return  # a tensor the model does not have (transformers ignores it too)
    nbytes = folder.tensor_byte_size(t)
    host = torch.empty(nbytes, dtype=torch.uint8)
    folder.decode_tensor(t, host.data_ptr(), nbytes)
    value = host.view(_DTYPES.get(folder.tensor_dtype(t), torch.uint8)).view(
        folder.tensor_shape(t))
    if tuple(current.shape) != tuple(value.shape):
        raise Df11Error.named("bad_shape",
                              f"{folder.path}: tensor '{name}' has shape "
                              f"{list(value.shape)}, the model's is {list(current.shape)}")
    # In the dtype the model gives it (as transformers loads a BF16 model's F32 side tensor).
    _set_tensor(model, name, value.to(dtype=current.dtype).to(device_of(name.rpartition(".")[0])),
                as_param)
    tensors_set.add(name)


def _attach(engine: Df11Engine, model: torch.nn.Module, folder: _capi.Model, device_of,
            cpu_offload, cpu_offload_blocks, pin_memory, mode, resident_groups):
    groups, raws = read_groups(folder)
    modules = dict(model.named_modules())
    module_names = {m: n for n, m in modules.items()}
    emb, head = _input_embedding(model), _output_embedding(model)
    emb_name = module_names.get(emb) if emb is not None else None
    head_name = module_names.get(head) if head is not None else None
    tied = _ties_embeddings(model, emb, head)
    emb_dev = _cuda_index(torch.device(device_of(emb_name))) if emb_name is not None else None
    rows_group: Optional[Group] = None  # the embedding's group, served by rows decodes
    tensors_set = set()
    t0 = time.perf_counter()
    for t in raws:
        _load_raw(model, folder, t, device_of, tensors_set)
    engine.add_time("raw tensors", t0)

    # Coded groups: resident (decoded once), skipped (a tied head), or decoded per forward.
    units: Dict[str, List[Tuple[Group, List[Target]]]] = {}
    for group in groups:
        if not group.members:
            engine.skipped.append(group.name)  # an alias group (a tied head df11 recorded)
            continue
        targets = [_resolve_member(model, modules, group, m) for m in group.members]
        member_modules = {t.module for t in targets}
        if tied and member_modules == {head_name}:
            # The official encoder stores a tied head as a group of its own; the tie keeps the
            # model's head on the embedding (decoded once below), as the BF16 model is.
            engine.skipped.append(group.name)
            continue
        if (member_modules == {emb_name} and rows_group is None and
                _rows_eligible(emb, group, emb_dev, cpu_offload, mode, resident_groups)):
            rows_group = group
            if tied:  # the head decodes the whole group before its forward, as any unit does
                units.setdefault(head_name, []).append((group, [Target(head_name, "weight")]))
            continue
        if member_modules == {emb_name} or group.name in resident_groups:
            t0 = time.perf_counter()
            for m in group.members:
                nbytes = 2 * m.numel
                host = torch.empty(nbytes, dtype=torch.uint8)
                folder.decode_tensor(m.tensor, host.data_ptr(), nbytes)
                value = host.view(torch.bfloat16).view(m.shape)
                _set_tensor(model, m.name, value.to(device_of(m.module)), True)
                tensors_set.add(m.name)
            engine.resident.append(group.name)
            engine.add_time("resident groups", t0)
            continue
        units.setdefault(_unit_module(modules, group, targets), []).append((group, targets))
    if tied and rows_group is None:
        head.weight = emb.weight  # the tie, onto the loaded embedding

    # Everything the model holds must now be set, but the weights the hooks will provide.
    provided = {f"{t.module}.{t.attr}" for items in units.values() for _, ts in items for t in ts}
    if rows_group is not None:
        provided.add(f"{emb_name}.weight")
    missing = [n for n, p in model.named_parameters()
               if p.device.type == "meta" and n not in provided]
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5
                                          else "")
        raise Df11Error.named("not_found",
                              f"{folder.path}: the folder has no weights for "
                              f"{len(missing)} of the model's parameters: {shown}")

    # mode="exec": units whose groups are all nn.Linear weights run from the execution layout.
    exec_items: Dict[torch.device, List[Tuple[Group, List[Target]]]] = {}
    if mode == "exec":
        for unit_name in list(units):
            dev = torch.device(device_of(unit_name))
            if not exec_mode.supported(dev):
                raise ValueError(f"df11: mode='exec' runs on CUDA GPUs; '{unit_name or 'the model'}'"
                                 f" is placed on {dev}")
            if dev.type == "cuda" and dev.index is None:
                dev = torch.device("cuda", torch.cuda.current_device())
            if all(exec_mode.eligible(modules, targets) for _, targets in units[unit_name]):
                exec_items.setdefault(dev, []).extend(units.pop(unit_name))

    # Per device: one decode buffer, sized for the largest unit (its groups side by side).
    by_device: Dict[torch.device, List[str]] = {}
    for unit_name in units:
        by_device.setdefault(_cuda_index(torch.device(device_of(unit_name))), []).append(unit_name)
    if rows_group is not None:
        by_device.setdefault(emb_dev, [])
    offload_left = cpu_offload_blocks
    if any(d.type == "cuda" for d in by_device) or exec_items:
        # The GPU decoder checks the streams' structure, not the members' checksums: the
        # stored bytes are checked against theirs while the load goes on.
        engine.stored_checks = StoredChecks(folder, [g for g in groups if g.members])
    for dev, unit_names in by_device.items():
        rows_rt = rows = None
        state = DeviceState(dev)
        engine.devices[dev] = state
        slot = ALIGN_BYTES // 2  # elements
        sizes = [sum(_round_up(g.elements, slot) for g, _ in units[u]) for u in unit_names]
        state.buffer = _aligned_empty(max(sizes, default=0), dev)
        # Its address never changes: under torch.compile the decodes' mutation of it is one of
        # a static input, which CUDA graph trees capture (engine docstring, "compiled").
        torch._dynamo.mark_static_address(state.buffer, guard=False)
        fused_sizes = [_fused_elements(modules, units[u]) for u in unit_names]
        if max(fused_sizes, default=0) > 0:
            state.assembly = torch.empty(max(fused_sizes), dtype=torch.bfloat16, device=dev)
        dev_units = []
        for unit_name in unit_names:
            unit = Unit(unit_name, dev, buffer=state.buffer)
            base = 0
            for group, _ in units[unit_name]:
                rt = GroupRuntime(group, dev, offset=base)
                rt.out = state.buffer[base:base + group.elements]
                base += _round_up(group.elements, slot)
                unit.groups.append(rt)
            dev_units.append(unit)
        if dev.type == "cuda":
            flat = [rt for u in dev_units for rt in u.groups]
            offloaded = []
            for u in dev_units:
                off = cpu_offload and (offload_left is None or offload_left > 0)
                if off and offload_left is not None:
                    offload_left -= 1
                offloaded += [off] * len(u.groups)
            if rows_group is not None and dev == emb_dev:
                rows_rt = next((rt for rt in flat if rt.group is rows_group), None)
                if rows_rt is None:  # untied: uploaded with the others, a plan without output
                    rows_rt = GroupRuntime(rows_group, dev)
                    flat.append(rows_rt)
                    offloaded.append(False)
            times: Dict[str, float] = {}
            _upload(state, folder, flat, offloaded, pin_memory, times)
            for phase, seconds in times.items():
                engine.load_seconds[phase] = engine.load_seconds.get(phase, 0.0) + seconds
        else:
            state.workspace = torch.empty(0, dtype=torch.uint8)  # the CPU decode needs none
            for u in dev_units:
                for rt in u.groups:
                    rt.workspace = state.workspace
                    rt.decoder = _CpuDecoder(folder, rt.group, rt.offset)
        for unit in dev_units:
            for rt in unit.groups:
                rt.key = _ops.register(rt.decoder)
            unit.mode = DecodeMode(unit)
            _place_members(engine, model, modules, state, unit, units[unit.module])
            engine.units.append(unit)
        if dev.type == "cuda" and rows_rt is not None:
            # The embedding's weight: the tied head's (valid during the head's forward), else
            # a (rows, hidden) zero-stride placeholder that only tells shape, dtype and device.
            # The head as the model holds it now: _place_members may have put a CodedLinear
            # in the place of the nn.Linear found before.
            weight = (_output_embedding(model).weight if tied else
                      torch.zeros((), dtype=torch.bfloat16, device=dev).expand(
                          *rows_group.members[0].shape))
            rows = _RowsDecoder(rows_rt.decoder.plan, rows_group.name,
                                rows_group.members[0].shape[1], dev, state.lock)
            _serve_rows(engine, emb, rows, weight)
        if dev.type == "cuda":
            t0 = time.perf_counter()
            whole = rows is not None and rows_rt.decoder.out is None  # no unit decodes it
            _decode_at_load(state, [rt for u in dev_units for rt in u.groups],
                            rows if whole else None,
                            rows_group.members[0].shape[0] if whole else 0)
            engine.add_time("load check", t0)
        if dev.type == "cpu":
            # Every group is checked once at load (as the GPU path's plans do on the host): a
            # CPU decode validates the group and compares each member's recorded checksum.
            for unit in dev_units:
                unit.mode.pre_forward()

    for dev, items in exec_items.items():
        state = exec_mode.ExecState(dev)
        engine.exec_states[dev] = state
        t0 = time.perf_counter()
        exec_mode.transcode(engine, folder, state, modules, items)
        engine.add_time("exec transcode", t0)

    if engine.stored_checks is not None:
        t0 = time.perf_counter()
        engine.stored_checks.join()
        engine.add_time("load check (waiting for the stored checksums)", t0)
    _place_remaining(model, device_of, tensors_set, folder)
    for unit in engine.units:
        module = model.get_submodule(unit.module) if unit.module else model
        lock = engine.devices[unit.device].lock
        pre, post = _make_hooks(unit.mode, unit.device, lock)
        engine.hooks.append(module.register_forward_pre_hook(pre))
        engine.hooks.append(module.register_forward_hook(post, always_call=True))
    if any(d.type == "cuda" for d in engine.devices) or engine.exec_states:
        _status_hooks(engine, model)
    _dtype_guard(engine, model, device_of)


def _cuda_index(dev: torch.device) -> torch.device:
    if dev.type == "cuda" and dev.index is None:
        return torch.device("cuda", torch.cuda.current_device())
    return dev


def _serve_rows(engine: Df11Engine, emb: torch.nn.Module, rows: _RowsDecoder,
                weight: torch.Tensor) -> None:
    """The embedding's lookups become rows decodes (_RowsLookup placed in its class's MRO);
    its weight becomes `weight`, no longer a parameter."""
    key = _ops.register(rows)
    object.__setattr__(emb, "_df11_rows_key", key)
    _set_view(emb, "weight", weight)
    engine.views.append((emb, "weight"))
    engine.rows.append((emb, type(emb), rows, key))
    emb.__class__ = _rows_class(type(emb))


def _fused_elements(modules, items) -> int:
    """Elements of the fused-expert parameters the unit's members fill (0 if none)."""
    seen, total = set(), 0
    for _, targets in items:
        for t in targets:
            if t.fused and (t.module, t.attr) not in seen:
                seen.add((t.module, t.attr))
                total += _round_up(getattr(modules[t.module], t.attr).numel(), ALIGN_BYTES // 2)
    return total


def _place_members(engine, model, modules, state: DeviceState, unit: Unit, items) -> None:
    """Points every member's weight at the unit's decoded output: a view where the member lies
    256-byte aligned, else an aligned tensor of its own refreshed after each decode; fused
    experts get views of the device's assembly buffer, refreshed by one cat per parameter.
    An nn.Linear whose weight is a member becomes a CodedLinear (modules.py) in its place."""
    dev = state.device
    fused: Dict[Tuple[str, str], Dict[Tuple[int, str], Tuple[torch.Tensor, int]]] = {}
    for rt, (group, targets) in zip(unit.groups, items):
        for m, t in zip(group.members, targets):
            src = rt.out[m.offset:m.offset + m.numel].view(m.shape)
            start = rt.offset + m.offset  # in the device's buffer
            if t.fused:
                fused.setdefault((t.module, t.attr), {})[(t.expert, t.fused)] = (src, start)
                continue
            module = modules[t.module]
            aligned = (rt.out.data_ptr() + 2 * m.offset) % ALIGN_BYTES == 0
            if codes_as_linear(module, t.attr):
                coded = CodedLinear(module, state.buffer, start, aligned, unit.reads)
                replace_module(model, module, coded)
                modules[t.module] = module = coded
            if not aligned:
                slot = torch.empty(m.shape, dtype=torch.bfloat16, device=dev)
                unit.copies.append(_copier(slot, src))
                if not isinstance(module, CodedLinear):
                    torch._dynamo.mark_static_address(slot, guard=False)
                    unit.traced_copies.append(_traced_copier(slot, start))
                src = slot
            _set_view(module, t.attr, src)
            engine.views.append((module, t.attr))
    base = 0
    for (module_name, attr), parts in fused.items():
        module = modules[module_name]
        shape = getattr(module, attr).shape
        n = math.prod(shape)
        dst = state.assembly[base:base + n].view(shape)
        base += _round_up(n, ALIGN_BYTES // 2)
        kinds = ("down",) if attr == "down_proj" else ("gate", "up")
        order = [(e, k) for e in range(shape[0]) for k in kinds]
        absent = [f"{module_name}.{e}.{k}" for e, k in order if (e, k) not in parts]
        if absent:
            raise Df11Error.named("not_found",
                                  f"{engine.folder.path}: no weights for "
                                  f"{', '.join(absent[:5])} (fused into '{module_name}.{attr}')")
        unit.copies.append(_concatenator(dst, [parts[key][0] for key in order], shape))
        unit.traced_copies.append(_traced_concatenator(
            dst, [(parts[key][1], parts[key][0].shape) for key in order], shape))
        _set_view(module, attr, dst)
        engine.views.append((module, attr))


def _copier(dst, src):
    def copy():
        dst.copy_(src)
    return copy


def _traced_copier(dst, start):
    """dst <- the buffer's weights from `start` (traced: a view of the buffer the op mutated)."""
    n = dst.numel()

    def copy(buffer):
        dst.copy_(buffer[start:start + n].view(dst.shape))
    return copy


def _concatenator(dst, sources, shape):
    flat = dst.view(-1, shape[-1])

    def copy():
        torch.cat(sources, dim=0, out=flat)
    return copy


def _traced_concatenator(dst, sources, shape):
    """_concatenator's cat of [(start, shape)] slices of the buffer (traced)."""
    flat = dst.view(-1, shape[-1])

    def copy(buffer):
        torch.cat([buffer[a:a + math.prod(s)].view(s) for a, s in sources], dim=0, out=flat)
    return copy


def _place_remaining(model, device_of, tensors_set, folder) -> None:
    """Whatever else the model holds (buffers it computed, weights of a given bfloat16_model
    the folder does not hold) goes where its module runs."""
    stale = []
    for module_name, module in model.named_modules():
        dev = torch.device(device_of(module_name))
        for table in (module._parameters, module._buffers):
            for name, t in list(table.items()):
                if t is None or t.device.type == "meta" or t.device == dev or (
                        dev.type == "cuda" and dev.index is None and t.device.type == "cuda"):
                    continue
                full = f"{module_name}.{name}" if module_name else name
                if table is module._parameters and full not in tensors_set:
                    stale.append(full)
                moved = t.to(dev)
                table[name] = (torch.nn.Parameter(moved, requires_grad=False)
                               if table is module._parameters else moved)
    if stale:
        import warnings
        warnings.warn(f"df11: {folder.path} holds no weights for {len(stale)} parameters of the "
                      f"given model, which keep their values: {', '.join(stale[:5])}",
                      stacklevel=4)


def _make_hooks(mode, device: torch.device, lock: DeviceLock):
    """The unit's forward pre-hook (take the device's buffers, decode) and forward hook (give
    them back; registered with always_call, so it runs after an exception too)."""
    def post(module, args, output):
        if torch.compiler.is_compiling():
            mode.reads_done()
            return
        lock.exit()
        if torch.is_grad_enabled():
            _decode_before_backward(output, mode, device)

    if device.type != "cuda":
        def hook(module, args):
            if not torch.compiler.is_compiling():
                lock.enter()
            mode.pre_forward()
        return hook, post
    index = device.index if device.index is not None else 0

    def cuda_hook(module, args):
        if torch.compiler.is_compiling():
            mode.pre_forward()
            return
        lock.enter()
        if current_device() == index:  # the usual case: no context manager per block
            mode.pre_forward()
            return
        with torch.cuda.device(index):  # device_map="auto": the block's GPU
            mode.pre_forward()
    return cuda_hook, post


def _decode_before_backward(output, mode, device: torch.device) -> None:
    """A unit's backward reads its weights again (the gradient of its input is the output's
    gradient times W), after later units decoded theirs into the same buffer: when the first
    gradient reaches the unit's output, the unit decodes again (a hook on that output tensor),
    before any of its own backward runs."""
    tensor = _first_requiring_grad(output)
    if tensor is None:
        return
    index = device.index if device.index is not None else 0

    def again(grad):
        if device.type == "cuda" and current_device() != index:
            with torch.cuda.device(index):
                mode.pre_forward()
        else:
            mode.pre_forward()
    tensor.register_hook(again)


def _first_requiring_grad(output) -> Optional[torch.Tensor]:
    if isinstance(output, torch.Tensor):
        return output if output.requires_grad else None
    values = output.values() if isinstance(output, dict) else (
        output if isinstance(output, (tuple, list)) else ())
    for value in values:
        found = _first_requiring_grad(value)
        if found is not None:
            return found
    return None


def _decode_at_load(state: DeviceState, runtimes: List[GroupRuntime], rows: "_RowsDecoder",
                    rows_count: int) -> None:
    """Decodes every group of the device once and waits for the statuses, so that a corrupt
    stream is refused at load (naming the file, group and block), never met by a forward pass
    first. A group that only serves an embedding's lookups is decoded row by row."""
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


class StoredChecks:
    """df11_group_check_stored over the groups on a few threads (ctypes releases the GIL), from
    construction to join(), which waits for all of them and raises the first failure in group
    order. Each thread checks through a model handle of its own: a handle's error message is
    valid until its next failure, so a failing check must not share a handle with the load's
    own calls (or another check) that may fail at the same time."""

    def __init__(self, folder: _capi.Model, groups: List[Group]):
        import os
        import threading
        from concurrent.futures import ThreadPoolExecutor
        workers = max(1, min(8, (os.cpu_count() or 2) // 2, len(groups)))
        self._path = folder.path
        self._local = threading.local()
        self._handles: List[_capi.Model] = []
        self._handles_lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="df11-check")
        self._futures = [self._pool.submit(self._check, g.index) for g in groups]

    def _check(self, group: int) -> None:
        handle = getattr(self._local, "handle", None)
        if handle is None:
            handle = self._local.handle = _capi.Model(self._path)
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


def _dtype_guard(engine: Df11Engine, model, device_of) -> None:
    """A forward pass after model.to(dtype) / .float() / .half() raises, naming the cast: the
    coded weights decode to BF16 only, so the model would otherwise mix dtypes (or fail deep
    in a matmul with a message that says nothing of DF11). The same after model.to(device) /
    .cuda() / .cpu() moved the raw tensors away from the device the coded weights decode on
    (as a transformers pipeline does to a model loaded without a device map)."""
    folder = engine.folder
    coded = {folder.tensor_name(t) for t in range(folder.tensor_count())
             if folder.tensor_group(t) is not None}
    coded.update(a for a in (folder.group_alias_name(g) for g in range(folder.group_count()))
                 if a is not None)
    probe = None
    for module_name, module in model.named_modules():
        for name, p in module._parameters.items():
            # A raw tensor's parameter (on the meta device still where transformers loads the
            # raw tensors after); a coded one may stop being a parameter.
            full = f"{module_name}.{name}" if module_name else name
            if p is not None and p.dtype == torch.bfloat16 and full not in coded:
                probe = (module_name, module, name)
                break
        if probe is not None:
            break
    if probe is None:
        return
    module_name, module, name = probe
    path = engine.folder.path
    loaded_on = device_of(module_name)
    if loaded_on.type == "cuda" and loaded_on.index is None:
        loaded_on = torch.device("cuda", torch.cuda.current_device())

    def guard(root, args):
        p = module._parameters.get(name)
        if p is not None and p.device != loaded_on:
            raise RuntimeError(f"df11: {path}: the model was moved to {p.device} "
                               "(model.to(device), .cuda() or .cpu()) after it was loaded on "
                               f"{loaded_on}; its DF11 weights decode where they were loaded: "
                               f"load it again with device_map='{p.device}' (or device=)")
        if p is not None and p.dtype != torch.bfloat16:
            raise TypeError(f"df11: {path}: the model was cast to {p.dtype} (model.to(dtype), "
                            ".float() or .half()); its DF11 weights decode to torch.bfloat16 "
                            "only: load it again and keep it in bfloat16")
    engine.hooks.append(model.register_forward_pre_hook(guard))


def _status_hooks(engine: Df11Engine, model) -> None:
    """Each top-level forward first reads the previous one's decode statuses if its work has
    completed (no wait), and records an event at its end."""
    ref = weakref.ref(engine)

    def root_pre(module, args):
        e = ref()
        if e is None or torch.compiler.is_compiling() or torch.cuda.is_current_stream_capturing():
            return
        e.check_status(wait=False)

    def root_post(module, args, output):
        e = ref()
        if e is not None and not torch.compiler.is_compiling():
            e._mark_forward_end()

    engine.hooks.append(model.register_forward_pre_hook(root_pre))
    engine.hooks.append(model.register_forward_hook(root_post))


class _Uploader:
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


def _upload(state: DeviceState, folder: _capi.Model, runtimes: List[GroupRuntime], offloaded,
            pin_memory: bool, times: Optional[Dict[str, float]] = None) -> None:
    """Copies the coded parts of each group to the GPU once (or to pinned host memory when
    offloaded; _Uploader), then makes one plan per group (the host validation of every group),
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
            offset = _round_up(offset + nbytes, ALIGN_BYTES)
        layouts.append((layout, max(offset, ALIGN_BYTES)))
    resident = sum(size for (_, size), off in zip(layouts, offloaded) if not off)
    staging = max([size for (_, size), off in zip(layouts, offloaded) if off], default=0)
    with torch.cuda.device(dev):
        state.coded = torch.empty(resident, dtype=torch.uint8, device=dev)
        if staging:
            state.staging = torch.empty(staging, dtype=torch.uint8, device=dev)
        base = 0
        targets = []
        uploader = _Uploader(dev)
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
            rt.decoder = _CudaDecoder(folder, rt.group, parts,
                                      rt.out.data_ptr() if rt.out is not None else 0, dev)
        ws_slot = _round_up(max(rt.decoder.ws_bytes for rt in runtimes), ALIGN_BYTES)
        st_slot = _round_up(max(rt.decoder.status_bytes for rt in runtimes), 64)
        state.workspace = torch.empty(ws_slot * len(runtimes), dtype=torch.uint8, device=dev)
        state.status = torch.zeros(st_slot * len(runtimes), dtype=torch.uint8, pin_memory=True)
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
