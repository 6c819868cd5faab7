"""The forward hooks of a DF11 model: a unit's decode before its forward and the lock around
it (`DecodeMode`, `make_hooks`), the decode again before a backward pass reads the weights
(`decode_before_backward`), the root's deferred status reads (`status_hooks`) and the guard
against a cast or a move (`dtype_guard`)."""
from __future__ import annotations

from typing import Callable, List, Optional

import torch

import weakref

from . import _ops
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


def eager_at_top_level(code) -> bool:
    """Makes torch.compile run `code`, and what it calls, without dynamo when the code is
    entered as a frame of its own, not from inside a traced frame.

    transformers' compiled generate and torch.compile(model) compile the model's __call__:
    torch's Module.__call__ runs untraced and calls the root's hooks, so dynamo would compile
    each root hook as a frame of its own. Such a frame traces to nothing (the hooks do nothing
    while tracing), yet each call of the compiled step would pay a cache lookup and its guards
    for it: on an 8B Llama's static-cache step, more host time than the hooks' own work. Run
    eagerly instead, the hooks do on every compiled step what they do on an eager one (the
    status reads, the cast and move guard). Inlined in a traced frame (a module that calls the
    DF11 model, compiled), dynamo still traces the hook, which then does nothing. Returns
    False, changing nothing, on a torch without per-code frame strategies."""
    try:
        from torch._C._dynamo.eval_frame import set_code_exec_strategy
        from torch._dynamo.types import FrameAction, FrameExecStrategy
    except ImportError:
        return False
    set_code_exec_strategy(code, FrameExecStrategy(FrameAction.SKIP, FrameAction.SKIP))
    return True


_root_hooks_eager: List[bool] = []


def register_root_hook(model: torch.nn.Module, fn, post: bool = False):
    """A RootHook on the model's root (a forward pre-hook, or a forward hook with post=True),
    run eagerly at the top level of a compiled call (eager_at_top_level; set up on the first
    registration, at load, when torch's dynamo is imported anyway)."""
    if not _root_hooks_eager:
        _root_hooks_eager.append(eager_at_top_level(RootHook.__call__.__code__))
    if post:
        return model.register_forward_hook(RootHook(fn))
    return model.register_forward_pre_hook(RootHook(fn))


class DecodeMode:
    """Default layer mode: decode the unit's groups into the device's buffer, then the module's
    own forward runs on BF16 views (torch's matmuls: bit-identical to the BF16 model)."""

    name = "decode"

    def __init__(self, unit):
        self.unit = unit
        self._steps: Optional[List[Callable[[], None]]] = None
        self.plan_key = -1  # what a traced forward reads (seal)

    def seal(self) -> int:
        """Registers, once the unit is complete, what its traced pre_forward and reads_done
        read, as one constant (_ops.plan): the buffer's key, the groups' keys, whether it has
        traced copies, and its reads' key. Returns the plan's key (the engine unregisters it)."""
        unit = self.unit
        self.plan_key = _ops.register((unit.buffer_key, tuple(rt.key for rt in unit.groups),
                                       bool(unit.traced_copies), unit.reads_key), _ops.PLANS)
        return self.plan_key

    def _eager_steps(self) -> List[Callable[[], None]]:
        """What a forward pass runs before the module, as bound callables made once."""
        steps: List[Callable[[], None]] = []
        for rt in self.unit.groups:
            if rt.staging is not None:  # cpu_offload: coded bytes from pinned host memory
                steps.append(stager(rt.staging, rt.host_packed))
            if isinstance(rt.decoder, CudaDecoder):  # its status copied at the pass's end
                steps.append(rt.decoder.decode_only)
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
            buffer_key, keys, copies, _ = _ops.plan(self.plan_key)
            buffer = _ops.BUFFERS[buffer_key]
            for key in keys:
                torch.ops.df11.decode_into(buffer, key)
            if copies:
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
        buffer_key, _, _, reads_key = _ops.plan(self.plan_key)
        traced = _ops.READS[reads_key]
        reads = list(traced)
        traced.clear()
        torch.ops.df11.reads_done(_ops.BUFFERS[buffer_key], reads)

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
            mode.pre_forward()
            return
        with torch.cuda.device(index):  # device_map="auto": the block's GPU
            mode.pre_forward()
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
    engine.hooks.append(register_root_hook(model, guard))


def status_hooks(engine, model) -> None:
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

    engine.hooks.append(register_root_hook(model, root_pre))
    engine.hooks.append(register_root_hook(model, root_post, post=True))
