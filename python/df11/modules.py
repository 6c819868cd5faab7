"""DF11 modules: layers whose weights are members of a coded group.

`CodedLinear` replaces an nn.Linear (an instance of it, placed where the Linear was, as a
quantizer's module replaces one) whose weight a unit decodes before its forward. It is an
nn.Linear (PEFT, generate and the model's own code see one) and computes F.linear as
nn.Linear does, on a weight that depends on how the forward runs:

  - eagerly (or captured in a CUDA graph): `self.weight`, a view of the device's decode buffer
    (or, for a member that would land misaligned, an aligned tensor the unit refreshes after
    each decode), set once at load;
  - traced by torch.compile: a view of the same decode buffer tensor that the unit's pre-hook
    passed to torch.ops.df11.decode_into, taken in the graph after that op. The graph then has
    one input for the whole buffer, mutated by the decodes (a static address, which CUDA graph
    trees accept), and each weight is read from the value the latest decode produced; the
    output joins the unit's `reads`, which its forward hook hands to torch.ops.df11.reads_done
    so that the next decode is ordered after this matmul (_ops.py). Reading
    `self.weight` there would make it a second graph input aliasing the mutated buffer, which
    Inductor can neither order after the decode nor capture in a CUDA graph.
"""
from __future__ import annotations

import math
from typing import List, Tuple

import torch


class CodedLinear(torch.nn.Linear):
    """nn.Linear over a coded member: `buffer[start : start + out * in]` is its weight once the
    unit's decode has run (`aligned`: that slice starts 256-byte aligned, as a fresh
    allocation does; otherwise the traced weight is a copy, so that the matmul sees the
    operand alignment it sees in the BF16 model)."""

    def __init__(self, linear: torch.nn.Linear, buffer: torch.Tensor, start: int,
                 aligned: bool, reads: List[torch.Tensor]):
        torch.nn.Module.__init__(self)
        self.__dict__.update(linear.__dict__)  # its bias, features, flags and hooks
        shape: Tuple[int, int] = (linear.out_features, linear.in_features)
        self._df11_buffer = buffer
        self._df11_start = start
        self._df11_end = start + math.prod(shape)
        self._df11_shape = shape
        self._df11_aligned = aligned
        self._df11_reads = reads  # the unit's: traced outputs, read by its forward hook

    def forward(self, input: torch.Tensor) -> torch.Tensor:  # noqa: A002 (nn.Linear's name)
        if torch.compiler.is_compiling():
            weight = self._df11_buffer[self._df11_start:self._df11_end].view(self._df11_shape)
            if not self._df11_aligned:
                weight = weight.clone()
            out = torch.nn.functional.linear(input, weight, self.bias)
            self._df11_reads.append(out)
            return out
        return torch.nn.functional.linear(input, self.weight, self.bias)


class PartsLinear(torch.nn.Linear):
    """nn.Linear over a coded member on the CPU: its forward decodes the weight into the
    device's decode buffer and multiplies it, in parts of whole rows where it is larger than
    the buffer (an output head) (decoders.PartsDecoder; traced, through
    torch.ops.df11.linear_parts). `self.weight` is a zero-stride placeholder that tells only
    the shape, dtype and device: no tensor of the whole weight exists."""

    def __init__(self, linear: torch.nn.Linear, key: int):
        torch.nn.Module.__init__(self)
        self.__dict__.update(linear.__dict__)  # its bias, features, flags and hooks
        self._df11_parts_key = key

    def forward(self, input: torch.Tensor) -> torch.Tensor:  # noqa: A002 (nn.Linear's name)
        if torch.compiler.is_compiling():
            return torch.ops.df11.linear_parts(input, self._df11_parts_key)
        from . import _ops
        return _ops._DECODERS[self._df11_parts_key].linear(input)


def codes_as_linear(module: torch.nn.Module, attr: str) -> bool:
    """The member `module.attr` can be served by a CodedLinear: the weight of an nn.Linear
    whose forward is nn.Linear's own."""
    return (attr == "weight" and isinstance(module, torch.nn.Linear) and
            type(module).forward is torch.nn.Linear.forward)


def replace_module(model: torch.nn.Module, old: torch.nn.Module, new: torch.nn.Module) -> None:
    """Puts `new` wherever `old` is a child in `model` (every parent, if it is shared)."""
    places = [(parent, name) for parent in model.modules()
              for name, child in parent._modules.items() if child is old]
    for parent, name in places:
        parent._modules[name] = new
