"""A DF11 folder's coded groups as the engine sees them (`read_groups`): each group's members
(name, shape, module and attribute), and the buffer arithmetic the engine places them by:
every member's view starts 256-byte aligned, as a fresh allocation does (engine.py,
"Exactness")."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Tuple

import torch

from . import _capi


ALIGN_BYTES = 256  # cuBLASLt sees operand alignment up to 256 bytes (PyTorch passes it)




def round_up(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def aligned_empty(elements: int, device: torch.device) -> torch.Tensor:
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


def read_groups(folder: _capi.Model, model_name: Callable[[str], Optional[str]]
                ) -> Tuple[List[Group], List[int]]:
    """The folder's coded groups (with their listed members) and its raw tensor indices.
    `model_name` gives a member's name in the model, or None where the model has no such part
    (the member is left out)."""
    groups = []
    for g in range(folder.group_count()):
        group = Group(g, folder.group_name(g), folder.group_file(g), folder.group_element_count(g))
        for t in folder.group_members(g):
            name = model_name(folder.tensor_name(t))
            if name is None:
                continue
            module, _, attr = name.rpartition(".")
            group.members.append(Member(t, name, folder.tensor_shape(t),
                                        folder.tensor_group_offset(t), module, attr))
        groups.append(group)
    raws = [t for t in range(folder.tensor_count()) if folder.tensor_group(t) is None]
    return groups, raws
