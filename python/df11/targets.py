"""Where a folder's tensors go in a torch model: each coded member's module and attribute
(`resolve_member`, fused experts included), the module whose forward decodes a group
(`unit_module`), the input and output embeddings and their tie, and the raw tensors set as
the model's parameters and buffers (`load_raw`, `place_remaining`)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import torch

from . import _capi
from ._capi import Df11Error
from ._tensors import TORCH_DTYPES
from .groups import Group, Member


def set_tensor(model: torch.nn.Module, name: str, value: torch.Tensor, as_param: bool) -> None:
    module_name, _, attr = name.rpartition(".")
    module = model.get_submodule(module_name) if module_name else model
    if attr in module._parameters or as_param:
        put_parameter(module, attr, value)
    else:
        module._buffers[attr] = value


def put_parameter(module: torch.nn.Module, attr: str, value: torch.Tensor) -> None:
    """`value` as the module's parameter `attr` (frozen), where the module lists it: in its
    place among the module's parameters, or where it was before df11 made it a view of a decode
    buffer (_tensors._set_view), so that state_dict() lists the BF16 model's order."""
    module.__dict__.pop(attr, None)
    module._parameters[attr] = torch.nn.Parameter(value, requires_grad=False)
    order = module.__dict__.get("_df11_order")
    if order:
        rank = {name: i for i, name in enumerate(order)}
        items = sorted(module._parameters.items(), key=lambda kv: rank.get(kv[0], len(order)))
        module._parameters.clear()
        module._parameters.update(items)


_EXPERT = re.compile(
    r"^(?P<experts>.+)\.(?P<e>\d+)\.(?P<proj>gate_proj|up_proj|down_proj|w1|w2|w3)$")


_FUSED_KIND = {"gate_proj": "gate", "w1": "gate", "up_proj": "up", "w3": "up",
               "down_proj": "down", "w2": "down"}

# A fused-experts parameter and the matrices each expert's slice of it holds, in order.
FUSED_KINDS = {"gate_up_proj": ("gate", "up"), "down_proj": ("down",), "up_proj": ("up",),
               "gate_proj": ("gate",)}


def existing_module(modules: Dict[str, torch.nn.Module], path: str) -> Optional[str]:
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
    as 3-D parameters gate_up_proj [E, 2I, H] and down_proj [E, H, I], or up_proj [E, I, H]
    where the experts have no gate, while checkpoints and DF11 folders hold one matrix per
    expert)."""
    module: str
    attr: str
    fused: Optional[str] = None  # "gate" | "up" | "down"
    expert: int = 0
    # Decoded once at load into a parameter of its own (a member the model holds in a wider
    # type than BF16): the group's decodes leave it alone.
    held: bool = False


def resolve_member(model, modules, group: Group, m: Member) -> Target:
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
        # gate and up fused in one parameter, or (experts without a gate: Nemotron-H) each
        # matrix kind a parameter of its own
        attr = "gate_up_proj" if kind != "down" and hasattr(experts, "gate_up_proj") \
            else f"{kind}_proj"
        fused = getattr(experts, attr, None)
        e = int(match["e"])
        if isinstance(fused, torch.Tensor) and fused.dim() == 3 and e < fused.shape[0]:
            rows = fused.shape[1] // len(FUSED_KINDS[attr])
            if (rows, fused.shape[2]) == tuple(m.shape):
                return Target(match["experts"], attr, kind, e)
        raise Df11Error.named("bad_shape",
                              f"{group.what}: member '{m.name}' {list(m.shape)} does "
                              f"not fit '{match['experts']}.{attr}' of the model")
    raise Df11Error.named("bad_group",
                          f"{group.what}: member '{m.name}': the model has no module "
                          f"'{m.module}'")


def unit_module(modules, group: Group, targets: List[Target]) -> str:
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
    return existing_module(modules, ".".join(common)) or ""


def input_embedding(model: torch.nn.Module) -> Optional[torch.nn.Module]:
    try:
        return model.get_input_embeddings()
    except (NotImplementedError, AttributeError):
        return None


def output_embedding(model: torch.nn.Module) -> Optional[torch.nn.Module]:
    try:
        return model.get_output_embeddings()
    except (NotImplementedError, AttributeError):
        return None


def ties_embeddings(model: torch.nn.Module, emb, head) -> bool:
    if emb is None or head is None:
        return False
    if getattr(head, "weight", None) is not None and head.weight is emb.weight:
        return True
    if callable(getattr(model, "get_expanded_tied_weights_keys", None)):
        # transformers 5's own decision (the model's config's tie_word_embeddings: a Mistral 3
        # or PaliGemma config ties at its top level while its text config says false).
        names = {m: n for n, m in model.named_modules()}
        head_name, emb_name = names.get(head), names.get(emb)
        return (head_name is not None and emb_name is not None and
                tied_parameters(model).get(_joined(head_name, "weight")) ==
                _joined(emb_name, "weight"))
    config = getattr(model, "config", None)
    if config is None:
        return False
    try:
        text = config.get_text_config()
    except AttributeError:
        text = config
    return bool(getattr(text, "tie_word_embeddings", getattr(config, "tie_word_embeddings",
                                                             False)))


def tied_parameters(model) -> Dict[str, str]:
    """{tied parameter: the parameter it shares} as transformers 5 ties them (its
    get_expanded_tied_weights_keys); {} for other models."""
    expand = getattr(model, "get_expanded_tied_weights_keys", None)
    if not callable(expand):
        return {}
    try:
        tied = expand(all_submodels=True)
    except (TypeError, ValueError):
        return {}
    return dict(tied) if isinstance(tied, dict) else {}


def tie_parameter(model, target: str, source: str) -> None:
    """Points `target`, not set by the folder, at the parameter `source` the folder set."""
    try:
        src, dst = model.get_parameter(source), model.get_parameter(target)
    except AttributeError:
        return
    if dst.device.type == "meta" and src.device.type != "meta" and dst.shape == src.shape:
        module_name, _, attr = target.rpartition(".")
        (model.get_submodule(module_name) if module_name else model)._parameters[attr] = src


def tied_head_copy(model, modules, group, emb) -> bool:
    """Whether `group` is the copy of a tied input embedding that DF11 writers code as the
    group `lm_head` for the dfloat11 loader (spec/DF11.md 7.4), in a folder that does not mark
    it as one (the shards save_pretrained writes carry no df11 metadata), loaded into a model
    with no `lm_head` module (a base model, or one whose head has another name: Whisper's
    `proj_out`). Such a model has no use for it: transformers ignores the tensor too."""
    if group.name != "lm_head" or "lm_head" in modules or emb is None:
        return False
    weight = getattr(emb, "weight", None)
    return (weight is not None and len(group.members) == 1
            and group.members[0].name == "lm_head.weight"
            and tuple(group.members[0].shape) == tuple(weight.shape))


def _joined(module: str, attr: str) -> str:
    return f"{module}.{attr}" if module else attr


def checkpoint_renames(model, names: List[str]) -> Dict[str, str]:
    """The model's names of checkpoint tensors that transformers renames when it loads them
    (its conversion mapping's WeightRenaming rules for the model's classes: a multimodal
    checkpoint's "language_model.model.layers.0..." is Gemma 3's, LLaVA's or PaliGemma's
    "model.language_model.layers.0..."), {checkpoint name: model name} for those it changes
    (checkpoint_conversions)."""
    return checkpoint_conversions(model, names)[0]


def checkpoint_conversions(model, names: List[str]) -> Tuple[Dict[str, str], Optional[list]]:
    """checkpoint_renames' {checkpoint name: model name}, and the conversions a
    `from_pretrained` of such a checkpoint records on the model for its save
    (`_weight_conversions`: the renamings that renamed a name, and the converters), so that
    `save_pretrained` writes the checkpoint's names back, as after transformers' own load (without
    the record, it writes the layout of its own: Google's Gemma 3 names the vision tower
    "vision_tower.vision_model.*", transformers 5 "vision_tower.*"). transformers' own functions
    rename the names, applied in its order (sorted names, fresh rules: some rules activate on
    the first name they see). Its converters (experts merged into one tensor, ...) are left
    out of the renaming: resolve_member places such members. ({}, None) for a model that is not
    transformers' or a transformers without the mapping."""
    try:
        from transformers import PreTrainedModel
        from transformers.conversion_mapping import get_model_conversion_mapping
        from transformers.core_model_loading import WeightRenaming, rename_source_key
    except ImportError:
        return {}, None
    if not isinstance(model, PreTrainedModel):
        return {}, None
    conversions = get_model_conversion_mapping(model)
    renamings = [t for t in conversions if isinstance(t, WeightRenaming)]
    if not renamings:
        return {}, None
    # As transformers' load: a tensor the rules rename to no tensor of the model, whose own
    # name is one, keeps its name (DeepSeek-V4's attention rule `.norm.` -> `.kv_norm.` meets
    # the final "model.norm.weight").
    own = set(model.state_dict(keep_vars=True))
    out = {}
    for name in sorted(set(names)):
        renamed, _ = rename_source_key(name, renamings, [])
        if renamed != name and not (renamed not in own and name in own):
            out[name] = renamed
    used = [t for t in conversions
            if not isinstance(t, WeightRenaming) or getattr(t, "was_used", lambda: True)()]
    return out, used


def base_prefix(model, names: List[str]) -> str:
    """"model." where `model` is a base model (AutoModel: no head, no `model` attribute) and
    `names` (the folder's, as the model names them) hold the model with a head under that
    prefix, as transformers loads a base model from such a checkpoint; else ""."""
    prefix = getattr(model, "base_model_prefix", "")
    if not prefix or hasattr(model, prefix):
        return ""
    return prefix + "." if any(n.startswith(prefix + ".") for n in names) else ""


def load_raw(model, folder: _capi.Model, t: int, name: str, device_of, tensors_set) -> None:
    """Sets the folder's raw tensor `t` as the model's tensor `name`."""
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
    value = host.view(TORCH_DTYPES.get(folder.tensor_dtype(t), torch.uint8)).view(
        folder.tensor_shape(t))
    if tuple(current.shape) != tuple(value.shape):
        raise Df11Error.named("bad_shape",
                              f"{folder.path}: tensor '{name}' has shape "
                              f"{list(value.shape)}, the model's is {list(current.shape)}")
    # In the dtype the model gives it (as transformers loads a BF16 model's F32 side tensor).
    set_tensor(model, name, value.to(dtype=current.dtype).to(device_of(name.rpartition(".")[0])),
                as_param)
    tensors_set.add(name)


def place_remaining(model, device_of, tensors_set, folder) -> None:
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
