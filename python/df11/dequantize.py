"""A DF11 model made the BF16 model it codes, in place: `model.dequantize()`, the call
transformers and diffusers give a quantized model (their quantizers' `_dequantize`).

Every coded weight is decoded from the folder (checked as it decodes, as at load) into an
ordinary BF16 parameter on the device its module runs on; a coded nn.Linear (CodedLinear,
PartsLinear, ExecLinearModule) becomes an nn.Linear again, with its bias, hooks and adapters
(a PEFT LoRA layer keeps its wrapped base layer, now plain); a weight another module reads
itself (fused MoE experts, a router, SigLIP's pooling attention) becomes that module's parameter
again, fused experts assembled as transformers assembles them; an embedding served by rows
decodes becomes an nn.Embedding with its whole matrix; ties are made again. The engine is then
closed (its hooks removed, its buffers and the coded bytes on the devices freed) and the model
forgets DF11: no `df11` attribute, and config.json's `dfloat11_config` is dropped, so that
`save_pretrained` writes a BF16 checkpoint that plain transformers (or diffusers) loads.

Bits: every weight is the BF16 checkpoint's, so the model's outputs are the BF16 model's in
any mode (the execution modes' fused GEMM is gone with the engine). Memory: the BF16 model's
size on its devices; the coded bytes there are freed first, so the peak is about the BF16
size plus one weight."""
from __future__ import annotations

from typing import Dict, Tuple

import torch

from .engine import _decoded
from .groups import read_groups
from .modules import ListsCodedWeight, replace_module
from .targets import (FUSED_KINDS, input_embedding, output_embedding, put_parameter,
                      resolve_member, tie_parameter, tied_parameters, ties_embeddings)


def dequantize(model: torch.nn.Module) -> torch.nn.Module:
    engine = model.__dict__.get("df11")
    if engine is None:
        raise ValueError(f"df11: {type(model).__name__} is not a DF11 model (no engine): "
                         "nothing to dequantize")
    folder = engine.folder
    groups, _ = read_groups(folder, engine.model_name)
    modules = dict(model.named_modules())
    emb, head = input_embedding(model), output_embedding(model)
    tied = ties_embeddings(model, emb, head)
    # Where each coded weight goes (the module itself: a PEFT layer's wrapped base layer), read
    # while the model still lists the coded ones, with the device it runs on.
    plans = []
    for group in groups:
        if group.name in engine.skipped or not group.members:
            continue
        for m in group.members:
            target = resolve_member(model, modules, group, m)
            module = _base(modules[target.module])
            if not target.fused and _is_parameter(module, target.attr):
                continue  # held decoded (a resident group, a float32 member): BF16's already
            plans.append((m, target, module, getattr(module, target.attr).device))
    adapters = any(isinstance(getattr(m, "base_layer", None), torch.nn.Module)
                   for m in model.modules())
    engine.close()  # hooks off, decoders unregistered, rows embeddings their own class again
    fused: Dict[Tuple[int, str], Dict[Tuple[int, str], torch.Tensor]] = {}
    owners = {}
    for m, target, module, device in plans:
        value = _decoded(folder, m).to(device)
        if target.fused:
            owners[id(module)] = module
            fused.setdefault((id(module), target.attr), {})[(target.expert,
                                                             target.fused)] = value
        elif isinstance(module, ListsCodedWeight) and isinstance(module, torch.nn.Linear):
            _plain_linear(model, module, value)
        else:
            put_parameter(module, target.attr, value)
    for (owner, attr), parts in fused.items():
        module = owners[owner]
        shape = getattr(module, attr).shape
        kinds = FUSED_KINDS[attr]
        order = [parts[(e, k)].reshape(-1) for e in range(shape[0]) for k in kinds]
        put_parameter(module, attr, torch.cat(order).view(shape))
    if fused:
        _record_converters(model)
    for module in model.modules():
        for name in [k for k in module.__dict__ if k.startswith("_df11")]:
            del module.__dict__[name]
    if tied:
        emb, head = input_embedding(model), output_embedding(model)
        head.weight = emb.weight
    for target_name, source in tied_parameters(model).items():
        tie_parameter(model, target_name, source)
    # A BF16 model from from_pretrained trains every parameter; one with adapters (PEFT) keeps
    # its base frozen, as df11's base was.
    if not adapters:
        for p in model.parameters():
            p.requires_grad_(True)
    del model.__dict__["df11"]
    _forget_df11_config(model)
    return model


def _base(module: torch.nn.Module) -> torch.nn.Module:
    """The layer a PEFT adapter wraps (its `base_layer`), else the module."""
    while isinstance(getattr(module, "base_layer", None), torch.nn.Module):
        module = module.base_layer
    return module


def _record_converters(model) -> None:
    """transformers' save_pretrained reverts the conversions its load recorded on the model
    (`_weight_conversions`), and some versions record only those a checkpoint tensor went
    through: the experts of a DF11 folder are coded, so their converter (the per-expert
    matrices merged into one tensor) is missing and the fused tensors would be saved under
    the model's names, which the checkpoint's loader does not read. The model's mapping's
    converters are recorded again, in its order, beside what the load recorded."""
    current = getattr(model, "_weight_conversions", None)
    if current is None:  # save_pretrained then uses the model's whole mapping
        return
    try:
        from transformers.conversion_mapping import get_model_conversion_mapping
        from transformers.core_model_loading import WeightConverter
    except ImportError:
        return

    def key(t):
        return (type(t).__name__, tuple(getattr(t, "source_patterns", ())),
                tuple(getattr(t, "target_patterns", ())))

    recorded = {key(t): t for t in current}
    mapping = get_model_conversion_mapping(model, add_legacy=False)
    known = {key(t) for t in mapping}
    merged = [t for t in current if key(t) not in known]  # a caller's key_mapping comes first
    for t in mapping:
        if key(t) in recorded:
            merged.append(recorded[key(t)])
        elif isinstance(t, WeightConverter):
            merged.append(t)
    model._weight_conversions = merged


def _forget_df11_config(model) -> None:
    """config.json's DF11 keys, out of the model's config (transformers' dequantize removes
    quantization_config itself; diffusers' leaves it, in its frozen config dict)."""
    config = getattr(model, "config", None)
    internal = getattr(model, "_internal_dict", None)
    if internal is not None and not hasattr(config, "to_dict"):  # diffusers' FrozenDict
        from diffusers.configuration_utils import FrozenDict
        model._internal_dict = FrozenDict({k: v for k, v in internal.items()
                                           if k not in ("dfloat11_config", "quantization_config")})
        return
    if config is not None and hasattr(config, "dfloat11_config"):
        delattr(config, "dfloat11_config")


def _is_parameter(module: torch.nn.Module, attr: str) -> bool:
    p = module._parameters.get(attr)
    return p is not None and p.device.type != "meta" and not isinstance(module, ListsCodedWeight)


def _plain_linear(model, coded: torch.nn.Linear, weight: torch.Tensor) -> torch.nn.Linear:
    """An nn.Linear in the coded one's place: its bias, flags and hooks, and `weight`."""
    linear = torch.nn.Linear.__new__(torch.nn.Linear)
    linear.__dict__.update({k: v for k, v in coded.__dict__.items() if k != "weight"})
    rest = {k: v for k, v in coded._parameters.items() if k != "weight"}
    linear._parameters = {"weight": torch.nn.Parameter(weight, requires_grad=False), **rest}
    replace_module(model, coded, linear)
    return linear
