"""mode="exec": the coded Linear layers run from the execution layout (spec/EXEC_LAYOUT.md).

At load, on the GPU, each coded group whose members are all nn.Linear weights is transcoded
from DF11 into one execution-layout blob per member (df11_cuda_exec_measure / _pack: the
group's BF16 exists only in a transient workspace); the blobs stay resident and the DF11
bytes are not kept, and each such nn.Linear is replaced by a modules.ExecLinearModule over its
blob (its ExecLinear here). In a forward pass each such Linear computes
  - at most fused_max_tokens("exec") tokens (64, or the GPU's measured switch: 128 on an H100
    80GB HBM3, or what `python -m df11.tune` measured on the GPU at hand): Y = X W^T straight from its blob (df11_cuda_exec_gemm_ex, BF16 tensor
    cores, FP32 accumulation). Linears that share their input (q/k/v, gate/up) run in one
    launch when the model calls them on the same tensor (compiled by Inductor: the graph pass
    SiblingPass makes their torch.ops.df11.exec_linear ops one torch.ops.df11.exec_site);
  - above: the blob decoded to BF16 into a scratch buffer (df11_cuda_exec_to_bf16_ex),
    then torch's F.linear.

What it costs: 12.01 bits per weight resident against DF11's ~10.8 (about 1.11x DF11's
bytes, 0.75x BF16), plus a BF16 scratch as large as the largest such matrix but the output
head's. The head (128256 x 4096 on an 8B Llama: 1.05 GB of BF16, 2.4 times a block's largest
matrix) decodes above FUSED_MAX_TOKENS into a buffer allocated for that call from torch's
allocator: generate() computes the logits of one position per sequence, so it needs that
buffer only at batches above FUSED_MAX_TOKENS, and a forward pass only when it asks for the
logits of more positions than that.

mode="compact" is the same with the compact execution layout (spec/EXEC_COMPACT.md): each
exponent a prefix codeword of at most 12 bits, about 10.7 bits per weight (no more than
DF11's) plus a 16 KB decode table per matrix, transcoded on the GPU with the codes of the
reference encoder (df11_cuda_compact_count / _measure / _pack, df11_tools_compact_lengths). Its
fused GEMM (df11_cuda_compact_gemm_ex) has the execution layout's products and order, so it
guarantees the same: equal to df11's reference GEMM bit for bit at fused_max_tokens("compact")
(32) tokens or fewer, torch's F.linear on the original BF16 bits above. It is slower than the
12-bit layout's GEMM (each lane decodes its codewords one after another; BENCHMARKS.md,
"Compact execution layout").

What it guarantees: every weight decodes to the original BF16 bits. Above the mode's
fused_max_tokens() the product is torch's on those bits, so it equals the BF16 model's. At or
below it the product is the execution layout's fixed sequence of tensor-core products: equal
bit for bit to df11's reference GEMM on the BF16 weights (df11_cuda_exec_reference_gemm;
`reference()` below puts it into a BF16 model), NOT to cuBLAS's, so logits are not torch.equal
to the BF16 model's torch matmuls (they differ by a few ulp in a fraction of outputs); the tests
show the equality with the reference instead.

Status: each call site (one launch's Linears) has a 16-byte record, reset once at load and
kept across calls (DF11_EXEC_KEEP_STATUS: no memset per token); the engine reads them when it
checks the decode status (after generate), raising Df11Error naming the matrices.
"""
from __future__ import annotations

import ctypes
import hashlib
import itertools
import math
import operator
import threading
import weakref
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import torch

from . import _capi, switches
from ._capi import Df11Error
from ._cuda import current_device, raw_stream
from .device_lock import DeviceLock
from ._tensors import _mapped
from .modules import ExecLinearModule, codes_as_linear, replace_module

ALIGN_BYTES = 256
# Linears a model calls on the same input, by attribute name, within one parent module.
SIBLINGS = (("q_proj", "k_proj", "v_proj"), ("gate_proj", "up_proj"), ("query", "key", "value"),
            ("w1", "w3"), ("wq", "wk", "wv"))

# The traced ops' key -> ExecLinear. Weak: a model's Linears, and the blobs they hold, go with
# the model (its modules hold them); keys are never reused.
_LINEARS: "weakref.WeakValueDictionary[int, ExecLinear]" = weakref.WeakValueDictionary()
_KEYS = itertools.count()


@dataclass(frozen=True)
class Layout:
    """What differs between the layouts a mode runs from: the C API's records and calls."""
    mode: str  # the mode's name
    title: str  # in messages
    matrix: type  # the ctypes record of a blob
    gemm: type  # of one product
    gemm_fn: str
    to_bf16_fn: str
    status_sync_fn: str
    # The product with a row stride for Y (fused members written side by side), if any.
    gemm_ld_fn: Optional[str] = None

    def calls(self, L: ctypes.CDLL) -> Tuple[object, object, object]:
        return (getattr(L, self.gemm_fn), getattr(L, self.to_bf16_fn),
                getattr(L, self.status_sync_fn))


EXEC = Layout("exec", "execution layout", _capi.ExecMatrix, _capi.ExecGemm,
              "df11_cuda_exec_gemm_ex", "df11_cuda_exec_to_bf16_ex", "df11_cuda_exec_status_sync",
              "df11_cuda_exec_gemm_ld")
COMPACT = Layout("compact", "compact layout", _capi.CompactMatrix, _capi.CompactGemm,
                 "df11_cuda_compact_gemm_ex", "df11_cuda_compact_to_bf16_ex",
                 "df11_cuda_compact_status_sync")
LAYOUTS = {layout.mode: layout for layout in (EXEC, COMPACT)}
# Tokens up to which a layout's Linears run its fused GEMM; above, its blobs decoded and
# F.linear. The switch is where bench/exec_step.py measured the fused GEMM faster than decode +
# F.linear, per GPU (the same step, one run each; the C API takes up to EXEC_MAX_BATCH, 256):
#   - an H200: the execution layout's strip kernels up to 32 tokens and its wide kernel
#     (decoder/cuda/EXEC_KERNEL.md v10, v13) at 33-64, 0.64-0.72x decode + F.linear's time,
#     slower from 96 on: 64, the default for GPUs not in FUSED_MAX_TOKENS_BY_GPU;
#   - an H100 80GB HBM3: the warpgroup kernel (v25, v26) 0.57-0.62x decode + F.linear's time
#     at 65-128 tokens, 1.02-1.09x at 129-256 in two chunks
#     (bench/results/exec-kernel-ab-h100/v26-two-chunks/shipped-1, shipped-2): 128.
# The compact layout's fused GEMM serves up to its C maximum, 32 tokens, on every GPU.
# `python -m df11.tune` measures the GPU at hand the same way and writes its switch to the
# switch file (df11.switches), which takes precedence over this table for that GPU.
DEFAULT_FUSED_MAX_TOKENS = {"exec": 64, "compact": _capi.COMPACT_MAX_BATCH}
FUSED_MAX_TOKENS_BY_GPU: Dict[str, Dict[str, int]] = {"NVIDIA H100 80GB HBM3": {"exec": 128}}
# Set an entry to an int to move a mode's switch on every GPU (None: the measured one: the
# switch file's, else the table's above).
# The reference (reference(), reference_linear()) follows the switch in force.
FUSED_MAX_TOKENS: Dict[str, Optional[int]] = {"exec": None, "compact": None}
_GPU_NAMES: Dict[int, str] = {}


def _gpu_name(index: int) -> str:
    name = _GPU_NAMES.get(index)
    if name is None:
        name = _GPU_NAMES[index] = torch.cuda.get_device_name(index)
    return name


def fused_max_tokens(mode: str, device=None) -> int:
    """The most tokens for which `mode`'s ("exec" or "compact") Linears on `device` (a CUDA
    torch.device or index; the current one if None) run the fused GEMM: FUSED_MAX_TOKENS[mode]
    if set, else the switch measured on that GPU by `python -m df11.tune` (the switch file,
    df11.switches), else the one df11 measured on a GPU of that name (FUSED_MAX_TOKENS_BY_GPU),
    else the default."""
    return switch_source(mode, device)[0]


def switch_source(mode: str, device=None) -> Tuple[int, str]:
    """(fused_max_tokens(mode, device), where it comes from: "FUSED_MAX_TOKENS", the switch
    file's path, "df11's table for <GPU>" or "the default for GPUs not measured")."""
    limit = FUSED_MAX_TOKENS[mode]
    if limit is not None:
        return int(limit), "FUSED_MAX_TOKENS"
    if device is None:
        index = torch.cuda.current_device()
    elif isinstance(device, int):
        index = device
    else:
        index = device.index if device.index is not None else torch.cuda.current_device()
    return _measured_source(mode, index)


def _measured_source(mode: str, index: int) -> Tuple[int, str]:
    """GPU `index`'s switch: the switch file's, else FUSED_MAX_TOKENS_BY_GPU's, else the default;
    within what the mode's C API takes; and which of them."""
    name = _gpu_name(index)
    limit = switches.measured(mode, name)
    source = switches.path()
    if limit is None:
        limit = FUSED_MAX_TOKENS_BY_GPU.get(name, {}).get(mode)
        source = f"df11's table for {name}"
    if limit is None:
        limit = DEFAULT_FUSED_MAX_TOKENS[mode]
        source = "the default for GPUs not measured"
    most = _capi.EXEC_MAX_BATCH if mode == "exec" else _capi.COMPACT_MAX_BATCH
    return min(int(limit), most), source


def _measured(mode: str, index: int) -> int:
    return _measured_source(mode, index)[0]


def layout_of(matrix) -> Layout:
    for layout in LAYOUTS.values():
        if isinstance(matrix, layout.matrix):
            return layout
    raise TypeError(f"df11: {type(matrix).__name__} is no layout's matrix")


def _round_up(n: int, a: int) -> int:
    return (n + a - 1) // a * a


@dataclass
class CallSite:
    """Linears launched together (siblings on one input, or one Linear)."""
    linears: List["ExecLinear"] = field(default_factory=list)
    status: Optional[torch.Tensor] = None  # 16 bytes on the device
    status_ptr: int = 0  # status.data_ptr()
    gemms: object = None  # (layout.gemm * n)
    cache: Optional[Tuple[torch.Tensor, int, Dict[int, torch.Tensor]]] = None

    @property
    def names(self) -> List[str]:
        return [lin.name for lin in self.linears]


class ExecState:
    """Per device: the blobs, the scratch for the BF16 path, the call sites' records."""

    def __init__(self, device: torch.device, layout: Layout = EXEC):
        self.device = device
        self.layout = layout
        self.blobs: List[torch.Tensor] = []
        self.scratch: Optional[torch.Tensor] = None
        self.status: Optional[torch.Tensor] = None
        self.sites: List[CallSite] = []
        self.linears: List[ExecLinear] = []
        # The scratch and the call sites' argument arrays serve one call at a time.
        self.lock = DeviceLock(device)

    def memory_bytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in
                   self.blobs + [x for x in (self.scratch, self.status) if x is not None])


class ExecLinear:
    """One nn.Linear whose weight is an execution-layout blob."""

    def __init__(self, module: torch.nn.Module, name: str, group_what: str, matrix,
                 state: ExecState):
        self.module = module
        self.name = name  # the member's tensor name
        self.group_what = group_what
        self.matrix = matrix
        self.rows, self.cols = matrix.rows, matrix.cols
        self.state = state
        self.device_index = state.device.index or 0
        self.site: Optional[CallSite] = None
        self.index = 0  # in its site
        self.key = -1
        self._lib = _capi.lib()
        self._gemm, self._to_bf16, _ = state.layout.calls(self._lib)
        self._out = (ctypes.c_void_p * 1)()
        self._single = (state.layout.gemm * 1)()  # this Linear alone (the traced op)
        self._single[0].w = matrix
        self.transient = False  # above the fused GEMM, a buffer of its own per call
        self.mode = state.layout.mode
        # This GPU's measured switch (FUSED_MAX_TOKENS[mode], when set, wins).
        self._measured_limit = _measured(self.mode, self.device_index)
        # The module's parameter dict, which the ExecLinearModule in its place shares: its
        # bias read per call without nn.Module's attribute lookup.
        self._params = module._parameters

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Eager (or captured in a CUDA graph) the op's body runs directly; a trace goes through
        # the custom op (ExecLinearModule.forward). At batch 1 this runs on the CPU's critical
        # path once per Linear: it reads nothing it can keep from load time (see run()).
        y = self._sibling_output(x)
        if y is not None:
            return y
        if current_device() != self.device_index:  # device_map="auto": the module's GPU
            with torch.cuda.device(self.device_index):
                return self.run(x, siblings=True)
        return self.run(x, siblings=True)

    def _sibling_output(self, x: torch.Tensor) -> Optional[torch.Tensor]:
        """This Linear's output if a sibling's launch on this same input tensor (unchanged since)
        computed it, else None. Without the lock: the record is one tuple read at once, and the
        pop of this Linear's entry is atomic, so a thread finds only its own input's output."""
        cached = self.site.cache
        if cached is None or cached[0] is not x or cached[1] != x._version or (
                x.requires_grad and torch.is_grad_enabled()):  # _run's error, not an output
            return None
        outs = cached[2]
        y = outs.pop(self.index, None)
        if y is not None and not outs and self.site.cache is cached:
            self.site.cache = None  # the last sibling: the input is no longer held
        return y

    def run(self, x: torch.Tensor, siblings: bool) -> torch.Tensor:
        # Called eagerly (forward) or as the custom op's body, never while tracing.
        lock = self.state.lock
        took = lock.acquire_running()
        try:
            return self._run(x, siblings)
        finally:
            if took:
                lock.release()

    def run_site(self, x: torch.Tensor) -> List[torch.Tensor]:
        """Every Linear of this one's call site on x, in the site's order."""
        with self.state.lock:
            return self._run(x, True, every=True)

    def _run(self, x: torch.Tensor, siblings: bool, every: bool = False):
        # At batch 1 this runs on the CPU's critical path once per launch: each attribute,
        # call and tensor made here is host time of every token (bench/exec_host.py).
        cols = self.cols
        shape = x.shape
        if x.dtype != torch.bfloat16 or shape[-1] != cols or x.get_device() != self.device_index:
            raise ValueError(f"df11 (exec): {self.name}: input {tuple(shape)} {x.dtype} on "
                             f"{x.device}, expected [..., {cols}] bfloat16 on "
                             f"{self.state.device}")
        if x.requires_grad and torch.is_grad_enabled():
            mode = self.state.layout.mode
            raise RuntimeError(f"df11 ({mode}): '{self.name}': a gradient would have to flow "
                               f"through this layer, and mode='{mode}' computes none (its GEMM "
                               "has no backward). Run without gradients (torch.no_grad(), as "
                               "generate does), or train in the default mode, whose gradients "
                               "equal BF16's")
        tokens = x.numel() // cols
        site = self.site
        limit = FUSED_MAX_TOKENS[self.mode]
        if limit is None:
            limit = self._measured_limit
        if tokens == 0 or tokens > limit:
            if every:
                return [m._wide(x, tokens) for m in site.linears]
            return self._wide(x, tokens)
        if siblings or len(site.linears) == 1:
            members, gemms = site.linears, site.gemms
        else:
            members, gemms = [self], self._single
        n = len(members)
        if n > 1 and not every:
            y = self._sibling_output(x)
            if y is not None:
                return y
        if x.is_contiguous():
            x_ptr = x.data_ptr()
        else:
            x2 = x.reshape(tokens, cols).contiguous()  # held until the launch is enqueued
            x_ptr = x2.data_ptr()
        lead = shape[:-1]
        outs = [x.new_empty((*lead, m.rows)) for m in members]  # x's dtype (BF16) and device
        for g, y in zip(gemms, outs):
            g.d_x = x_ptr
            g.d_y = y.data_ptr()
        rc = self._gemm(None, gemms, n, tokens, site.status_ptr, _capi.EXEC_STATUS_BYTES,
                        _capi.EXEC_KEEP_STATUS, raw_stream(self.device_index))
        if rc != 0:
            self._raise(rc)
        for m, y in zip(members, outs):
            bias = m._params.get("bias")
            if bias is not None:
                y.add_(bias)
        if every:
            return outs
        if n == 1:
            return outs[0]
        mine = outs[self.index]
        # The siblings' outputs wait for their own calls on this same input tensor.
        site.cache = (x, x._version, {i: y for i, y in enumerate(outs) if i != self.index})
        return mine

    def _wide(self, x: torch.Tensor, tokens: int) -> torch.Tensor:
        """No tokens, or more than the fused GEMM takes: the blob decoded into the scratch,
        then F.linear."""
        if tokens == 0:
            return x.new_empty((*x.shape[:-1], self.rows))
        scratch = (torch.empty(self.rows * self.cols, dtype=torch.bfloat16,
                               device=self.state.device)
                   if self.transient else self.state.scratch)
        self._out[0] = scratch.data_ptr()
        rc = self._to_bf16(
            None, ctypes.byref(self.matrix), self._out, 1, self.site.status_ptr,
            _capi.EXEC_STATUS_BYTES, _capi.EXEC_KEEP_STATUS, raw_stream(self.device_index))
        self._raise(rc)
        w = scratch[:self.rows * self.cols].view(self.rows, self.cols)
        return torch.nn.functional.linear(x, w, self._params.get("bias"))

    def _raise(self, rc: int) -> None:
        if rc != 0:
            raise Df11Error(rc, _capi.status_name(rc), f"{self.group_what}: '{self.name}' "
                            f"({self.state.layout.title}): the launch failed")


@torch.library.custom_op("df11::exec_linear", mutates_args=())
def exec_linear(x: torch.Tensor, key: int) -> torch.Tensor:
    """One traced Linear of mode "exec" / "compact" (ExecLinearModule.forward)."""
    return _LINEARS[key].run(x, siblings=False)


@exec_linear.register_fake
def _(x, key):
    return x.new_empty(*x.shape[:-1], _LINEARS[int(key)].rows)


@torch.library.custom_op("df11::exec_site", mutates_args=())
def exec_site(x: torch.Tensor, key: int) -> List[torch.Tensor]:
    """The traced siblings of a Linear (q/k/v, gate/up) on one input in one launch: every
    output of the Linear's call site, in the site's order (put in the graph by SiblingPass).
    Each is a new tensor, as a functional op's outputs must be."""
    return _LINEARS[key].run_site(x)


@exec_site.register_fake
def _(x, key):
    return [x.new_empty(*x.shape[:-1], m.rows) for m in _LINEARS[int(key)].site.linears]


def pair_siblings(graph: torch.fx.Graph) -> int:
    """Where a graph calls every Linear of a call site (q/k/v, gate/up) on one input, each once,
    through torch.ops.df11.exec_linear, one torch.ops.df11.exec_site takes their place (one
    launch for all), and each caller takes its own output from it. A sibling called on another
    input (as cross-attention calls k and v) or twice is left alone: then every member stays
    its own op. Returns how many sites were paired."""
    single = torch.ops.df11.exec_linear.default
    calls: Dict[Tuple[torch.fx.Node, int], List[Tuple[int, torch.fx.Node]]] = {}
    order = {node: i for i, node in enumerate(graph.nodes)}
    for node in graph.nodes:
        if node.op != "call_function" or node.target is not single:
            continue
        x, key = node.args[0], node.args[1]
        lin = _LINEARS.get(key) if isinstance(key, int) else None
        if lin is None or lin.site is None or len(lin.site.linears) < 2:
            continue
        calls.setdefault((x, id(lin.site)), []).append((lin.index, node))
    paired = 0
    for (x, _), members in calls.items():
        site = _LINEARS[members[0][1].args[1]].site
        if sorted(i for i, _ in members) != list(range(len(site.linears))):
            continue
        members.sort()
        first = min((node for _, node in members), key=order.__getitem__)
        with graph.inserting_before(first):
            op = graph.call_function(torch.ops.df11.exec_site.default,
                                     (x, members[0][1].args[1]))
            if all("val" in node.meta for _, node in members):
                op.meta["val"] = [node.meta["val"] for _, node in members]
            for i, node in members:
                out = graph.call_function(operator.getitem, (op, i))
                out.meta.update(node.meta)
                node.replace_all_uses_with(out)
        for _, node in members:
            graph.erase_node(node)
        paired += 1
    return paired


class SiblingPass:
    """Inductor's post-grad graph pass (torch._inductor.config.post_grad_custom_pre_pass) that
    runs pair_siblings, after the pass that was there before it (`inner`, if any). Dynamo then
    guards each Linear on its key alone: the pairing reads no Python state at trace time, which
    would be guarded on every call of the compiled code. Its uuid (for Inductor's caches)
    covers the call sites of the Linears registered now, which decide what it does. The class
    Inductor gets is this one made a CustomGraphPass (install_pass), so that importing df11
    does not import Inductor."""

    VERSION = "df11-siblings-1"

    def __init__(self, inner=None):
        self.inner = inner

    def __call__(self, graph: torch.fx.Graph) -> None:
        if self.inner is not None:
            self.inner(graph)
        pair_siblings(graph)

    def uuid(self):
        h = hashlib.sha256(self.VERSION.encode())
        for key, lin in sorted(_LINEARS.items()):
            site = lin.site
            h.update(f"{key}:{lin.index}/{len(site.linears) if site else 0};".encode())
        inner = self.inner
        if inner is not None:
            inner_id = inner.uuid() if hasattr(inner, "uuid") else None
            if inner_id is None:
                return None  # a pass without an id: Inductor bypasses its caches
            h.update(repr(inner_id).encode())
        return h.hexdigest()


_PASS_CLASS: Optional[type] = None


def install_pass() -> None:
    """Puts SiblingPass into Inductor's post-grad passes, once, keeping a pass already set
    there (it runs first)."""
    global _PASS_CLASS
    from torch._inductor import config
    if _PASS_CLASS is None:
        try:
            from torch._inductor.custom_graph_pass import CustomGraphPass
            bases: tuple = (SiblingPass, CustomGraphPass)
        except ImportError:  # an older torch takes a plain callable (and skips its FX cache)
            bases = (SiblingPass,)
        _PASS_CLASS = type("SiblingPass", bases, {"__module__": __name__})
    current = config.post_grad_custom_pre_pass
    if isinstance(current, SiblingPass):
        return
    if isinstance(current, (list, tuple)):
        if not any(isinstance(p, SiblingPass) for p in current):
            config.post_grad_custom_pre_pass = type(current)(list(current) + [_PASS_CLASS()])
        return
    config.post_grad_custom_pre_pass = _PASS_CLASS(current)


class ExecWeight:
    """A weight matrix made of consecutive members' blobs (rows concatenated: one member, or
    the q/k/v or gate/up members a serving engine fuses into one layer), served through
    torch.ops.df11.exec_weight_linear: at most fused_max_tokens() tokens, the fused GEMM from the
    blobs (one launch for all members); above, the blobs decoded into a new BF16 tensor and
    torch's F.linear on it, the matmul a BF16 layer makes. `blob` keeps the blobs alive; the
    status record (reset here, kept across calls) is read by check()."""

    def __init__(self, blob: torch.Tensor, mats: list, what: str):
        cols = {m.cols for m in mats}
        if len(cols) != 1:
            raise Df11Error.named("bad_shape", f"{what}: members of {sorted(cols)} columns "
                                  "cannot form one matrix")
        self.blob = blob
        self.what = what
        self.device = blob.device
        self.device_index = blob.device.index or 0
        self.n = len(mats)
        self.cols = mats[0].cols
        self.row_counts = [m.rows for m in mats]
        self.rows = sum(self.row_counts)
        self.shape = (self.rows, self.cols)
        self.layout = layout_of(mats[0])
        self._measured_limit = _measured(self.layout.mode, self.device_index)
        self.mats = (self.layout.matrix * self.n)(*mats)
        self.gemms = (self.layout.gemm * self.n)()
        for i, m in enumerate(mats):
            self.gemms[i].w = m
        self._outs = (ctypes.c_void_p * self.n)()
        self._lib = _capi.lib()
        self._gemm, self._to_bf16, self._status_sync = self.layout.calls(self._lib)
        fn = self.layout.gemm_ld_fn
        self._gemm_ld = getattr(self._lib, fn) if fn is not None else None
        self.status = torch.empty(_capi.EXEC_STATUS_BYTES, dtype=torch.uint8, device=self.device)
        with torch.cuda.device(self.device):
            self._raise(self._lib.df11_cuda_exec_status_reset(
                self.status.data_ptr(), _capi.EXEC_STATUS_BYTES, raw_stream(self.device_index)))
        # The ctypes argument arrays serve one call at a time; the outputs are fresh tensors, so
        # nothing on the device is shared between calls.
        self.lock = threading.Lock()

    @property
    def nbytes(self) -> int:
        return sum(m.bytes for m in self.mats)

    def decode(self) -> torch.Tensor:
        """The weight as a new BF16 [rows, cols] tensor (torch's current stream)."""
        w = torch.empty(self.shape, dtype=torch.bfloat16, device=self.device)
        with self.lock:
            at = w.data_ptr()
            for i, r in enumerate(self.row_counts):
                self._outs[i] = at
                at += 2 * r * self.cols
            self._raise(self._to_bf16(
                None, self.mats, self._outs, self.n, self.status.data_ptr(),
                _capi.EXEC_STATUS_BYTES, _capi.EXEC_KEEP_STATUS, raw_stream(self.device_index)))
        return w

    def linear(self, x: torch.Tensor, bias: Optional[torch.Tensor]) -> torch.Tensor:
        if x.dtype != torch.bfloat16 or x.shape[-1] != self.cols:
            raise ValueError(f"df11 (exec): {self.what}: input {tuple(x.shape)} {x.dtype}, "
                             f"expected [..., {self.cols}] bfloat16")
        tokens = x.numel() // self.cols
        limit = FUSED_MAX_TOKENS[self.layout.mode]
        if limit is None:
            limit = self._measured_limit
        if tokens > limit or tokens == 0:
            return torch.nn.functional.linear(x, self.decode(), bias)
        x2 = x.reshape(tokens, self.cols)
        if not x2.is_contiguous():
            x2 = x2.contiguous()
        # The members' outputs side by side in Y's rows: one row (a token), one member, or
        # written there with Y's row stride; else each into its own tensor, concatenated after.
        if self.n == 1 or tokens == 1 or self._gemm_ld is not None:
            y = x.new_empty((tokens, self.rows))
            parts = None
        else:
            parts = [x.new_empty((tokens, r)) for r in self.row_counts]
        with self.lock:
            at = 0
            for i, r in enumerate(self.row_counts):
                g = self.gemms[i]
                g.d_x = x2.data_ptr()
                g.d_y = parts[i].data_ptr() if parts is not None else y.data_ptr() + 2 * at
                at += r
            stream = raw_stream(self.device_index)
            if self._gemm_ld is not None:
                rc = self._gemm_ld(None, self.gemms, self.n, tokens, self.rows,
                                   self.status.data_ptr(), _capi.EXEC_STATUS_BYTES,
                                   _capi.EXEC_KEEP_STATUS, stream)
            else:
                rc = self._gemm(None, self.gemms, self.n, tokens, self.status.data_ptr(),
                                _capi.EXEC_STATUS_BYTES, _capi.EXEC_KEEP_STATUS, stream)
            self._raise(rc)
        if parts is not None:
            y = torch.cat(parts, dim=1)
        if bias is not None:
            y.add_(bias)
        return y.view(*x.shape[:-1], self.rows)

    def check(self) -> None:
        """Waits for torch's current stream; Df11Error if any call since the reset found a
        blob whose codes disagree with its exception offsets."""
        rc = self._status_sync(None, self.status.data_ptr(), raw_stream(self.device_index))
        if rc != 0:
            raise Df11Error(rc, _capi.status_name(rc), f"{self.what} ({self.layout.title}): "
                            "a blob does not decode")

    def _raise(self, rc: int) -> None:
        if rc != 0:
            raise Df11Error(rc, _capi.status_name(rc), f"{self.what} ({self.layout.title}): "
                            "the launch failed")


_WEIGHTS: Dict[int, ExecWeight] = {}


def register_weight(key: int, weight: ExecWeight) -> None:
    _WEIGHTS[key] = weight


def unregister_weight(key: int) -> None:
    _WEIGHTS.pop(key, None)


@torch.library.custom_op("df11::exec_weight_linear", mutates_args=())
def exec_weight_linear(x: torch.Tensor, bias: Optional[torch.Tensor], key: int) -> torch.Tensor:
    """F.linear(x, W, bias) for the ExecWeight registered under `key` (ExecWeight.linear)."""
    return _WEIGHTS[key].linear(x, bias)


@exec_weight_linear.register_fake
def _(x, bias, key):
    return x.new_empty(*x.shape[:-1], _WEIGHTS[int(key)].rows)


def supported(device: torch.device) -> bool:
    """Where the execution layout runs: CUDA GPUs (libdf11's kernels)."""
    return device.type == "cuda"


def eligible(modules: Dict[str, torch.nn.Module], targets) -> bool:
    """A group can run from the layout if every member is the weight of an nn.Linear whose
    forward is nn.Linear's own (ExecLinearModule takes its place)."""
    for t in targets:
        module = modules.get(t.module)
        if t.fused or t.held or module is None or not codes_as_linear(module, t.attr):
            return False
    return True


class Scratch:
    """The transient device memory of transcodes of several groups, allocated once for the
    largest (before any blob, so that the blobs lie in segments of their own and the scratch's
    segment goes back to the device whole when it is dropped)."""

    def __init__(self, folder: _capi.Model, groups: List[int], dev: torch.device,
                 layout: Layout):
        L = _capi.lib()
        fn = (L.df11_cuda_compact_workspace_bytes if layout is COMPACT
              else L.df11_cuda_exec_workspace_bytes)
        work = coded = 0
        for g in groups:
            n, ws = ctypes.c_size_t(), ctypes.c_size_t()
            folder._check(fn(folder.handle, g, ctypes.byref(n), ctypes.byref(ws)))
            work = max(work, ws.value)
            coded = max(coded, _coded_layout(folder, g)[1])
        self.work = torch.empty(max(work, 16), dtype=torch.uint8, device=dev)
        self.coded = torch.empty(max(coded, ALIGN_BYTES), dtype=torch.uint8, device=dev)


def _coded_layout(folder: _capi.Model, g: int) -> Tuple[Dict[int, Tuple[int, int, int]], int]:
    """Where group g's device parts go in one buffer ({part: (offset, address, bytes)}), and
    its size."""
    layout, size = {}, 0
    for part in _capi.DEVICE_PARTS:
        addr, nbytes = folder.group_part(g, part)
        layout[part] = (size, addr, nbytes)
        size = _round_up(size + nbytes, ALIGN_BYTES)
    return layout, size


def transcode_group(folder: _capi.Model, g: int, dev: torch.device,
                    parts: Optional[Dict[int, int]] = None, layout: Layout = EXEC,
                    scratch: Optional[Scratch] = None) -> Tuple[torch.Tensor, list, List[str]]:
    """Coded group `g` of `folder` transcoded on `dev` (torch's current device and stream) into
    `layout`: one resident uint8 tensor holding every member's blob (each 256-byte aligned; in
    the compact layout each followed by its decode table), the members' matrices (layout.matrix)
    pointing into it, and their tensor names, in the group's concatenation order. The coded
    parts (copied here, or already on `dev` at `parts`: {part: address}, a coded.GpuGroup's)
    and the group's BF16 workspace are transient (in `scratch` where given). The measure
    decodes and checks the group (Df11Error naming the file and group if a stream does not
    decode)."""
    L = _capi.lib()
    stream = torch.cuda.current_stream(dev).cuda_stream
    what = f"{folder.group_file(g)}: group '{folder.group_name(g)}'"
    compact = layout is COMPACT
    T = _compact_encoder(what) if compact else None
    n, ws = ctypes.c_size_t(), ctypes.c_size_t()
    folder._check((L.df11_cuda_compact_workspace_bytes if compact else
                   L.df11_cuda_exec_workspace_bytes)(folder.handle, g, ctypes.byref(n),
                                                     ctypes.byref(ws)))
    coded = None
    if parts is None:
        layout_of_parts, size = _coded_layout(folder, g)
        coded = (scratch.coded[:size] if scratch is not None else
                 torch.empty(max(size, ALIGN_BYTES), dtype=torch.uint8, device=dev))
        for o, addr, nbytes in layout_of_parts.values():
            coded[o:o + nbytes].copy_(_mapped(addr, nbytes))
        parts = {part: coded.data_ptr() + o for part, (o, _, _) in layout_of_parts.items()}
    p = parts
    dgroup = _capi.CudaGroup(p[_capi.PART_LUTS], p[_capi.PART_ENCODED_EXPONENT],
                             p[_capi.PART_SIGN_MANTISSA], p[_capi.PART_OUTPUT_POSITIONS],
                             p[_capi.PART_GAPS], None)
    work = (scratch.work if scratch is not None else
            torch.empty(max(ws.value, 16), dtype=torch.uint8, device=dev))
    mats = (layout.matrix * n.value)()
    names = (ctypes.c_char_p * n.value)()
    if compact:
        sym = _capi.COMPACT_SYMBOLS
        counts = (ctypes.c_uint64 * (sym * max(n.value, 1)))()
        folder._check(L.df11_cuda_compact_count(folder.handle, g, ctypes.byref(dgroup),
                                                work.data_ptr(), ws.value, stream, counts,
                                                n.value))  # synchronises
        lengths = (ctypes.c_uint8 * (sym * max(n.value, 1)))()
        for k in range(n.value):
            _compact_lengths(T, counts, lengths, k, f"{what}: member {k}", at=sym * k)
        folder._check(L.df11_cuda_compact_measure(folder.handle, g, work.data_ptr(), ws.value,
                                                  lengths, stream, mats, names, n.value))
    else:
        folder._check(L.df11_cuda_exec_measure(folder.handle, g, ctypes.byref(dgroup),
                                               work.data_ptr(), ws.value, stream, mats, names,
                                               n.value))  # synchronises
    del coded
    blob = _blob_for(mats, layout, dev)
    folder._check((L.df11_cuda_compact_pack if compact else L.df11_cuda_exec_pack)(
        folder.handle, g, work.data_ptr(), ws.value, mats, n.value, stream))
    del work  # the allocator reuses it only after the pack, in stream order
    out = [layout.matrix.from_buffer_copy(m) for m in mats]
    if not out:
        raise Df11Error.named("bad_shape", f"{what}: no coded members to transcode")
    return blob, out, [nm.decode() for nm in names]


def pack_bf16(weights: List[torch.Tensor], what: str,
              layout: Layout = EXEC) -> Tuple[torch.Tensor, list]:
    """BF16 [rows, cols] CUDA tensors (one device) packed into `layout` on their device
    (torch's current stream there), with no DF11 group in between (df11_cuda_exec_bf16_* and
    df11_cuda_compact_bf16_*): one resident uint8 tensor holding every blob (each 256-byte
    aligned; in the compact layout each followed by its decode table) and the matrices pointing
    into it, in the order given. The blobs are those a DF11 group of the same weights transcodes
    to (in the compact layout with the code df11's encoder chooses, as there). Df11Error naming
    `what` if the layout cannot hold one (2^32 exceptions or more, a shape out of range)."""
    if not weights:
        raise Df11Error.named("bad_shape", f"{what}: no weights to pack")
    dev = weights[0].device
    for w in weights:
        if w.device != dev or w.dtype != torch.bfloat16 or w.dim() != 2 or dev.type != "cuda":
            raise ValueError(f"df11 ({layout.mode}): {what}: expected 2-D bfloat16 CUDA tensors "
                             f"on one device, got {tuple(w.shape)} {w.dtype} on {w.device}")
    L = _capi.lib()
    compact = layout is COMPACT
    T = _compact_encoder(what) if compact else None
    weights = [w.contiguous() for w in weights]
    n = len(weights)
    src = (_capi.ExecSource * n)(*[_capi.ExecSource(w.data_ptr(), w.shape[0], w.shape[1])
                                   for w in weights])
    stream = torch.cuda.current_stream(dev).cuda_stream

    def check(rc: int, step: str) -> None:
        if rc != 0:
            raise Df11Error(rc, _capi.status_name(rc), f"{what}: {step} ({layout.title})")

    mats = (layout.matrix * n)()
    ws = ctypes.c_size_t()
    sym = _capi.COMPACT_SYMBOLS
    lengths = (ctypes.c_uint8 * (sym * n))()
    if compact:
        work_bytes = 16
        for w in weights:
            check(L.df11_cuda_compact_bf16_workspace_bytes(None, w.shape[0], w.shape[1],
                                                           ctypes.byref(ws)), "workspace")
            work_bytes = max(work_bytes, ws.value)
        work = torch.empty(work_bytes, dtype=torch.uint8, device=dev)
        counts = (ctypes.c_uint64 * sym)()
        for k in range(n):
            check(L.df11_cuda_compact_bf16_count(None, ctypes.byref(src[k]), work.data_ptr(),
                                                 work_bytes, stream, counts), "count")  # syncs
            _compact_lengths(T, counts, lengths, k, f"{what}: matrix {k}")
            check(L.df11_cuda_compact_bf16_measure(
                None, ctypes.byref(src[k]), ctypes.byref(lengths, sym * k), work.data_ptr(),
                work_bytes, stream, ctypes.byref(mats[k])), "measure")  # syncs
    else:
        check(L.df11_cuda_exec_bf16_workspace_bytes(None, src, n, ctypes.byref(ws)), "workspace")
        work_bytes = max(ws.value, 16)
        work = torch.empty(work_bytes, dtype=torch.uint8, device=dev)
        check(L.df11_cuda_exec_bf16_measure(None, src, n, work.data_ptr(), work_bytes, stream,
                                            mats), "measure")  # synchronises
    blob = _blob_for(mats, layout, dev)
    if compact:
        for k in range(n):
            check(L.df11_cuda_compact_bf16_pack(
                None, ctypes.byref(src[k]), ctypes.byref(lengths, sym * k), work.data_ptr(),
                work_bytes, ctypes.byref(mats[k]), stream), "pack")
    else:
        check(L.df11_cuda_exec_bf16_pack(None, src, n, work.data_ptr(), work_bytes, mats,
                                         stream), "pack")
    del work, weights  # the allocator reuses them only after the pack, in stream order
    return blob, [layout.matrix.from_buffer_copy(m) for m in mats]


def _compact_encoder(what: str):
    """libdf11-tools, which chooses each matrix's compact code (Df11Error if not installed)."""
    from . import _tools
    if not _tools.available():
        raise Df11Error.named("unsupported", f"{what}: mode='compact' chooses each matrix's "
                              "code with df11's encoder (libdf11-tools), which is not "
                              "installed")
    return _tools.lib()


def _compact_lengths(T, counts, lengths, k: int, what: str, at: int = 0) -> None:
    """The code df11's encoder chooses for the exponent counts at counts[at:] into
    lengths[k * COMPACT_SYMBOLS:]."""
    sym = _capi.COMPACT_SYMBOLS
    rc = T.df11_tools_compact_lengths((ctypes.c_uint64 * sym).from_buffer(counts, 8 * at),
                                      (ctypes.c_uint8 * sym).from_buffer(lengths, sym * k))
    if rc != 0:
        raise Df11Error(rc, _capi.status_name(rc), f"{what}: no code for its exponents")


def _blob_for(mats, layout: Layout, dev: torch.device) -> torch.Tensor:
    """One uint8 tensor for the measured matrices' blobs (each 256-byte aligned; in the
    compact layout each followed by its decode table), their d_blob (and d_table) set."""
    table = _capi.COMPACT_TABLE_BYTES if layout is COMPACT else 0
    sizes = [_round_up(m.bytes, ALIGN_BYTES) + table for m in mats]
    blob = torch.empty(max(sum(sizes), ALIGN_BYTES), dtype=torch.uint8, device=dev)
    at = 0
    for m, sz in zip(mats, sizes):
        m.d_blob = blob.data_ptr() + at
        if table:
            m.d_table = m.d_blob + sz - table
        at += sz
    return blob


def transcode(engine, model: torch.nn.Module, folder: _capi.Model, state: ExecState, modules,
              items, head: Optional[str] = None) -> None:
    """Transcodes the groups of `items` ([(group, targets)]) on state.device into resident
    blobs, one group at a time (transcode_group), and puts an ExecLinearModule over each
    member's blob in place of its Linear (in `model` and in `modules`). The scratch is sized
    for the largest matrix but the output head's (the module named `head`), unless the head's
    is no larger: the head then decodes into a buffer of its own per call (ExecLinear._wide)."""
    L = _capi.lib()
    dev = state.device
    stream = torch.cuda.current_stream(dev).cuda_stream
    largest = 0
    heads: List[ExecLinear] = []
    install_pass()
    with torch.cuda.device(dev):
        scratch = Scratch(folder, [group.index for group, _ in items], dev, state.layout)
        for group, targets in items:
            blob, mats, _ = transcode_group(folder, group.index, dev, layout=state.layout,
                                            scratch=scratch)
            if len(mats) != len(group.members):
                raise Df11Error.named("bad_shape",
                                      f"{group.what}: {len(mats)} coded members, the "
                                      f"folder lists {len(group.members)}")
            state.blobs.append(blob)
            for member, target, m in zip(group.members, targets, mats):
                module = modules[target.module]
                if (m.rows, m.cols) != (module.out_features, module.in_features):
                    raise Df11Error.named("bad_shape",
                                          f"{group.what}: '{member.name}' is "
                                          f"{m.rows} x {m.cols}, the model's Linear is "
                                          f"{module.out_features} x {module.in_features}")
                lin = ExecLinear(module, member.name, group.what, m, state)
                state.linears.append(lin)
                if head is not None and target.module == head:
                    heads.append(lin)
                else:
                    largest = max(largest, m.rows * m.cols)
                modules[target.module] = _install(engine, model, module, lin)
            _make_sites(state, [lin for lin in state.linears[-len(group.members):]])
        del scratch  # in stream order, after the last pack
        # Its segments go back to the device before the resident scratch is allocated, which
        # would otherwise take a part of one and leave the rest cached, unusable by the blobs'
        # neighbours (0.6 GB on an 8B model).
        torch.cuda.empty_cache()
        for lin in heads:
            lin.transient = lin.rows * lin.cols > largest
            if not lin.transient:
                largest = max(largest, lin.rows * lin.cols)
        state.scratch = torch.empty(max(largest, 1), dtype=torch.bfloat16, device=dev)
        state.status = torch.empty(_capi.EXEC_STATUS_BYTES * max(len(state.sites), 1),
                                   dtype=torch.uint8, device=dev)
        for i, site in enumerate(state.sites):
            site.status = state.status[i * 16:(i + 1) * 16]
            site.status_ptr = site.status.data_ptr()
            folder._check(L.df11_cuda_exec_status_reset(site.status.data_ptr(), 16, stream))


def _make_sites(state: ExecState, linears: List[ExecLinear]) -> None:
    by_parent: Dict[str, Dict[str, ExecLinear]] = {}
    for lin in linears:
        parent, _, attr = lin.name.rpartition(".weight")[0].rpartition(".")
        by_parent.setdefault(parent, {})[attr] = lin
    done = set()
    for parent, attrs in by_parent.items():
        for names in SIBLINGS:
            group = [attrs[a] for a in names if a in attrs and id(attrs[a]) not in done]
            if len(group) > 1 and len({g.cols for g in group}) == 1:
                _add_site(state, group)
                done.update(id(g) for g in group)
    for lin in linears:
        if id(lin) not in done:
            _add_site(state, [lin])


def _add_site(state: ExecState, linears: List[ExecLinear]) -> None:
    site = CallSite(list(linears))
    site.gemms = (state.layout.gemm * len(linears))()
    for i, lin in enumerate(linears):
        lin.site, lin.index = site, i
        site.gemms[i].w = lin.matrix
    state.sites.append(site)


def _install(engine, model: torch.nn.Module, module: torch.nn.Linear,
             lin: ExecLinear) -> ExecLinearModule:
    """An ExecLinearModule over the blob in the Linear's place (its weight a CodedWeight: code
    that reads weight.shape, .dtype or .device still works, and nothing can compute with
    values that do not exist)."""
    key = next(_KEYS)
    _LINEARS[key] = lin
    lin.key = key
    new = ExecLinearModule(module, lin.name, lin.state.device, lin)
    lin.module = new
    replace_module(model, module, new)
    engine.views.append((new, "weight"))
    engine.exec_keys.append(key)
    return new


def unregister(keys: List[int]) -> None:
    for k in keys:
        _LINEARS.pop(k, None)


def check(folder: _capi.Model, state: ExecState) -> None:
    """Reads every call site's record (the caller has synchronised the device's work)."""
    if state.status is None or not state.sites:
        return
    kinds = state.status.view(torch.int32).view(-1, 4)[:, 2].cpu()  # bytes 8..11 of each record
    if not bool((kinds != 0).any()):
        return
    stream = torch.cuda.current_stream(state.device).cuda_stream
    L = _capi.lib()
    for site, k in zip(state.sites, kinds.tolist()):
        if k == 0:
            continue
        rc = state.layout.calls(L)[2](folder.handle, site.status.data_ptr(), stream)
        if rc != 0:
            msg = _capi._text(L.df11_model_errmsg(folder.handle))
            lin = site.linears[0]
            raise Df11Error(rc, _capi.status_name(rc), f"{lin.group_what}: {state.layout.title} of "
                            f"{', '.join(site.names)}: {msg}")


def reference(model: torch.nn.Module, mode: str = "exec") -> torch.nn.Module:
    """Puts df11's reference GEMM (df11_cuda_exec_reference_gemm: the execution layout's
    products and order, on BF16 weights) into every CUDA BF16 nn.Linear of a model, the way
    `mode` ("exec" or "compact") computes: at most fused_max_tokens(mode, its GPU) tokens
    through the reference, above through F.linear, bias added after. A BF16 model so patched
    gives logits torch.equal to its DF11 model's in that mode on the same GPU. Returns the
    model."""
    for module in model.modules():
        if not isinstance(module, torch.nn.Linear) or module.weight.dtype != torch.bfloat16:
            continue
        if module.weight.device.type != "cuda":
            continue
        module.forward = _reference_forward(module, fused_max_tokens(mode, module.weight.device))
    return model


def _reference_forward(module: torch.nn.Linear, max_tokens: int):

    def forward(x: torch.Tensor) -> torch.Tensor:
        if torch.compiler.is_compiling():
            return torch.ops.df11.exec_reference_linear(x, module.weight, module.bias, max_tokens)
        return reference_linear(x, module.weight, module.bias, max_tokens)
    return forward


def reference_linear(x: torch.Tensor, weight: torch.Tensor,
                     bias: Optional[torch.Tensor] = None,
                     max_tokens: Optional[int] = None) -> torch.Tensor:
    """What the execution layout computes, on a BF16 CUDA weight: at most `max_tokens` tokens
    (fused_max_tokens("exec", x's GPU) if None; fused_max_tokens("compact", ...) for the compact
    layout), df11_cuda_exec_reference_gemm (the layout's products and order) with the bias added
    after; above, F.linear. torch.ops.df11.exec_reference_linear is the same, for traced code."""
    if max_tokens is None:
        max_tokens = fused_max_tokens("exec", x.device)
    rows, cols = weight.shape
    tokens = x.numel() // cols
    if tokens == 0 or tokens > max_tokens:
        return torch.nn.functional.linear(x, weight, bias)
    x2 = x.reshape(tokens, cols).contiguous()
    y = torch.empty(*x.shape[:-1], rows, dtype=torch.bfloat16, device=x.device)
    rc = _capi.lib().df11_cuda_exec_reference_gemm(None, weight.contiguous().data_ptr(), rows,
                                                   cols, x2.data_ptr(), y.data_ptr(), tokens,
                                                   raw_stream(x.device.index or 0))
    if rc != 0:
        raise Df11Error(rc, _capi.status_name(rc), "df11_cuda_exec_reference_gemm failed")
    if bias is not None:
        y.add_(bias)
    return y


@torch.library.custom_op("df11::exec_reference_linear", mutates_args=())
def exec_reference_linear(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor],
                          max_tokens: int = -1) -> torch.Tensor:
    return reference_linear(x, weight, bias, None if max_tokens < 0 else max_tokens)


@exec_reference_linear.register_fake
def _(x, weight, bias, max_tokens=-1):
    return x.new_empty(*x.shape[:-1], weight.shape[0])


def bits_per_weight(state: ExecState) -> float:
    weights = sum(lin.rows * lin.cols for lin in state.linears)
    blob_bytes = sum(lin.matrix.bytes for lin in state.linears)
    return 8 * blob_bytes / max(weights, 1) if weights else math.nan
