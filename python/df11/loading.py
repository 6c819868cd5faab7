"""What the two doors onto a DF11 transformers model share: df11.from_pretrained (loader.py)
and transformers' own from_pretrained through the df11 quantizer (native.py). config.json as
JSON, where each module runs (one device, a device map, accelerate's balanced map sized by the
coded bytes), and generate()'s deferred decode-status check."""
from __future__ import annotations

import json
import os
from typing import Dict, Optional, Union

import torch

from . import _capi, targets


def single_device(device) -> torch.device:
    """A device as transformers' device_map takes one ("cpu", "cuda:1", 1, torch.device),
    checked against what torch sees."""
    if isinstance(device, int):
        device = torch.device("cuda", device)
    try:
        target = torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise ValueError(f"df11: device {device!r} is not a device torch knows ({e})") from None
    if target.type == "cuda":
        if not torch.cuda.is_available():
            raise RuntimeError(f"df11: device '{target}' was asked for, but torch sees no CUDA "
                               "GPU (torch.cuda.is_available() is False); use device='cpu'")
        if target.index is None:
            target = torch.device("cuda", torch.cuda.current_device())
        elif target.index >= torch.cuda.device_count():
            raise ValueError(f"df11: device '{target}': torch sees "
                             f"{torch.cuda.device_count()} GPU(s)")
    elif target.type not in ("cpu",):
        raise ValueError(f"df11: device '{target}': df11 decodes on CUDA GPUs and the CPU")
    return target


AUTO_MAPS = ("auto", "balanced", "balanced_low_0", "sequential")


def check_device_map(device_map) -> None:
    """transformers' device_map argument (None, one of accelerate's strategies, one device, or
    {module prefix: device}), checked before anything is placed: each device must be one df11
    decodes on (the CPU or a CUDA GPU torch sees); an error names the device and what is
    wrong, before torch's own error about a missing driver or device."""
    if device_map is None or (isinstance(device_map, str) and device_map in AUTO_MAPS):
        return
    values = device_map.values() if isinstance(device_map, dict) else [device_map]
    for value in values:
        if str(value) == "disk":
            raise ValueError("df11: device_map places modules on 'disk': DF11 weights decode on "
                             "CUDA GPUs and the CPU")
        single_device(value)


def read_config(path: str) -> dict:
    config_path = os.path.join(path, "config.json")
    if not os.path.exists(config_path):
        return {}
    try:
        with open(config_path, encoding="utf-8") as f:
            config = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"df11: {config_path}: not valid JSON ({e})") from None
    if not isinstance(config, dict):
        raise ValueError(f"df11: {config_path}: expected a JSON object, found "
                         f"{type(config).__name__}")
    return config


def model_shapes(model, path: Optional[str] = None) -> Dict[str, tuple]:
    """{name: shape} of the model's parameters, under the model's names and under the names
    its checkpoint gives them where transformers renames them at load (its
    revert_weight_conversion, what save_pretrained writes): what df11_model_open_with_shapes
    takes for a folder whose coded weights' shapes config.json does not give. With the
    folder's `path`, also under the names the folder's groups give them (_group_shapes): a
    checkpoint in another layout than the one transformers writes (Google's Gemma 3 names its
    vision tower "vision_tower.vision_model.*", which transformers 5 saves as
    "vision_tower.*")."""
    named = dict(model.named_parameters(remove_duplicate=False))
    shapes = {name: tuple(p.shape) for name, p in named.items()}
    try:
        from transformers import PreTrainedModel
        from transformers.core_model_loading import revert_weight_conversion
    except ImportError:
        return shapes
    if not isinstance(model, PreTrainedModel):
        return shapes
    metas = {name: torch.empty(p.shape, dtype=p.dtype, device="meta")
             for name, p in named.items()}
    owner = {id(t): name for name, t in metas.items()}
    for saved, t in revert_weight_conversion(model, dict(metas)).items():
        if id(t) in owner and saved != owner[id(t)]:
            shapes[saved] = shapes[owner[id(t)]]
        elif id(t) not in owner:
            # A tensor the conversion makes of others: an expert's matrix split off a MoE
            # layer's fused experts ("mlp.experts.3.down_proj.weight" of "mlp.experts.down_proj").
            shapes.setdefault(saved, tuple(t.shape))
    if path is not None:
        for name, shape in _group_shapes(model, named, path).items():
            shapes.setdefault(name, shape)
    emb = targets.input_embedding(model)
    if "lm_head.weight" not in shapes and isinstance(getattr(emb, "weight", None), torch.Tensor):
        # The copy of a tied embedding DF11 writers code as the group `lm_head` (spec/DF11.md
        # 7.4), for a model with no `lm_head` (targets.tied_head_copy).
        shapes["lm_head.weight"] = tuple(emb.weight.shape)
    return shapes


_EXPONENTS = ".encoded_exponent"  # the stored tensor that marks a coded group (spec 3.2)


def _group_shapes(model, named: Dict[str, torch.nn.Parameter], path: str) -> Dict[str, tuple]:
    """{folder name: shape} of every parameter under each coded group's module: the group
    `P` (found by its `P.encoded_exponent` tensor in the folder's safetensors headers) is the
    model's module that transformers' renaming rules make of P, and its members are weights
    under it (`P.<member>.weight`, or `P.weight`; spec 7.8). Names the headers cannot give (an
    unreadable file) are left out: the C library's open then says what is wrong."""
    from safetensors import safe_open
    groups = []
    for entry in sorted(os.listdir(path)):
        if not entry.endswith(".safetensors"):
            continue
        try:
            with safe_open(os.path.join(path, entry), "pt") as f:
                groups += [k[:-len(_EXPONENTS)] for k in f.keys() if k.endswith(_EXPONENTS)]
        except Exception:  # noqa: BLE001 (the C library reports the file's fault)
            continue
    renames = targets.checkpoint_renames(model, [g + _EXPONENTS for g in groups])
    out = {}
    for group in groups:
        module = renames.get(group + _EXPONENTS, group + _EXPONENTS)[:-len(_EXPONENTS)]
        for name, p in named.items():
            if name.startswith(module + "."):
                out[f"{group}.{name[len(module) + 1:]}"] = tuple(p.shape)
    return out


def shapes_unknown(error: _capi.Df11Error) -> bool:
    """The folder records no shapes for some coded weights and config.json does not give them
    (a vision tower's, in a folder save_pretrained wrote without df11's metadata)."""
    return error.status == "unsupported" and "are unknown" in error.message


def open_folder(path: str, model) -> _capi.Model:
    """The folder; the coded weights' shapes that neither it nor config.json give come from
    `model` (built from its config)."""
    try:
        return _capi.Model(path)
    except _capi.Df11Error as e:
        if not shapes_unknown(e):
            raise
    return _capi.Model(path, shapes=model_shapes(model, path))


def default_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def device_map_lookup(device_map: Dict[str, Union[str, int, torch.device]]):
    """device_of(module_name) for an accelerate device map ({module prefix: device})."""
    check_device_map(device_map)
    entries = sorted(((k, single_device(v)) for k, v in device_map.items()),
                     key=lambda kv: -len(kv[0]))

    def device_of(name: str) -> torch.device:
        for prefix, dev in entries:
            if prefix == "" or name == prefix or name.startswith(prefix + "."):
                return dev
        # A parent module (the root, a container of blocks) runs where its first child does.
        for prefix, dev in sorted(entries, key=lambda kv: kv[0]):
            if name == "" or prefix.startswith(name + "."):
                return dev
        raise ValueError(f"df11: device_map places no module for '{name}'")
    return device_of


def auto_device_map(model, folder: _capi.Model, max_memory, no_split):
    """accelerate's balanced device map, with each module's size counted as DF11 stores it
    (coded groups at their stored size): the coded model is what must fit."""
    from accelerate import infer_auto_device_map
    from accelerate.utils import get_balanced_memory
    bf16 = sum(p.numel() * p.element_size() for p in model.parameters())
    coded = 0
    for g in range(folder.group_count()):
        for part in _capi.DEVICE_PARTS:
            coded += folder.group_part(g, part)[1]
    raw = sum(folder.tensor_byte_size(t) for t in range(folder.tensor_count())
              if folder.tensor_group(t) is None)
    ratio = max((coded + raw) / max(bf16, 1), 0.05)
    max_memory = get_balanced_memory(model, max_memory=max_memory, no_split_module_classes=no_split)
    # The map is computed on BF16 sizes: scale the budget instead of the sizes.
    scaled = {k: int(v / ratio) if isinstance(v, (int, float)) else v
              for k, v in max_memory.items()}
    return infer_auto_device_map(model, max_memory=scaled, no_split_module_classes=no_split)


def placement(model, folder: _capi.Model, target: Optional[torch.device], device_map,
               max_memory):
    """device_of(module_name): `target` if given, else the device map (a dict), else
    accelerate's balanced map over several GPUs (sized by coded bytes), else the default
    device."""
    if target is None and isinstance(device_map, dict):
        return device_map_lookup(device_map)
    if target is None and torch.cuda.device_count() > 1:
        no_split = getattr(model, "_no_split_modules", None) or []
        return device_map_lookup(auto_device_map(model, folder, max_memory, no_split))
    if target is None:
        target = single_device(default_device())
    return lambda name: target


def wrap_generate(model, eng) -> None:
    """generate() reads the decode status once at its end (the deferred check: the copies were
    enqueued after each decode; generate has waited for its last tokens by then)."""
    original = getattr(model, "generate", None)
    if original is None:
        return

    def generate(*args, **kwargs):
        out = original(*args, **kwargs)
        eng.check_status(wait=True)
        return out
    generate.__doc__ = original.__doc__
    object.__setattr__(model, "generate", generate)
