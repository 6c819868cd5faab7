"""DF11 weights inside a torch model: coded groups kept where they run, decoded just before use.

`attach(model, folder, ...)` takes a model built without weights (or with weights to replace)
and the C API's view of a DF11 folder, and:
  - sets every tensor stored raw (norms, biases, side tensors) as the model's parameter or
    buffer, in the dtype the model gives it;
  - keeps an untied input embedding's group coded like the others, and serves each lookup by
    decoding only the rows the ids name (on a GPU torch.ops.df11.embed_rows, through
    df11_cuda_decode_rows; on the CPU df11_decode_group_range per id). With cpu_offload, and
    tied to the head in a layout mode (mode="exec", "compact"), the embedding is decoded once
    into an ordinary parameter, tied to the head if the model ties them;
  - decodes the output head's group (an untied lm_head, or the embedding a tied head shares)
    once at load into an ordinary parameter, on the GPU (_resident_on_gpu) as on the CPU: a
    matrix is never multiplied in parts of its rows (neither torch's CPU GEMM nor cuBLAS
    promises to round a part as the whole), so the head needs a BF16 matrix of its size
    anyway; held decoded, its coded bytes go, no step decodes it, and the decode buffer is
    sized for a block;
  - on the CPU, a unit of nn.Linear weights only (a block) is not decoded whole: each Linear
    becomes a PartsLinear (modules.py) that decodes its own weight into the decode buffer
    within its forward (with the matrices stored beside it that fit the buffer too:
    decoders.Segment), so that the buffer holds one matrix, not a block. torch's own thread
    count is left alone: its CPU kernels' bits depend on it (on a 16-core Xeon, BF16 logits at
    1 thread differ from those at 16), so the logits equal BF16's at the caller's count;
  - keeps every other coded group's bytes resident on its device (or in pinned host memory
    with cpu_offload), and registers a forward pre-hook on the group's module (a transformer
    block, ...) that decodes the group into ONE reused buffer per device. The group's
    weights are views into that buffer, set once at load: the hook only enqueues the decode
    (torch.ops.df11.decode_group) on torch's current stream. The module tree stays as it was
    built, so accelerate's hooks, PEFT and generate() see an ordinary model.

Exactness: a view's address is at least 256-byte aligned, as a fresh allocation's is (the
buffer itself is a fresh allocation), because cuBLAS's kernel choice can depend on operand
alignment; a member that would land misaligned is copied into an aligned tensor of its own
after each decode. The decoded values are the original BF16 bits, so the logits equal the
BF16 model's bit for bit (torch.equal), which the tests check.

The modules beside it: groups.py (the folder's groups and members), targets.py (where each
tensor goes in the model), decoders.py (CPU, CUDA, rows and parts decoders; the upload and the
checks at load), hooks.py (the forward hooks), modules.py (CodedLinear, PartsLinear),
exec_mode.py (the execution layout).

The layer "mode" is a strategy object per coded group (`hooks.DecodeMode`); another execution
layout (a fused decode+GEMV per Linear, an execution layout of the C API's experimental
section) plugs in as another class with the same two methods.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

import torch

from . import _capi, _ops, exec_mode
from ._tensors import _set_view
from ._capi import Df11Error
from ._cuda import on_device
from .decoders import (BufferUse, CpuDecoder, CpuRowsDecoder, CudaDecoder, PartsDecoder,
                       RowsDecoder, Segment, StatusBatch, StoredChecks, decode_at_load,
                       release_pages, rows_class, rows_eligible, upload)
from .device_lock import DeviceLock
from .groups import ALIGN_BYTES, Group, aligned_empty, read_groups, round_up
from .hooks import DecodeMode, PartsMode, dtype_guard, make_hooks, status_hooks
from .modules import (EMBEDDING, CodedLinear, CodedWeight, ListsCodedWeight, PartsLinear,
                      codes_as_linear, list_views, replace_module)
from .targets import (FUSED_KINDS, Target, base_prefix, checkpoint_conversions, input_embedding,
                      load_raw, output_embedding, place_remaining, resolve_member, set_tensor,
                      tie_parameter, tied_head_copy, tied_parameters, ties_embeddings,
                      unit_module)


LAYER_MODES: Dict[str, Callable] = {"decode": DecodeMode}
# On the CPU, units of nn.Linear weights only are decoded one Linear at a time (_cpu_parts); the
# tests of the block layout under torch.compile on the CPU turn it off.
CPU_PARTS = True
# Modes from_pretrained takes: "exec" runs coded nn.Linear groups from the execution layout,
# "compact" from the compact execution layout (exec_mode.py), and every other coded group in
# DecodeMode.
MODES = ("decode",) + tuple(exec_mode.LAYOUTS)


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
    buffer_key: int = -1  # the buffer's in _ops.BUFFERS: what a traced forward reads
    # Traced only: _ops.READS[reads_key] is the list of the unit's CodedLinear outputs in the
    # forward being traced.
    reads_key: int = -1
    mode: object = None


class DeviceState:
    def __init__(self, device: torch.device):
        self.device = device
        self.buffer: Optional[torch.Tensor] = None  # BF16, the reused decode buffer
        self.buffer_key = -1  # in _ops.BUFFERS
        self.assembly: Optional[torch.Tensor] = None  # BF16, fused weights rebuilt per unit
        self.use = BufferUse()  # the CPU: which segment the buffer holds
        self.coded: Optional[torch.Tensor] = None  # uint8, every resident coded part
        self.staging: Optional[torch.Tensor] = None
        self.workspace: Optional[torch.Tensor] = None
        self.status: Optional[torch.Tensor] = None  # pinned uint8
        self.status_slot = 0  # bytes per group runtime in `status`
        self.statuses: Optional[StatusBatch] = None  # the units' statuses, copied together
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
        self.check_cast = lambda: None  # raises if the model was cast from BF16 (hooks.py)
        self.views = []  # (module, attr) whose weight is a view of a decode buffer
        self.resident: List[str] = []  # groups decoded once at load
        self.skipped: List[str] = []  # tied heads served by the embedding, alias groups
        self.mode = "decode"
        self.exec_states: Dict[torch.device, exec_mode.ExecState] = {}  # mode="exec"
        self.exec_keys: List[int] = []
        self.static_keys: List[int] = []  # in _ops.BUFFERS, READS, PLANS: buffers, reads, plans
        # Input embeddings served by rows decodes: (module, its own class, RowsDecoder, key).
        self.rows: List[Tuple[torch.nn.Module, type, "RowsDecoder", int]] = []
        # Host seconds of each phase of the load (from_pretrained adds "open" and "model"),
        # which python -m df11.bench prints: where a load's time goes.
        self.load_seconds: Dict[str, float] = {}
        self.stored_checks: Optional["StoredChecks"] = None  # while a load runs
        # What the folder's names carry before the model's: "model." for a base model
        # (AutoModel) loaded from the folder of a model with a head (base_prefix).
        self.prefix = ""
        # The folder's names that the model's loader renames (targets.checkpoint_renames).
        self.renames: Dict[str, str] = {}
        # transformers' load (native.py): the parameters decoded at load, out of the state
        # dict while transformers loads, (module, attr, parameter).
        self.native_taken: list = []
        # transformers' load: the raw tensors set from files it does not read, (name, tensor),
        # put back after it initialized them as missing keys.
        self.native_unread: list = []

    def model_name(self, folder_name: str) -> Optional[str]:
        """The model's name of a folder tensor, or None where the model has no such part (the
        head of a folder loaded into its base model)."""
        name = self.renames.get(folder_name, folder_name)
        if not self.prefix:
            return name
        return name[len(self.prefix):] if name.startswith(self.prefix) else None

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
                # Copied now, so that decodes made outside a whole forward pass (a block called
                # alone, a backward pass's decodes) are read too.
                self._copy_statuses(state)
                torch.cuda.current_stream(state.device).synchronize()
                state.event.synchronize()
            if state.statuses is not None:
                state.statuses.check()
            for _, _, rows, _ in self.rows:
                if rows.device == state.device:
                    rows.check()
        if wait:  # the execution layout's records (mode="exec"): read after a sync
            for dev, state in self.exec_states.items():
                torch.cuda.current_stream(dev).synchronize()
                exec_mode.check(self.folder, state)

    def _copy_statuses(self, state: DeviceState) -> None:
        """The device's units' decode statuses copied to its pinned slots, after the decodes
        torch's current stream has enqueued (captured too, in a CUDA graph's capture)."""
        if state.statuses is None:
            return
        with on_device(state.statuses.device_index), state.lock:
            state.statuses.copy()

    def _mark_forward_end(self) -> None:
        capturing = torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()
        for state in self.devices.values():
            if state.device.type != "cuda":
                continue
            self._copy_statuses(state)
            if capturing:
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
            if isinstance(rt.decoder, CudaDecoder):
                rt.decoder.plan.close()
        exec_mode.unregister(self.exec_keys)
        self.exec_keys.clear()
        for key in self.static_keys:
            _ops.unregister(key)
        self.static_keys.clear()
        for emb, cls, rows, key in self.rows:
            _ops.unregister(key)
            if isinstance(rows, RowsDecoder):
                rows.plan.close()
            emb.__class__ = cls
        self.rows.clear()
        self.units.clear()
        self.devices.clear()
        self.exec_states.clear()

    def __del__(self):
        try:
            for key in [rt.key for rt in self.runtimes] + self.static_keys:
                _ops.unregister(key)
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


def attach(model: torch.nn.Module, folder: _capi.Model, device_of: Callable[[str], torch.device],
           cpu_offload: bool = False, cpu_offload_blocks: Optional[int] = None,
           pin_memory: bool = True, mode: str = "decode",
           resident_groups: Optional[List[str]] = None,
           stored_checks: Optional[StoredChecks] = None,
           new_parameters: Optional[Callable[[str], bool]] = None) -> Df11Engine:
    """Loads the folder into `model` (see the module docstring). `device_of(module_name)` says
    where a module runs. Raises Df11Error (naming the file and group) on any mismatch or a
    group that fails validation; then nothing the load made stays allocated on the GPU.
    stored_checks: the folder's stored checksums, already being checked (started_checks),
    for a load on a GPU; attach waits for them (or stops them, if nothing runs on a GPU).
    new_parameters(name): whether a parameter the folder does not hold is one the caller
    initializes (a head the folder's model does not have); any other is an error."""
    if mode not in MODES:
        raise ValueError(f"df11: unknown mode {mode!r} (known: {', '.join(MODES)})")
    layout = exec_mode.LAYOUTS.get(mode)
    if layout is not None and cpu_offload:
        raise ValueError(f"df11: mode={mode!r} keeps the {layout.title} on the GPU; it does not "
                         "combine with cpu_offload")
    engine = Df11Engine(folder)
    engine.mode = mode
    engine.stored_checks = stored_checks  # waited for (or stopped) on every path
    try:
        _attach(engine, model, folder, device_of, cpu_offload, cpu_offload_blocks, pin_memory,
                mode, resident_groups or [], new_parameters or (lambda name: False))
        _list_views(engine)
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


def _list_views(engine: Df11Engine) -> None:
    """The coded weights that modules other than the DF11 modules read as views of a decode
    buffer appear in state_dict() as placeholders (modules.list_views)."""
    attrs: Dict[int, Tuple[torch.nn.Module, List[str]]] = {}
    for module, attr in engine.views:
        if not isinstance(module, ListsCodedWeight):
            attrs.setdefault(id(module), (module, []))[1].append(attr)
    for module, names in attrs.values():
        list_views(module, names)


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
            lin.module.release()
        state.blobs, state.scratch, state.status, state.sites, state.linears = [], None, None, [], []
    for rt in engine.runtimes:
        rt.out = rt.workspace = rt.staging = rt.host_packed = None
        if isinstance(rt.decoder, CudaDecoder):
            rt.decoder.out = rt.decoder.staging = rt.decoder.host_packed = None
    for unit in engine.units:
        unit.buffer = None
    engine.close()
    for module, attr in engine.views:
        if isinstance(module, CodedLinear):
            module._df11_weight = None
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


def _attach(engine: Df11Engine, model: torch.nn.Module, folder: _capi.Model, device_of,
            cpu_offload, cpu_offload_blocks, pin_memory, mode, resident_groups, new_parameters):
    names = [folder.tensor_name(t) for t in range(folder.tensor_count())]
    for g in range(folder.group_count()):  # aliases; a group's name prefixes its stored tensors
        names += [a for a in (folder.group_alias_name(g), folder.group_name(g)) if a]
    engine.renames, conversions = checkpoint_conversions(model, names)
    if conversions is not None and getattr(model, "_weight_conversions", None) is None:
        # What transformers' from_pretrained records for save_pretrained (which then writes
        # the folder's names back); its own load, through the df11 quantizer, records it after.
        model._weight_conversions = conversions
    engine.prefix = base_prefix(model, [engine.renames.get(n, n) for n in names])
    groups, raws = read_groups(folder, engine.model_name)
    modules = dict(model.named_modules())
    module_names = {m: n for n, m in modules.items()}
    emb, head = input_embedding(model), output_embedding(model)
    emb_name = module_names.get(emb) if emb is not None else None
    head_name = module_names.get(head) if head is not None else None
    tied = ties_embeddings(model, emb, head)
    emb_dev = _cuda_index(torch.device(device_of(emb_name))) if emb_name is not None else None
    rows_group: Optional[Group] = None  # the embedding's group, served by rows decodes
    tensors_set = set()
    t0 = time.perf_counter()
    for t in raws:
        name = engine.model_name(folder.tensor_name(t))
        if name is not None:
            load_raw(model, folder, t, name, device_of, tensors_set)
    engine.add_time("raw tensors", t0)

    # Coded groups: resident (decoded once), skipped (a tied head), or decoded per forward.
    # The output head's group is resident: multiplied in parts of its rows, neither torch's
    # CPU GEMM (_cpu_parts) nor cuBLAS, whose kernel choice depends on the rows, promise to
    # round as on the whole matrix, so a forward needs a BF16 matrix of the head's size anyway.
    # Held decoded, the head's coded bytes go, no step decodes it again, and the decode buffer
    # is sized for a block, not for the head (_resident_on_gpu).
    head_group_module = None
    if head_name is not None and mode == "decode" and not cpu_offload:
        head_group_module = emb_name if tied else head_name
    # Parameters tied to another beside the head's tie (T5's and BART's encoder and decoder
    # embeddings share `shared`): their source is held decoded, and they are tied to it.
    other_ties = {target: source for target, source in tied_parameters(model).items()
                  if head_name is None or target != f"{head_name}.weight"}
    units: Dict[str, List[Tuple[Group, List[Target]]]] = {}
    for group in groups:
        if not group.members or tied_head_copy(model, modules, group, emb):
            # An alias group (a tied head df11 recorded), the head of a folder loaded into its
            # base model, or the tied head's copy of a folder written without df11's metadata
            # for a model that has no `lm_head`.
            engine.skipped.append(group.name)
            continue
        targets = [resolve_member(model, modules, group, m) for m in group.members]
        member_modules = {t.module for t in targets}
        if tied and member_modules == {head_name}:
            # The official encoder stores a tied head as a group of its own; the tie keeps the
            # model's head on the embedding (decoded once below), as the BF16 model is.
            engine.skipped.append(group.name)
            continue
        head_resident = head_group_module is not None and member_modules == {head_group_module}
        widened = _widened(model, group)
        if widened and len(widened) < len(group.members):
            # Members the model holds in float32 beside BF16 ones (a MoE layer's router in its
            # block): those decoded once now, the others by the group's decodes.
            t0 = time.perf_counter()
            for m in group.members:
                if m.name in widened:
                    set_tensor(model, m.name, _decoded(folder, m).to(device_of(m.module),
                                                                     widened[m.name]), True)
                    tensors_set.add(m.name)
            targets = [Target(t.module, t.attr, t.fused, t.expert, held=True)
                       if m.name in widened else t for m, t in zip(group.members, targets)]
            engine.add_time("resident groups", t0)
        whole_widened = len(widened) == len(group.members)
        tie_source = any(m.name in other_ties.values() for m in group.members)
        if (member_modules == {emb_name} and not whole_widened and not tie_source
                and rows_group is None
                and not head_resident
                and rows_eligible(emb, group, emb_dev, cpu_offload, mode, resident_groups, tied)):
            rows_group = group
            if tied:  # the head decodes the whole group before its forward, as any unit does
                units.setdefault(head_name, []).append((group, [Target(head_name, "weight")]))
            continue
        if (head_resident and not whole_widened
                and torch.device(device_of(head_group_module)).type == "cuda"):
            t0 = time.perf_counter()
            _resident_on_gpu(model, folder, group,
                             _cuda_index(torch.device(device_of(head_group_module))), pin_memory,
                             engine.load_seconds)
            tensors_set.update(m.name for m in group.members)
            engine.resident.append(group.name)
            engine.add_time("resident groups", t0)
            continue
        if (member_modules == {emb_name} or group.name in resident_groups or head_resident
                or whole_widened or tie_source):
            t0 = time.perf_counter()
            for m in group.members:
                set_tensor(model, m.name, _decoded(folder, m).to(
                    device_of(m.module), widened.get(m.name, torch.bfloat16)), True)
                tensors_set.add(m.name)
            if head_resident:  # never decoded again: its coded pages leave the resident set
                release_pages(folder, group)
            engine.resident.append(group.name)
            engine.add_time("resident groups", t0)
            continue
        units.setdefault(unit_module(modules, group, targets), []).append((group, targets))
    if tied and rows_group is None:
        head.weight = emb.weight  # the tie, onto the loaded embedding
    for target, source in other_ties.items():
        tie_parameter(model, target, source)

    # Everything the model holds must now be set, but the weights the hooks will provide.
    provided = {f"{t.module}.{t.attr}" for items in units.values() for _, ts in items for t in ts}
    if rows_group is not None:
        provided.add(f"{emb_name}.weight")
    missing = [n for n, p in model.named_parameters()
               if p.device.type == "meta" and n not in provided and not new_parameters(n)]
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5
                                          else "")
        raise Df11Error.named("not_found",
                              f"{folder.path}: the folder has no weights for "
                              f"{len(missing)} of the model's parameters: {shown}")

    # mode="exec" / "compact": units whose groups are all nn.Linear weights run from the layout.
    exec_items: Dict[torch.device, List[Tuple[Group, List[Target]]]] = {}
    layout = exec_mode.LAYOUTS.get(mode)
    if layout is not None:
        for unit_name in list(units):
            dev = torch.device(device_of(unit_name))
            if not exec_mode.supported(dev):
                raise ValueError(f"df11: mode={mode!r} runs on CUDA GPUs; "
                                 f"'{unit_name or 'the model'}' is placed on {dev}")
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
    if exec_items:
        # The layouts' transcodes check the streams' structure, not the members' checksums:
        # the stored bytes are checked against theirs on the host while the load goes on.
        if engine.stored_checks is None:
            engine.stored_checks = StoredChecks(
                folder, [g.index for items in exec_items.values() for g, _ in items])
    elif engine.stored_checks is not None:
        # The groups a GPU decodes are hashed there (decode_at_load), and the CPU's decodes
        # compare the checksums.
        engine.stored_checks.wait()
        engine.stored_checks = None
    for dev, unit_names in by_device.items():
        rows_rt = rows = None
        state = DeviceState(dev)
        engine.devices[dev] = state
        slot = ALIGN_BYTES // 2  # elements
        parted, part_size = (_cpu_parts(modules, units, unit_names, slot)
                             if dev.type == "cpu" and CPU_PARTS else (set(), 0))
        sizes = [sum(round_up(g.elements, slot) for g, _ in units[u]) for u in unit_names
                 if u not in parted]
        state.buffer = aligned_empty(max(sizes + [part_size]), dev)
        # Its address never changes: under torch.compile the decodes' mutation of it is one of
        # a static input, which CUDA graph trees capture (engine docstring, "compiled").
        torch._dynamo.mark_static_address(state.buffer, guard=False)
        state.buffer_key = _ops.register(state.buffer, _ops.BUFFERS)
        engine.static_keys.append(state.buffer_key)
        fused_sizes = [_fused_elements(modules, units[u]) for u in unit_names]
        if max(fused_sizes, default=0) > 0:
            state.assembly = torch.empty(max(fused_sizes), dtype=torch.bfloat16, device=dev)
        dev_units = []
        for unit_name in unit_names:
            unit = Unit(unit_name, dev, buffer=state.buffer, buffer_key=state.buffer_key)
            unit.reads_key = _ops.register([], _ops.READS)
            engine.static_keys.append(unit.reads_key)
            if unit_name in parted:  # one runtime per member: its Linear's decoder
                for group, targets in units[unit_name]:
                    for m, t in zip(group.members, targets):
                        if t.held:
                            continue
                        rt = GroupRuntime(group, dev)
                        rt.decoder = PartsDecoder(folder, group, m.offset, m.shape, state.buffer,
                                                  getattr(modules[t.module], "bias", None))
                        rt.decoder.use = state.use
                        unit.groups.append(rt)
                    _segments(folder, group, [rt.decoder for rt in unit.groups
                                              if rt.group is group], state)
                dev_units.append(unit)
                continue
            base = 0
            for group, _ in units[unit_name]:
                rt = GroupRuntime(group, dev, offset=base)
                rt.out = state.buffer[base:base + group.elements]
                base += round_up(group.elements, slot)
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
            upload(state, folder, flat, offloaded, pin_memory, times)
            for phase, seconds in times.items():
                engine.load_seconds[phase] = engine.load_seconds.get(phase, 0.0) + seconds
        else:
            state.workspace = torch.empty(0, dtype=torch.uint8)  # the CPU decode needs none
            for u in dev_units:
                for rt in u.groups:
                    rt.workspace = state.workspace
                    if rt.decoder is None:
                        rt.decoder = CpuDecoder(folder, rt.group, rt.offset)
                        rt.decoder.use = state.use
        for unit in dev_units:
            for rt in unit.groups:
                rt.key = _ops.register(rt.decoder)
            if unit.module in parted:
                unit.mode = PartsMode(unit)
                _place_parts(engine, model, modules, unit,
                             [t for _, targets in units[unit.module] for t in targets
                              if not t.held])
            else:
                unit.mode = DecodeMode(unit)
                _place_members(engine, model, modules, state, unit, units[unit.module])
                engine.static_keys.append(unit.mode.seal())
            engine.units.append(unit)
        if dev.type == "cuda" and rows_rt is not None:
            # The embedding's weight: the tied head's (valid during the head's forward), else
            # a CodedWeight that tells shape, dtype and device and refuses any use of values.
            # The head as the model holds it now: _place_members may have put a CodedLinear
            # in the place of the nn.Linear found before.
            weight = (output_embedding(model).weight if tied else
                      _rows_weight(emb_name, rows_group.members[0].shape, dev))
            rows = RowsDecoder(rows_rt.decoder.plan, rows_group.name,
                                rows_group.members[0].shape[1], dev, state.lock)
            _serve_rows(engine, emb, rows, weight)
        if dev.type == "cuda":
            unit_rts = [rt for u in dev_units for rt in u.groups]  # flat's first status slots
            if unit_rts:
                state.statuses = StatusBatch([rt.decoder for rt in unit_rts],
                                             state.status.data_ptr(), state.status_slot)
            whole = rows is not None and rows_rt.decoder.out is None  # no unit decodes it
            decode_at_load(state, [rt for u in dev_units for rt in u.groups],
                           rows if whole else None,
                           rows_group.members[0].shape[0] if whole else 0, folder, flat,
                           engine.load_seconds)
        if dev.type == "cpu" and rows_group is not None and dev == emb_dev:
            member = rows_group.members[0]
            rows = CpuRowsDecoder(folder, rows_group, *member.shape)
            _serve_rows(engine, emb, rows, output_embedding(model).weight if tied else
                        _rows_weight(emb_name, member.shape, dev))
            if not tied:  # no unit decodes it: checked here, its pages then left to the OS
                t0 = time.perf_counter()
                rows.check_all(state.buffer if state.buffer.numel() else
                               aligned_empty(min(rows_group.elements, 1 << 20), dev))
                state.use.holding = None  # the check wrote the buffer
                release_pages(folder, rows_group)
                engine.add_time("load check", t0)
        if dev.type == "cpu":
            # Every group is checked once at load (as the GPU path's plans do on the host): a
            # CPU decode validates the group and compares each member's recorded checksum (a
            # group used in parts: its stored bytes' checksums, and every part decoded).
            t0 = time.perf_counter()
            for unit in dev_units:
                unit.mode.load_check()
            engine.add_time("load check", t0)

    if exec_items and engine.rows:
        # The rows decoder's load check allocated and freed transient tensors: handed back
        # before the blobs are allocated, so that none of them lies in those segments (which
        # torch's cache would then keep, partly free, for the model's life).
        torch.cuda.empty_cache()
    for dev, items in exec_items.items():
        state = exec_mode.ExecState(dev, layout)
        engine.exec_states[dev] = state
        t0 = time.perf_counter()
        exec_mode.transcode(engine, model, folder, state, modules, items, head_name)
        engine.add_time("exec transcode", t0)
    if exec_items:
        # The transcode's coded bytes and workspaces go back to the device, not to torch's
        # cache (4 GB of an 8B model's load, which nothing later reuses).
        torch.cuda.empty_cache()

    if engine.stored_checks is not None:
        t0 = time.perf_counter()
        engine.stored_checks.join()
        engine.add_time("load check (waiting for the stored checksums)", t0)
    place_remaining(model, device_of, tensors_set, folder)
    for unit in engine.units:
        module = model.get_submodule(unit.module) if unit.module else model
        lock = engine.devices[unit.device].lock
        pre, post = make_hooks(unit.mode, unit.device, lock)
        engine.hooks.append(module.register_forward_pre_hook(pre))
        engine.hooks.append(module.register_forward_hook(post, always_call=True))
    if any(d.type == "cuda" for d in engine.devices) or engine.exec_states:
        status_hooks(engine, model)
    dtype_guard(engine, model, device_of)


def started_checks(folder: _capi.Model, target: Optional[torch.device],
                   mode: Optional[str]) -> Optional[StoredChecks]:
    """The stored checksums of every group of the folder, checked on host threads from now on,
    for a load in a layout mode (`mode`) that will put groups on a GPU (`target`, or None: the
    GPUs if there are any): they then run beside the model's construction too. None for any
    other load: a GPU hashes the groups it decodes where it holds them (decode_at_load), and
    the CPU's decodes compare the checksums."""
    on_gpu = target.type == "cuda" if target is not None else torch.cuda.is_available()
    if not on_gpu or mode not in exec_mode.LAYOUTS:
        return None
    return StoredChecks(folder, list(range(folder.group_count())))


def _resident_on_gpu(model, folder, group: Group, dev: torch.device, pin_memory: bool,
                     times: Dict[str, float]) -> None:
    """Decodes a group once on its GPU into a tensor of its own, through the path every
    decoded group takes (upload, plan, decode_at_load's status check), and sets its members as
    views of it; the coded bytes, workspace and status go with the throwaway device state."""
    state = DeviceState(dev)
    rt = GroupRuntime(group, dev)
    rt.out = torch.empty(group.elements, dtype=torch.bfloat16, device=dev)
    upload(state, folder, [rt], [False], pin_memory)
    decode_at_load(state, [rt], None, 0, folder, times=times)
    for m in group.members:
        set_tensor(model, m.name, rt.out[m.offset:m.offset + m.numel].view(m.shape), True)
    # The coded bytes go back to the device, not to torch's cache, where no later allocation
    # of the load (the decode buffer, the blocks' coded bytes) may fit them.
    del state, rt
    torch.cuda.empty_cache()


def _decoded(folder: _capi.Model, m) -> torch.Tensor:
    """Member `m` decoded on the host, checked as it decodes: the streams, and (df11 folders)
    the member's checksum."""
    host = torch.empty(2 * m.numel, dtype=torch.uint8)
    folder.decode_tensor(m.tensor, host.data_ptr(), host.numel())
    return host.view(torch.bfloat16).view(m.shape)


def _widened(model: torch.nn.Module, group: Group) -> Dict[str, torch.dtype]:
    """The group's members that the model holds in a wider float type than BF16 ({name:
    dtype}): the parameters of the modules a framework keeps in float32 (diffusers'
    _keep_in_fp32_modules, as a Wan transformer's time embedding; transformers'
    _keep_in_fp32_modules_strict), whose own loads upcast the stored BF16 weight and whose
    forward computes in that type; and the float32 parameters a model declares (GLM-4.5's MoE
    router). Those members are decoded once at load into their parameters, as the framework
    loads them (a group of such members alone is then resident; in a group with BF16 members,
    the group's decodes leave them alone: Target.held)."""
    out = {}
    for m in group.members:
        try:
            p = model.get_parameter(m.name)
        except AttributeError:
            continue
        if p.is_floating_point() and p.dtype != torch.bfloat16:
            out[m.name] = p.dtype
    return out


def _cuda_index(dev: torch.device) -> torch.device:
    if dev.type == "cuda" and dev.index is None:
        return torch.device("cuda", torch.cuda.current_device())
    return dev


def _serve_rows(engine: Df11Engine, emb: torch.nn.Module, rows: RowsDecoder,
                weight: torch.Tensor) -> None:
    """The embedding's lookups become rows decodes (RowsLookup placed in its class's MRO);
    its weight becomes `weight`, no longer a parameter."""
    key = _ops.register(rows)
    object.__setattr__(emb, "_df11_rows_key", key)
    _set_view(emb, "weight", weight)
    engine.views.append((emb, "weight"))
    engine.rows.append((emb, type(emb), rows, key))
    emb.__class__ = rows_class(type(emb))


def _rows_weight(emb_name: str, shape, device: torch.device) -> torch.Tensor:
    """An untied embedding's weight when rows decodes serve its lookups: shape, dtype and
    device only; reading or changing its values raises (modules.CodedWeight)."""
    return CodedWeight(shape, device, f"{emb_name}.weight", EMBEDDING)


def _cpu_parts(modules, units, unit_names, slot) -> Tuple[set, int]:
    """The CPU units whose members are all nn.Linear weights: each Linear then decodes its own
    weight just before its forward (modules.PartsLinear), so that the buffer holds one matrix,
    not a block. The buffer's size (elements): the largest unit decoded whole (other members:
    fused experts, a weight a module reads itself) or the largest such Linear (the output head
    is resident on the CPU: _attach). A matrix is multiplied whole: torch's CPU GEMM on a part
    of a matrix's rows does not always round as on the whole (an output head on a 16-core
    Xeon, 4 or 16 threads, 200 tokens: hundreds of logits differ), so parts would break the
    logits' equality with BF16's. Returns (those units, that size)."""
    def linear_only(items) -> bool:
        return all(t.held or (not t.fused and len(m.shape) == 2
                              and codes_as_linear(modules[t.module], t.attr))
                   for group, targets in items for m, t in zip(group.members, targets))
    parted = {u for u in unit_names if linear_only(units[u])}
    whole = [sum(round_up(g.elements, slot) for g, _ in units[u]) for u in unit_names
             if u not in parted]
    members = [m.numel for u in parted for g, _ in units[u] for m in g.members]
    return parted, round_up(max(whole + members, default=0), slot)


def _segments(folder, group: Group, decoders: List[PartsDecoder], state: DeviceState) -> None:
    """Sorts a group's Linears of one part into Segments (decoders.Segment): runs of members
    stored side by side whose views stay 256-byte aligned and which fit the buffer together."""
    size = state.buffer.numel()
    run: List[PartsDecoder] = []

    def close():
        if run:
            first = run[0].first
            end = run[-1].first + run[-1].out_features * run[-1].in_features
            segment = Segment(folder, group, first, end - first, state.use)
            for d in run:
                d.segment, d.at = segment, d.first - first
            run.clear()
    for d in sorted(decoders, key=lambda d: d.first):
        n = d.out_features * d.in_features
        if run and ((d.first - run[0].first) * 2 % ALIGN_BYTES or
                    d.first + n - run[0].first > size or
                    d.first != run[-1].first + run[-1].out_features * run[-1].in_features):
            close()
        run.append(d)
    close()


def _place_parts(engine, model, modules, unit: Unit, targets: List[Target]) -> None:
    """Each Linear of the unit becomes a PartsLinear over its decoder; its weight a
    CodedWeight."""
    for rt, target in zip(unit.groups, targets):
        module = modules[target.module]
        parts = PartsLinear(module, rt.key, f"{target.module}.{target.attr}", unit.device)
        replace_module(model, module, parts)
        modules[target.module] = parts
        engine.views.append((parts, "weight"))


def _fused_elements(modules, items) -> int:
    """Elements of the fused-expert parameters the unit's members fill (0 if none)."""
    seen, total = set(), 0
    for _, targets in items:
        for t in targets:
            if t.fused and (t.module, t.attr) not in seen:
                seen.add((t.module, t.attr))
                total += round_up(getattr(modules[t.module], t.attr).numel(), ALIGN_BYTES // 2)
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
            if t.held:
                continue
            src = rt.out[m.offset:m.offset + m.numel].view(m.shape)
            start = rt.offset + m.offset  # in the device's buffer
            if t.fused:
                fused.setdefault((t.module, t.attr), {})[(t.expert, t.fused)] = (src, start)
                continue
            module = modules[t.module]
            aligned = (rt.out.data_ptr() + 2 * m.offset) % ALIGN_BYTES == 0
            if codes_as_linear(module, t.attr):
                coded = CodedLinear(module, state.buffer_key, start, aligned, unit.reads_key)
                engine.static_keys.append(coded._df11_plan)
                replace_module(model, module, coded)
                modules[t.module] = module = coded
            if not aligned:
                slot = torch.empty(m.shape, dtype=torch.bfloat16, device=dev)
                unit.copies.append(_copier(slot, src))
                if not isinstance(module, CodedLinear):
                    torch._dynamo.mark_static_address(slot, guard=False)
                    unit.traced_copies.append(_traced_copier(slot, start))
                src = slot
            if isinstance(module, CodedLinear):
                module.set_weight(src, m.name)
            else:
                _set_view(module, t.attr, src)
            engine.views.append((module, t.attr))
    base = 0
    for (module_name, attr), parts in fused.items():
        module = modules[module_name]
        shape = getattr(module, attr).shape
        n = math.prod(shape)
        dst = state.assembly[base:base + n].view(shape)
        base += round_up(n, ALIGN_BYTES // 2)
        kinds = FUSED_KINDS[attr]
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


# The eager refreshes below write through `.data` (the same memory, a version counter of its
# own): they rewrite the weights a unit's decode gives, as the decode itself does (through the C
# API, which no version counter sees), so that autograd's record of a tensor saved for a
# backward pass is not invalidated by a later unit's refresh of the shared buffer; the unit
# decodes and refreshes again before its backward reads it (hooks.decode_before_backward).


def _copier(dst, src):
    dst = dst.data

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
    flat = dst.data.view(-1, shape[-1])

    def copy():
        torch.cat(sources, dim=0, out=flat)
    return copy


def _traced_concatenator(dst, sources, shape):
    """_concatenator's cat of [(start, shape)] slices of the buffer (traced)."""
    flat = dst.view(-1, shape[-1])

    def copy(buffer):
        torch.cat([buffer[a:a + math.prod(s)].view(s) for a, s in sources], dim=0, out=flat)
    return copy


