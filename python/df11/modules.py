"""DF11 modules: layers whose weights are members of a coded group.

`CodedLinear` replaces an nn.Linear (an instance of it, placed where the Linear was, as a
quantizer's module replaces one) whose weight a unit decodes before its forward. It is an
nn.Linear (PEFT, generate and the model's own code see one) and computes F.linear as
nn.Linear does, on a weight that depends on how the forward runs:

  - eagerly (or captured in a CUDA graph): `self._df11_weight`, a view of the device's decode
    buffer (or, for a member that would land misaligned, an aligned tensor the unit refreshes
    after each decode), set once at load;
  - traced by torch.compile: a view of the same decode buffer tensor that the unit's pre-hook
    passed to torch.ops.df11.decode_into, taken in the graph after that op. The graph then has
    one input for the whole buffer, mutated by the decodes (a static address, which CUDA graph
    trees accept), and each weight is read from the value the latest decode produced; the
    output joins the unit's `reads`, which its forward hook hands to torch.ops.df11.reads_done
    so that the next decode is ordered after this matmul (_ops.py). Reading
    `self.weight` there would make it a second graph input aliasing the mutated buffer, which
    Inductor can neither order after the decode nor capture in a CUDA graph.

`self.weight` is a `CodedWeight`: the weight's shape, dtype and device, with no values. Outside
the unit's forward the decode buffer holds whatever unit ran last, so reading the weight there
would give another layer's values, and writing to it (PEFT's merge, diffusers' fuse_lora) would
be overwritten by the next decode: both raise instead, naming the layer and what to do, before
anything is changed. The weight also appears in `state_dict()` (as that placeholder), so that
code that looks a layer's weight up by name there (diffusers' LoRA loader) finds it.

`ExecLinearModule` replaces an nn.Linear in modes "exec" and "compact": its forward multiplies
from the weight's execution-layout blob (exec_mode.ExecLinear), and its `weight` is a
CodedWeight too.
"""
from __future__ import annotations

import math
from typing import Tuple

import torch

from . import _ops
from ._tensors import _set_view


# What the error for a coded weight's values says to do instead.
_INSTEAD = ("keep a LoRA adapter unmerged (PEFT: no merge_adapter / merge_and_unload; diffusers: "
            "no fuse_lora); its outputs equal the BF16 model's with the same adapter. To merge, "
            "make the base the BF16 model first (model.dequantize(): its weights decoded in "
            "place, bit for bit; with PEFT, peft_model.base_model.model.dequantize()), merge "
            "then, and compress the result again (df11 compress) if wanted")


# What the error says of an input embedding served by rows decodes.
EMBEDDING = ("each lookup (the embedding module's forward) decodes only the rows its ids name, "
             "and no tensor of the whole matrix exists. Use the module (model."
             "get_input_embeddings()(ids)) for rows; for the whole matrix (resizing the "
             "vocabulary, reading or changing it), make the model the BF16 one first "
             "(model.dequantize())")


# What the error says of a coded weight that a module other than nn.Linear reads itself.
VIEW = ("its module (fused MoE experts, a router, ...) reads it from a decode buffer the "
        "model's layers share, valid only during its block's forward, so no tensor of it "
        "exists outside that forward. For its values, make the model the BF16 one first "
        "(model.dequantize())")


# What copying or pickling a DF11 model (or a module or weight of it) says.
NO_DEEPCOPY = ("a DF11 model (or a module of it) cannot be deep-copied: its layers decode into "
               "buffers and through C handles that the model's engine owns, which a copy would "
               "share or lose. For a second model (a reference model, say), load the folder "
               "again (df11.from_pretrained or from_pretrained): the two then share nothing")
NO_PICKLE = ("a DF11 model cannot be pickled (torch.save of the model, pickle, "
             "multiprocessing): its layers decode through C handles and buffers its engine "
             "owns. Save it with save_pretrained, which writes a DF11 folder, and load that "
             "folder where it is needed")


class CodedWeight(torch.Tensor):
    """A coded Linear's weight outside its forward, or an input embedding's weight when its
    lookups are rows decodes: shape, dtype and device (what PEFT, diffusers and transformers
    read of a base layer's weight), and any operation on its values raises, saying why and what
    to do instead (`what`: the default, a Linear's; EMBEDDING, an embedding's)."""

    @staticmethod
    def __new__(cls, shape, device: torch.device, name: str, what: str = ""):
        t = torch.Tensor._make_wrapper_subclass(cls, shape, dtype=torch.bfloat16, device=device)
        t.df11_name = name
        t.df11_what = what
        return t

    def __init__(self, shape, device: torch.device, name: str, what: str = ""):
        super().__init__()

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        if func is torch.ops.aten.detach.default:  # `.data`, `.detach()`: still no values
            (w,) = args
            return CodedWeight(w.shape, w.device, w.df11_name, w.df11_what)
        coded = ([a for a in args if isinstance(a, CodedWeight)] +
                 [a for a in (kwargs or {}).values() if isinstance(a, CodedWeight)])
        names = sorted({a.df11_name for a in coded})
        why = next((a.df11_what for a in coded if a.df11_what), "")
        raise RuntimeError(
            f"df11: {', '.join(names)} is a DF11-coded weight ({func.__name__} on it): " +
            (why + "." if why else
             "it is decoded into a buffer shared by the model's layers just before the "
             "layer's forward, so its values can be neither read nor changed outside that "
             f"forward. Merging an adapter into it is refused: {_INSTEAD}"))

    def __deepcopy__(self, memo):
        raise RuntimeError(f"df11: {self.df11_name} is a DF11-coded weight: {NO_DEEPCOPY}")

    def __reduce_ex__(self, protocol):
        raise RuntimeError(f"df11: {self.df11_name} is a DF11-coded weight: {NO_PICKLE}")

    def __repr__(self, *, tensor_contents=None):  # noqa: ARG002 (torch's signature)
        return (f"CodedWeight({self.df11_name}, shape={tuple(self.shape)}, dtype={self.dtype}, "
                f"device={self.device})")


# What load_state_dict says of a tensor given for a coded weight.
NO_LOAD = ("load_state_dict cannot write values into it: its values are the DF11 folder's, "
           "decoded just before use. For other weights, load them into the BF16 model, or "
           "compress them (df11 compress) and load that folder")


def _take_placeholders(state_dict, prefix: str, listed, error_msgs) -> None:
    """load_state_dict of a module with coded weights: each coded weight's key is taken out of
    `state_dict`; its own placeholder (what this model's state_dict() lists) loads as nothing,
    and any other value (a tensor, another model's placeholder) is an error naming it."""
    for attr, placeholder in listed:
        key = prefix + attr
        if key in state_dict and state_dict.pop(key) is not placeholder:
            error_msgs.append(f"df11: {key} is a DF11-coded weight: {NO_LOAD}")


class ListsCodedWeight:
    """What the modules whose `weight` is a CodedWeight share (CodedLinear, PartsLinear,
    ExecLinearModule, an embedding served by rows decodes: decoders.RowsLookup): state_dict()
    lists the placeholder under the weight's name, as the BF16 model lists its weight
    (list_weights), and load_state_dict takes that placeholder back as nothing."""

    _df11_listed = True

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        if self._df11_listed:
            destination[prefix + "weight"] = self.weight  # the CodedWeight, never detached
        super()._save_to_state_dict(destination, prefix, keep_vars)

    def _load_from_state_dict(self, state_dict, prefix, *args):
        _take_placeholders(state_dict, prefix, [("weight", self.weight)], args[-1])
        super()._load_from_state_dict(state_dict, prefix, *args)


class CodedLinear(ListsCodedWeight, torch.nn.Linear):
    """nn.Linear over a coded member: `buffer[start : start + out * in]` is its weight once the
    unit's decode has run (`aligned`: that slice starts 256-byte aligned, as a fresh
    allocation does; otherwise the traced weight is a copy, so that the matmul sees the
    operand alignment it sees in the BF16 model)."""

    def __init__(self, linear: torch.nn.Linear, buffer_key: int, start: int, aligned: bool,
                 reads_key: int):
        torch.nn.Module.__init__(self)
        self.__dict__.update(linear.__dict__)  # its bias, features, flags and hooks
        shape: Tuple[int, int] = (linear.out_features, linear.in_features)
        # In one constant, _ops.plan(self._df11_plan): where the weight lies in the buffer
        # _ops.BUFFERS[buffer_key], and the unit's list _ops.READS[reads_key] of traced outputs
        # (read by its forward hook). Dynamo guards what a traced forward reads, on every call
        # of the compiled code: the plan's key alone. The engine unregisters the key.
        self._df11_plan = _ops.register(
            (start, start + math.prod(shape), shape, aligned, buffer_key, reads_key), _ops.PLANS)
        self._df11_weight: torch.Tensor = None  # the eager weight: set_weight

    def set_weight(self, weight: torch.Tensor, name: str) -> None:
        """The weight the eager forward reads (the view, or the aligned copy); `self.weight`
        becomes its CodedWeight (`name`: the folder's name of the weight)."""
        object.__setattr__(self, "_df11_weight", weight)
        _set_view(self, "weight", CodedWeight(weight.shape, weight.device, name))

    def forward(self, input: torch.Tensor) -> torch.Tensor:  # noqa: A002 (nn.Linear's name)
        if torch.compiler.is_compiling():
            start, end, shape, aligned, buffer_key, reads_key = _ops.plan(self._df11_plan)
            weight = _ops.BUFFERS[buffer_key][start:end].view(shape)
            if not aligned:
                weight = weight.clone()
            out = torch.nn.functional.linear(input, weight, self.bias)
            _ops.READS[reads_key].append(out)
            return out
        return torch.nn.functional.linear(input, self._df11_weight, self.bias)


def list_weights(model: torch.nn.Module, listed: bool) -> None:
    """Whether state_dict() lists the coded weights of `model` (as CodedWeight): not
    while transformers loads the model (it would take them for weights the checkpoint lacks)."""
    for module in model.modules():
        if isinstance(module, ListsCodedWeight) or "_df11_view_attrs" in module.__dict__:
            module._df11_listed = listed


def list_views(module: torch.nn.Module, attrs) -> None:
    """state_dict() of `module`, a module other than those above whose coded weights `attrs`
    are views of a decode buffer (fused experts, a router), lists a CodedWeight for each
    under its name, as the BF16 model lists the weight."""
    known = module.__dict__.get("_df11_view_attrs")
    if known is None:
        module._register_state_dict_hook(_list_views)
        module._register_load_state_dict_pre_hook(_load_views, with_module=True)
        known = ()
    module.__dict__["_df11_view_attrs"] = tuple(dict.fromkeys(known + tuple(attrs)))
    module.__dict__["_df11_placeholders"] = {}


def _placeholders(module, prefix: str):
    """(attr, placeholder) of each coded view of `module`: one placeholder object per weight,
    the one state_dict() lists every time."""
    made = module.__dict__.get("_df11_placeholders")
    if made is None:  # the model was dequantized: its weights are parameters again
        return []
    out = []
    for attr in module.__dict__["_df11_view_attrs"]:
        view = module.__dict__.get(attr)
        if isinstance(view, torch.Tensor):
            if attr not in made or made[attr].device != view.device:
                made[attr] = CodedWeight(view.shape, view.device, prefix + attr, VIEW)
            out.append((attr, made[attr]))
    return out


def _list_views(module, state_dict, prefix, local_metadata) -> None:  # noqa: ARG001
    if module.__dict__.get("_df11_listed", True):
        for attr, placeholder in _placeholders(module, prefix):
            state_dict[prefix + attr] = placeholder


def _load_views(module, state_dict, prefix, *args) -> None:
    _take_placeholders(state_dict, prefix, _placeholders(module, prefix), args[-1])


class PartsLinear(ListsCodedWeight, torch.nn.Linear):
    """nn.Linear over a coded member on the CPU: its forward decodes the weight into the
    device's decode buffer and multiplies it (decoders.PartsDecoder; traced, through
    torch.ops.df11.linear_parts). `self.weight` is a CodedWeight, as a CodedLinear's: the
    weight exists only in the shared buffer, during its forward."""

    def __init__(self, linear: torch.nn.Linear, key: int, name: str, device: torch.device):
        torch.nn.Module.__init__(self)
        self.__dict__.update(linear.__dict__)  # its bias, features, flags and hooks
        self._df11_parts_key = key
        _set_view(self, "weight", CodedWeight(linear.weight.shape, device, name))

    def forward(self, input: torch.Tensor) -> torch.Tensor:  # noqa: A002 (nn.Linear's name)
        if torch.compiler.is_compiling():
            return torch.ops.df11.linear_parts(input, self._df11_parts_key)
        return _ops._DECODERS[self._df11_parts_key].linear(input)


# What the error for a weight held in an execution layout says.
EXEC = ("it is held in df11's execution layout (mode='exec' or 'compact') and multiplied from "
        "there by df11's GEMM, so no BF16 tensor of it exists. For its values, load the folder "
        "in the default mode, or make the model the BF16 one first (model.dequantize())")


class ExecLinearModule(ListsCodedWeight, torch.nn.Linear):
    """nn.Linear over a member held in an execution layout (modes "exec", "compact"): its
    forward is `exec_linear.forward` (exec_mode.ExecLinear: df11's fused GEMM from the blob, or
    the blob decoded and F.linear above its token count); `self.weight` is a CodedWeight."""

    def __init__(self, linear: torch.nn.Linear, name: str, device: torch.device, exec_linear):
        torch.nn.Module.__init__(self)
        self.__dict__.update(linear.__dict__)  # its bias, features, flags and hooks
        self._df11_exec = exec_linear
        self._df11_key = exec_linear.key  # of the traced op; None once released
        _set_view(self, "weight", CodedWeight(linear.weight.shape, device, name, EXEC))

    def release(self) -> None:
        self._df11_exec = None
        self._df11_key = None

    def forward(self, input: torch.Tensor) -> torch.Tensor:  # noqa: A002 (nn.Linear's name)
        key = self._df11_key
        if key is None:
            raise RuntimeError(f"df11: {self.weight.df11_name}: the model's execution layout "
                               "was released (its load failed)")
        if torch.compiler.is_compiling():
            # Traced, the module's key is all the graph reads (one guard per Linear); siblings
            # on one input become one launch in Inductor's graph pass (exec_mode.SiblingPass).
            return torch.ops.df11.exec_linear(input, key)
        return self._df11_exec.forward(input)


def codes_as_linear(module: torch.nn.Module, attr: str) -> bool:
    """The member `module.attr` can be served by a CodedLinear: the weight of an nn.Linear
    whose forward is nn.Linear's own, and which the model calls. Not nn.MultiheadAttention's
    out_proj (a NonDynamicallyQuantizableLinear), whose weight the attention's forward reads
    itself: it is served as a weight its module reads (a view of the decode buffer)."""
    return (attr == "weight" and isinstance(module, torch.nn.Linear) and
            type(module).forward is torch.nn.Linear.forward and
            not isinstance(module, torch.nn.modules.linear.NonDynamicallyQuantizableLinear))


def replace_module(model: torch.nn.Module, old: torch.nn.Module, new: torch.nn.Module) -> None:
    """Puts `new` wherever `old` is a child in `model` (every parent, if it is shared)."""
    places = [(parent, name) for parent in model.modules()
              for name, child in parent._modules.items() if child is old]
    for parent, name in places:
        parent._modules[name] = new
