"""The decode as a torch custom op (torch.library), so that torch can trace and capture it.

`torch.ops.df11.decode_into(buffer, key)` decodes the coded group that `key` names (a slot of
`_DECODERS`, filled at load time) into its place in `buffer`, the device's decode buffer (the
group's slice starts at the decoder's `offset`):
  - CUDA: df11_cuda_decode_and_copy_status on torch's current stream, into the buffer the plan
    was made with and the group's workspace (allocated through torch's allocator at load),
    with the copy of its status into pinned host memory: no allocation, no host
    synchronisation. Inside a CUDA graph capture both are recorded and the Python here never
    runs again on replay. With cpu_offload the coded bytes are first copied from pinned host
    memory to the device's staging buffer, on the same stream.
  - CPU: df11_decode_group (df11's multi-threaded CPU decoder, with its checksums).
The op mutates `buffer` and nothing else it is given: the engine marks the buffer as a static
address (torch._dynamo.mark_static_address), so under torch.compile the only mutated graph
input is a static one, which Inductor's CUDA graph trees capture ("mutation on static inputs"),
and the weights the module reads are views of that same tensor taken after the op, so the
traced graph orders them after the decode. The workspace and the status slot are the
decoder's own (hidden from the graph, used in stream order). The fake implementation does
nothing, which is what torch.compile needs to trace it.

`torch.ops.df11.reads_done(buffer, reads)` runs nothing. A unit's forward hook calls it, when
traced, with the outputs of the unit's CodedLinear modules: it "mutates" the buffer after
those matmuls, so the next unit's decode (which takes the buffer it returns) is ordered after
every read of the previous contents. Without it, Inductor's passes that move nodes next to
their users (reorder_for_locality) may hoist a decode above the previous unit's matmuls, and
the reinplacing pass then keeps the buffer correct only by cloning it before each decode.

`torch.ops.df11.embed_rows(ids, key)` is an input embedding's lookup served from its coded
group (decoders.RowsDecoder), as two new tensors: the rows, one per id in order ((ids.numel(),
hidden) BF16 from torch's allocator, filled by df11_cuda_decode_rows_and_copy_status on
torch's current stream: only the rows the ids name are decoded; no host synchronisation), and
their positions (arange(ids.numel()) shaped as ids). Its fakes are empty tensors of those
shapes. On the CPU the same op is served by df11_decode_group_range, one call per distinct id.
A traced lookup is F.embedding(positions, rows) (decoders.RowsLookup): the graph then gathers
the embedding's output where the BF16 model's graph gathers it from its weight, so that
Inductor fuses and rounds the first block's work as it does for the BF16 model (an opaque op
that returned the output itself made it round the residual stream differently).

`torch.ops.df11.linear_parts(x, key)` is a Linear whose weight is decoded within the op into
the device's decode buffer (decoders.PartsDecoder, modules.PartsLinear: a block decoded in
parts, Linear by Linear): F.linear(x, W), with no tensor of the whole block. Its fake returns
an empty (*x.shape[:-1], out_features).

Every fake here and in coded.py / exec_mode.py reads its registry with int(key): when the same
code is traced again with another key, torch.compile makes the key symbolic, and int() then
specialises it (one graph per key) where a symbolic key would fail to hash.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import torch

# key -> an object with decode_into(buffer) (decoders.CudaDecoder / decoders.CpuDecoder),
# lookup(ids) (decoders.RowsDecoder / decoders.CpuRowsDecoder) or linear(x)
# (decoders.PartsDecoder).
_DECODERS: Dict[int, object] = {}
_next_key = [0]


# What a traced forward reaches by key (modules.CodedLinear, hooks.DecodeMode): a device's decode
# buffer (BUFFERS) and a unit's list of its CodedLinear outputs in the forward being traced
# (READS). Dynamo guards each distinct path by which a traced forward reaches an object, with an
# aliasing guard for every further path to the same object, and evaluates them all on every
# call of the compiled code: reached as BUFFERS[key], the buffer every unit of a device shares is
# one path, where an attribute per module and per hook made hundreds on an 8B Llama.
BUFFERS: Dict[int, torch.Tensor] = {}
READS: Dict[int, List[torch.Tensor]] = {}
# The constants a traced forward needs (a CodedLinear's slice of the buffer, a unit's decode
# keys), each read through plan(key): dynamo then guards only the key, where reading the same
# values from a module's or a hook's attributes costs a guard per attribute, tuple and list on
# every call (3 per CodedLinear and about 14 per unit's hook on a Llama).
PLANS: Dict[int, tuple] = {}


@torch.compiler.assume_constant_result
def plan(key: int) -> tuple:
    """The constant tuple registered under `key` in PLANS. Traced, dynamo calls it once and keeps
    the result as a constant, guarding `key` alone: a plan never changes once registered."""
    return PLANS[key]


def register(decoder, table: Optional[dict] = None) -> int:
    """A new key (unique across the tables) for `decoder` in _DECODERS, or for any object in
    `table` (BUFFERS, READS, PLANS)."""
    key = _next_key[0]
    _next_key[0] += 1
    (_DECODERS if table is None else table)[key] = decoder
    return key


def register_at(key: int, decoder) -> int:
    """`decoder` in _DECODERS under a key the caller chose: one that is the same in every
    process that loads the same layer (coded.weight_key), for a graph that a compile cache
    (vLLM's) made in one process and loads in another, with the key as a constant."""
    _DECODERS[key] = decoder
    return key


def unregister(key: int) -> None:
    for table in (_DECODERS, BUFFERS, READS, PLANS):
        table.pop(key, None)


@torch.library.custom_op("df11::decode_into", mutates_args=("buffer",))
def decode_into(buffer: torch.Tensor, key: int) -> None:
    _DECODERS[key].decode_into(buffer)


@decode_into.register_fake
def _(buffer, key):
    return None


@torch.library.custom_op("df11::reads_done", mutates_args=("buffer",))
def reads_done(buffer: torch.Tensor, reads: List[torch.Tensor]) -> None:
    """Runs nothing: in a traced graph it stands for the end of a unit's use of the buffer."""


@reads_done.register_fake
def _(buffer, reads):
    return None


@torch.library.custom_op("df11::embed_rows", mutates_args=())
def embed_rows(ids: torch.Tensor, key: int) -> Tuple[torch.Tensor, torch.Tensor]:
    n = ids.numel()
    rows = _DECODERS[key].lookup(ids.reshape(n))
    return rows, torch.arange(n, device=ids.device).view(ids.shape)


@embed_rows.register_fake
def _(ids, key):
    return (ids.new_empty((ids.numel(), _DECODERS[int(key)].row_elements), dtype=torch.bfloat16),
            ids.new_empty(ids.shape, dtype=torch.int64))


@torch.library.custom_op("df11::linear_parts", mutates_args=())
def linear_parts(x: torch.Tensor, key: int) -> torch.Tensor:
    return _DECODERS[key].linear(x)


@linear_parts.register_fake
def _(x, key):
    return x.new_empty((*x.shape[:-1], _DECODERS[int(key)].out_features), dtype=torch.bfloat16)
