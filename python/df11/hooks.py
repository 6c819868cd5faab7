"""The forward hooks of a DF11 model: a unit's decode before its forward and the lock around
it (`DecodeMode`, `make_hooks`), the decode again before a backward pass reads the weights
(`decode_before_backward`), the root's deferred status reads (`status_hooks`) and the guard
against a cast or a move (`dtype_guard`)."""
from __future__ import annotations

from typing import Callable, List, Optional

import torch

import weakref

from ._cuda import current_device
from .decoders import CudaDecoder
from .device_lock import DeviceLock
from .modules import NO_DEEPCOPY, NO_PICKLE


class RootHook:
    """A hook df11 puts on the model's root module: calls `fn`. A DF11 model can be neither
    pickled (torch.save(model)) nor deep-copied: both reach the root's hooks before its layers,
    and this one refuses, saying why and what to do (instead of an error about a local
    function, or a copy whose hooks still serve the original)."""

    __slots__ = ("fn",)

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)

    def __deepcopy__(self, memo):
        raise RuntimeError(f"df11: {NO_DEEPCOPY}")

    def __reduce_ex__(self, protocol):
        raise RuntimeError(f"df11: {NO_PICKLE}")


class Ahead:
    """One GPU's next-block decodes, where its units alternate between two decode buffers.

    Eagerly (the forward pre-hooks, not a trace) a unit's hook decodes the unit that comes next
    into the other buffer on a side stream, after the work enqueued so far on torch's stream
    (the last reads of that buffer, by the unit before this one), so that the decode runs while
    this unit computes; the unit's forward hook then makes torch's stream wait for it, before
    the device's lock passes on. The next unit's hook finds its weights decoded and decodes
    nothing. The order is learned on the first forward pass (the unit whose hook runs first
    after a unit's, on one stream, the first time that one runs), so it never wraps from a
    pass's last unit to the next pass's first. A decode ahead serves only the root forward pass
    and the stream that made it (reset() at each root forward), and any decode into a buffer
    replaces what it held, so a decode that is not used (another thread's unit came in between,
    a forward pass that stopped early) costs its time and nothing else. The weights' bits and
    the matmuls are the same either way: outputs do not change."""

    def __init__(self, device: torch.device):
        self.device = device
        self._side = torch.cuda.Stream(device=device)  # made at load, never while capturing
        self._next: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
        self._seen: "weakref.WeakSet" = weakref.WeakSet()
        self._last: dict = {}  # stream -> weakref of the unit whose hook ran last on it
        self._held: dict = {}  # buffer address -> (unit, stream, capturing)
        self._pending: dict = {}  # stream -> the side stream's event to wait for

    def reset(self) -> None:
        self._held.clear()
        self._last.clear()

    def before(self, mode: "DecodeMode") -> None:
        """A unit's pre-hook (the device's lock held): its decodes unless held, then the next
        unit's on the side stream."""
        unit = mode.unit
        stream = torch.cuda.current_stream(self.device)
        raw = stream.cuda_stream
        capturing = torch.cuda.is_current_stream_capturing()
        buf = unit.buffer.data_ptr()
        held = self._held.pop(buf, None)
        if held is not None and held[0] is unit and held[1] == raw and held[2] == capturing:
            for step in mode.copy_steps():
                step()
        else:
            for step in mode.eager_steps():
                step()
        last = self._last.get(raw)
        self._last[raw] = weakref.ref(unit)
        if unit not in self._seen:
            self._seen.add(unit)
            prev = last() if last is not None else None
            if prev is not None and prev is not unit and prev not in self._next:
                self._next[prev] = weakref.ref(unit)
        ref = self._next.get(unit)
        nxt = ref() if ref is not None else None
        if nxt is None or nxt.buffer is None or nxt.buffer.data_ptr() == buf:
            return
        side = self._side
        ready = torch.cuda.Event()
        ready.record(stream)
        side.wait_event(ready)
        with torch.cuda.stream(side):
            for step in nxt.mode.decode_steps():
                step()
        done = torch.cuda.Event()
        done.record(side)
        self._held[nxt.buffer.data_ptr()] = (nxt, raw, capturing)
        self._pending[raw] = (stream, done)

    def after(self) -> None:
        """A unit's forward hook, before the lock passes on: torch's stream waits for the
        decode ahead (no side work is left unjoined, as a CUDA graph capture requires)."""
        pending = self._pending.pop(torch.cuda.current_stream(self.device).cuda_stream, None)
        if pending is not None:
            pending[0].wait_event(pending[1])

    def own(self, unit) -> None:
        """A decode of `unit` outside the hooks (a backward pass, a check): its buffer no
        longer holds a decode ahead."""
        if unit.buffer is not None:
            self._held.pop(unit.buffer.data_ptr(), None)


class DecodeMode:
    """Default layer mode: decode the unit's groups into the device's buffer, then the module's
    own forward runs on BF16 views (torch's matmuls: bit-identical to the BF16 model)."""

    name = "decode"

    def __init__(self, unit):
        self.unit = unit
        self._steps: Optional[List[Callable[[], None]]] = None
        self._decodes: Optional[List[Callable[[], None]]] = None

    def eager_steps(self) -> List[Callable[[], None]]:
        steps = self._steps
        if steps is None:
            steps = self._steps = self._eager_steps()
        return steps

    def decode_steps(self) -> List[Callable[[], None]]:
        """The unit's decodes alone (a CUDA unit without staging: Ahead decodes them)."""
        if self._decodes is None:
            self._decodes = [rt.decoder.decode_now for rt in self.unit.groups]
        return self._decodes

    def copy_steps(self) -> List[Callable[[], None]]:
        return self.unit.copies

    def _eager_steps(self) -> List[Callable[[], None]]:
        """What a forward pass runs before the module, as bound callables made once."""
        steps: List[Callable[[], None]] = []
        for rt in self.unit.groups:
            if rt.staging is not None:  # cpu_offload: coded bytes from pinned host memory
                steps.append(stager(rt.staging, rt.host_packed))
            if isinstance(rt.decoder, CudaDecoder):
                steps.append(rt.decoder.decode_now)
            else:
                steps.append(caller(rt.decoder.decode_into, self.unit.buffer))
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
        ahead = self.unit.ahead
        if ahead is not None:
            ahead.own(self.unit)
        for step in self.eager_steps():
            step()

    def pre_forward_hooked(self) -> None:
        """The eager pre-hook's decode: with a second buffer, through the device's Ahead."""
        ahead = self.unit.ahead
        if ahead is None:
            self.pre_forward()
        else:
            ahead.before(self)

    def after_forward(self) -> None:
        ahead = self.unit.ahead
        if ahead is not None:
            ahead.after()

    def reads_done(self) -> None:
        """Traced only (the unit's forward hook): the unit's matmuls have read the buffer
        (torch.ops.df11.reads_done, _ops.py); the next decode into it comes after them."""
        reads = list(self.unit.reads)
        self.unit.reads.clear()
        torch.ops.df11.reads_done(self.unit.buffer, reads)

    def load_check(self) -> None:
        """At load on the CPU: one decode, which validates every stream and compares each
        member's checksum."""
        self.pre_forward()

    def decode_all(self) -> None:
        """Decodes what one forward pass decodes (python -m df11.bench times it)."""
        self.pre_forward()


class PartsMode:
    """A unit whose Linears decode their own weights within their forwards, each into the start
    of the device's decode buffer (modules.PartsLinear, decoders.PartsDecoder): the unit is
    decoded in parts, Linear by Linear. The hooks only hold the device's lock around the
    unit's forward."""

    name = "parts"

    def __init__(self, unit):
        self.unit = unit

    def pre_forward(self) -> None:
        pass

    def pre_forward_hooked(self) -> None:
        pass

    def after_forward(self) -> None:
        pass

    def reads_done(self) -> None:
        pass

    def load_check(self) -> None:
        """At load: each group's stored bytes against their checksums (a range decode compares
        no member's), and every Linear decoded once (the streams checked)."""
        for index in dict.fromkeys(rt.group.index for rt in self.unit.groups):
            self.unit.groups[0].decoder.folder.check_stored(index)
        self.decode_all()

    def decode_all(self) -> None:
        """What one forward pass decodes (python -m df11.bench): each segment once, each other
        Linear's weight."""
        for rt in self.unit.groups:
            d = rt.decoder
            if d.segment is not None:
                d.segment.load(d.buffer)
                continue
            d.decode()


def stager(staging, packed):
    def stage():
        staging.copy_(packed, non_blocking=True)
    return stage


def caller(fn, *args):
    def call():
        fn(*args)
    return call


def make_hooks(mode, device: torch.device, lock: DeviceLock):
    """The unit's forward pre-hook (take the device's buffers, decode) and forward hook (give
    them back; registered with always_call, so it runs after an exception too)."""
    def post(module, args, output):
        if torch.compiler.is_compiling():
            mode.reads_done()
            return
        mode.after_forward()
        lock.exit()
        if torch.is_grad_enabled():
            decode_before_backward(output, mode, device)

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
            mode.pre_forward_hooked()
            return
        with torch.cuda.device(index):  # device_map="auto": the block's GPU
            mode.pre_forward_hooked()
    return cuda_hook, post


def decode_before_backward(output, mode, device: torch.device) -> None:
    """A unit's backward reads its weights again (the gradient of its input is the output's
    gradient times W), after later units decoded theirs into the same buffer: when the first
    gradient reaches the unit's output, the unit decodes again (a hook on that output tensor),
    before any of its own backward runs."""
    tensor = first_requiring_grad(output)
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


def first_requiring_grad(output) -> Optional[torch.Tensor]:
    if isinstance(output, torch.Tensor):
        return output if output.requires_grad else None
    values = output.values() if isinstance(output, dict) else (
        output if isinstance(output, (tuple, list)) else ())
    for value in values:
        found = first_requiring_grad(value)
        if found is not None:
            return found
    return None


def dtype_guard(engine, model, device_of) -> None:
    """A forward pass (and engine.check_cast, which save_pretrained calls) after model.to(dtype)
    / .float() / .half() raises, naming the cast: the coded weights decode to BF16 only, so the
    model would otherwise mix dtypes (or fail deep in a matmul with a message that says nothing
    of DF11), and a save would write a folder whose raw tensors and config are no longer the
    BF16 model's. The same after model.to(device) /
    .cuda() / .cpu() moved the raw tensors away from the device the coded weights decode on
    (as a transformers pipeline does to a model loaded without a device map)."""
    folder = engine.folder
    coded = {engine.model_name(folder.tensor_name(t)) for t in range(folder.tensor_count())
             if folder.tensor_group(t) is not None}
    coded.update(engine.model_name(a) for a in (folder.group_alias_name(g)
                                                 for g in range(folder.group_count()))
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

    def check_cast():
        p = module._parameters.get(name)
        if p is not None and p.dtype != torch.bfloat16:
            raise TypeError(f"df11: {path}: the model was cast to {p.dtype} (model.to(dtype), "
                            ".float() or .half()); its DF11 weights decode to torch.bfloat16 "
                            "only: load it again and keep it in bfloat16")

    def guard(root, args):
        p = module._parameters.get(name)
        if p is not None and p.device != loaded_on:
            raise RuntimeError(f"df11: {path}: the model was moved to {p.device} "
                               "(model.to(device), .cuda() or .cpu()) after it was loaded on "
                               f"{loaded_on}; its DF11 weights decode where they were loaded: "
                               f"load it again with device_map='{p.device}' (or device=)")
        check_cast()
    engine.check_cast = check_cast
    engine.hooks.append(model.register_forward_pre_hook(RootHook(guard)))


def status_hooks(engine, model) -> None:
    """Each top-level forward first reads the previous one's decode statuses if its work has
    completed (no wait), and records an event at its end."""
    ref = weakref.ref(engine)

    def root_pre(module, args):
        e = ref()
        if e is None or torch.compiler.is_compiling():
            return
        for state in e.devices.values():
            if state.ahead is not None:
                state.ahead.reset()
        if torch.cuda.is_current_stream_capturing():
            return
        e.check_status(wait=False)

    def root_post(module, args, output):
        e = ref()
        if e is not None and not torch.compiler.is_compiling():
            e._mark_forward_end()

    engine.hooks.append(model.register_forward_pre_hook(RootHook(root_pre)))
    engine.hooks.append(model.register_forward_hook(RootHook(root_post)))
