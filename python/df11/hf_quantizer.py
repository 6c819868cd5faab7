"""The "df11" quantization method of transformers: a DF11 folder loads through transformers'
own `from_pretrained`, and a DF11 model saves through its `save_pretrained`.

Loading. `import df11` registers the method. A folder written by `df11 compress` names it in
config.json (`"quantization_config": {"quant_method": "df11"}`, spec 7.2), so that
`AutoModelForCausalLM.from_pretrained(folder)` and `pipeline(model=folder)` load it. A folder the
dfloat11 tools published names no method: transformers' config reader, wrapped at `import df11`,
names it for them (_name_the_method).
The quantizer hands the meta-device model to df11's engine before transformers reads any
weight (native.py says how transformers is kept from touching what df11 set).

Saving. A DF11 model's coded weights are not parameters (they are decoded into a shared buffer
just before use), so `model.state_dict()` lists only the tensors stored raw. transformers asks
a quantized model's quantizer for the state dict to save (`get_state_dict_and_metadata`); the
df11 quantizer answers with the folder's coded groups, each under its stored names
(`<group>.luts`, `.encoded_exponent`, `.sign_mantissa`, `.output_positions`, `.gaps`,
`.split_positions`, spec/DF11.md 3.2), plus the model's raw tensors. `save_pretrained(out)`
then writes a DF11 folder in the layout the dfloat11 tools publish (config.json keeps its
`dfloat11_config` and names the df11 method): transformers, `df11.from_pretrained(out)` and the
official loader load it, with the same logits as the folder it came from, and each coded
tensor's bytes are those of that folder. At any `max_shard_size`: transformers fills shards
tensor by tensor, so a group's stored tensors may land in two shards, which DF11 readers accept
in a folder of this layout (spec/DF11.md 7.8). df11's own metadata (checksums) is not written by
transformers' shard writer; `df11 compress` on the BF16 model writes it.
"""
from __future__ import annotations

import re
from typing import Dict, Tuple

import torch

from . import _capi, loading, native
from .modules import CodedWeight
from .vllm_config import is_df11_config, quantization_config

# The stored tensors of a group, with the part of the C API that holds each (spec 3.2).
_PARTS = (("luts", _capi.PART_LUTS), ("encoded_exponent", _capi.PART_ENCODED_EXPONENT),
          ("sign_mantissa", _capi.PART_SIGN_MANTISSA),
          ("output_positions", _capi.PART_OUTPUT_POSITIONS), ("gaps", _capi.PART_GAPS),
          ("split_positions", _capi.PART_SPLIT_POSITIONS))

_CLASSES = {}


def _classes():
    """(config class, quantizer class), defined and registered with transformers once."""
    if _CLASSES:
        return _CLASSES["config"], _CLASSES["quantizer"]
    from transformers.quantizers import HfQuantizer
    from transformers.quantizers.auto import (AUTO_QUANTIZATION_CONFIG_MAPPING,
                                              AUTO_QUANTIZER_MAPPING,
                                              register_quantization_config, register_quantizer)
    from transformers.utils.quantization_config import QuantizationConfigMixin

    class Df11Config(QuantizationConfigMixin):
        """quant_method "df11": weights stored DF11-coded (lossless), decoded just before use.
        `mode`: "decode" (torch's matmuls on the decoded BF16), "exec" (CUDA: df11's fused
        GEMM from the execution layout) or "compact" (CUDA: the same from the compact layout;
        docs/running/transformers.md, "Modes")."""

        def __init__(self, mode: str = "decode", **kwargs):
            self.quant_method = "df11"
            self.mode = mode

        def get_loading_attributes(self):
            """What a config passed to from_pretrained sets over the folder's own (below)."""
            return {"mode": self.mode}

    class Df11Quantizer(HfQuantizer):
        """Loads a DF11 folder in transformers' from_pretrained, and answers save_pretrained
        for a DF11 model (see the module docstring)."""

        requires_calibration = False

        def __init__(self, quantization_config, engine=None, **kwargs):
            super().__init__(quantization_config, **kwargs)
            self.engine = engine
            self.placed = None

        def validate_environment(self, device_map=None, **kwargs):
            loading.check_device_map(device_map)

        def update_dtype(self, dtype):
            return native.check_dtype(dtype)

        def update_device_map(self, device_map):
            # transformers places the raw tensors by this dict; df11 fills it with its own
            # placement once the model exists (before transformers reads it).
            self.requested_device_map = device_map
            self.placed = native.placed_map(device_map)
            return self.placed

        def _process_model_before_weight_loading(self, model, checkpoint_files=None, **kwargs):
            self.engine = native.load(model, checkpoint_files, self.requested_device_map,
                                      self.placed, mode=getattr(self.quantization_config,
                                                                "mode", "decode"))
            return model

        def _process_model_after_weight_loading(self, model, **kwargs):
            _without_marker(model)
            native.finish(model, self.engine)
            return model

        def is_serializable(self, *args, **kwargs) -> bool:
            return True

        @property
        def is_trainable(self) -> bool:  # adapters (PEFT) train over the frozen coded base
            return True

        @property
        def is_compileable(self) -> bool:
            return True

        def get_state_dict_and_metadata(self, model):
            return state_dict(model, self.engine), {}

        def _dequantize(self, model, dtype=None):
            """model.dequantize(): the BF16 model, bit for bit (df11.dequantize), in `dtype`
            if one other than BF16 is asked for."""
            from .dequantize import dequantize
            dequantize(model)
            if isinstance(dtype, torch.dtype) and dtype != torch.bfloat16:
                model.to(dtype)
            return model

    if "df11" not in AUTO_QUANTIZATION_CONFIG_MAPPING:
        register_quantization_config("df11")(Df11Config)
    if "df11" not in AUTO_QUANTIZER_MAPPING:
        register_quantizer("df11")(Df11Quantizer)
    _CLASSES.update(config=AUTO_QUANTIZATION_CONFIG_MAPPING["df11"],
                    quantizer=AUTO_QUANTIZER_MAPPING["df11"])
    # A folder's config.json names the method (df11's, and the dfloat11 tools' through
    # _name_the_method), and transformers keeps the folder's config over one passed to
    # from_pretrained, but for the config types it lists here, whose loading attributes the
    # passed config sets: `mode` is one.
    from transformers.quantizers import auto
    listed = getattr(auto, "LOADING_ATTRIBUTES_CONFIG_TYPES", None)
    if isinstance(listed, tuple) and _CLASSES["config"] not in listed:
        auto.LOADING_ATTRIBUTES_CONFIG_TYPES = listed + (_CLASSES["config"],)
    return _CLASSES["config"], _CLASSES["quantizer"]


def register() -> None:
    """Registers the "df11" method with transformers (at `import df11`), and has transformers'
    config reader name it for the dfloat11 tools' folders (_name_the_method)."""
    _classes()
    from transformers import PretrainedConfig
    current = PretrainedConfig.__dict__["get_config_dict"]
    if getattr(current.__func__, "df11", False):
        return
    read = current.__func__

    def get_config_dict(cls, pretrained_model_name_or_path, **kwargs):
        config_dict, rest = read(cls, pretrained_model_name_or_path, **kwargs)
        config_dict = _name_the_method(config_dict, pretrained_model_name_or_path)
        if ("quantization_config" in rest and rest["quantization_config"] is None
                and isinstance(config_dict, dict)
                and isinstance(config_dict.get("quantization_config"), dict)
                and config_dict["quantization_config"].get("quant_method") == "df11"):
            # AutoModel*.from_pretrained(folder, quantization_config=None) (the usual
            # `bnb_config if quantize else None`) passes the None on to the config, which would
            # then lose the folder's method and load every coded weight as MISSING, at random:
            # None adds nothing to a DF11 folder.
            rest = {k: v for k, v in rest.items() if k != "quantization_config"}
        return config_dict, rest
    get_config_dict.df11 = True
    get_config_dict.__doc__ = read.__doc__
    PretrainedConfig.get_config_dict = classmethod(get_config_dict)
    _report_bfloat16()


def _report_bfloat16() -> None:
    """A DF11 model's `dtype` is bfloat16, its weights', as the BF16 model's is. transformers
    reads a model's dtype from its first floating-point parameter, and coded weights are not
    parameters: a model whose first raw tensor is held in float32 (DeepSeek-V4's attention
    sinks) said float32, save_pretrained wrote that into config.json, and the saved folder
    then did not load with transformers' default dtype ("auto": the config's)."""
    from transformers.modeling_utils import ModuleUtilsMixin
    current = ModuleUtilsMixin.__dict__.get("dtype")
    if not isinstance(current, property) or getattr(current.fget, "df11", False):
        return
    read = current.fget

    def dtype(self):
        if self.__dict__.get("df11") is not None:
            return torch.bfloat16
        return read(self)
    dtype.df11 = True
    dtype.__doc__ = read.__doc__
    ModuleUtilsMixin.dtype = property(dtype)


def _name_the_method(config_dict, where):
    """The config.json of a folder the dfloat11 tools published carries `dfloat11_config` and no
    quantization method, which transformers would load as a plain model, every coded weight
    MISSING and initialized at random. transformers' reader (PretrainedConfig.get_config_dict,
    which AutoConfig and every from_pretrained call) gets {"quant_method": "df11"} added to
    such a config, as the vLLM plugin's config parser does; one whose `dfloat11_config` is not
    an object, or that names another method, raises, naming the folder."""
    if not isinstance(config_dict, dict) or "dfloat11_config" not in config_dict:
        return config_dict
    if not is_df11_config(config_dict):
        raise ValueError(f"df11: {where}: config.json's dfloat11_config is "
                         f"{type(config_dict['dfloat11_config']).__name__}, not an object: "
                         "not a DF11 folder's config")
    try:
        method = quantization_config(config_dict)
    except ValueError as e:
        raise ValueError(f"df11: {where}: {str(e).removeprefix('df11: ')}") from None
    return config_dict if method is None else dict(config_dict, quantization_config=method)


def _without_marker(model) -> None:
    # What save_pretrained writes carries no df11 metadata in its shards (transformers writes
    # them), so its config.json must not carry df11's marker either (spec 7.2).
    dfloat11_config = getattr(model.config, "dfloat11_config", None)
    if isinstance(dfloat11_config, dict) and "df11" in dfloat11_config:
        model.config.dfloat11_config = {k: v for k, v in dfloat11_config.items() if k != "df11"}


def attach(model, engine) -> None:
    """Gives a transformers model df11.from_pretrained loaded its quantizer and quantization
    config (what transformers' own from_pretrained leaves on a quantized model)."""
    config_cls, quantizer_cls = _classes()
    _without_marker(model)
    quantizer = quantizer_cls(config_cls(mode=engine.mode), engine=engine)
    model.hf_quantizer = quantizer
    model.config.quantization_config = quantizer.quantization_config
    model.is_quantized = True
    model.quantization_method = "df11"


def _stored(folder: _capi.Model, g: int, part: int, name: str) -> torch.Tensor:
    from ._tensors import _mapped
    addr, nbytes = folder.group_part(g, part)
    data = _mapped(addr, nbytes)  # the mapped shard's bytes (valid while the folder is open)
    if name == "luts":
        return data.view(-1, 256)
    if name == "split_positions":
        return data.view(torch.int64)
    return data


def coded_tensors(folder: _capi.Model) -> Tuple[Dict[str, torch.Tensor], set]:
    """Every coded group's stored tensors by name, each group's guard (spec/DF11.md 6.5: an
    empty U8 tensor under its first member's name, which makes a loader without df11 refuse
    the folder rather than fill that weight at random), and the names of the tensors they
    code."""
    out, coded = {}, set()
    for g in range(folder.group_count()):
        group = folder.group_name(g)
        members = folder.group_members(g)
        if members:
            out[folder.tensor_name(members[0])] = torch.empty(0, dtype=torch.uint8)
        for t in members:
            coded.add(folder.tensor_name(t))
        alias = folder.group_alias_name(g)
        if alias is not None:
            coded.add(alias)
        for name, part in _PARTS:
            out[f"{group}.{name}"] = _stored(folder, g, part, name)
    return out, coded


def _model_part_name(engine, key: str) -> str:
    """A group's stored tensor (`<group>.luts`, ...) under the model's name of the group."""
    group, _, part = key.rpartition(".")
    return f"{engine.renames.get(group, group)}.{part}"


def _saved_pattern_dict(model, engine, coded_parts: Dict[str, torch.Tensor]) -> None:
    """save_pretrained renames the state dict back into the checkpoint's names (transformers'
    revert_weight_conversion, on the model's conversion mapping), the groups' stored tensors
    too. A group it saves under another name than the folder's (a tied head df11 stored under
    the model's name, "lm_head", in a checkpoint whose names are "language_model.*") gets its
    pattern_dict key under that name, so that the saved folder's groups all match one."""
    from transformers.core_model_loading import revert_weight_conversion
    folder = engine.folder
    luts = {k: v for k, v in coded_parts.items() if k.endswith(".luts")}
    saved = revert_weight_conversion(model, dict(luts))
    names = {id(v): k.rpartition(".")[0] for k, v in saved.items()}
    moved = {}
    for g in range(folder.group_count()):
        name = folder.group_name(g)
        new = names.get(id(luts.get(_model_part_name(engine, f"{name}.luts"))), name)
        if new != name:
            moved[name] = new
    config = getattr(model.config, "dfloat11_config", None)
    if not moved or not isinstance(config, dict) or not isinstance(config.get("pattern_dict"),
                                                                      dict):
        return
    patterns = dict(config["pattern_dict"])
    kept = [n for n in (folder.group_name(g) for g in range(folder.group_count()))
            if n not in moved]
    added, dropped = {}, set()
    for old, new in moved.items():
        key = next((k for k in patterns if re.fullmatch(k, old)), None)
        if key is None:
            continue
        added.setdefault(_renamed_key(key, old, new), patterns[key])
        if not any(re.fullmatch(key, n) for n in kept):
            dropped.add(key)
    for key in dropped:
        del patterns[key]
    patterns.update(added)
    saved_names = kept + list(moved.values())
    if any(sum(bool(re.fullmatch(k, n)) for k in patterns) != 1 for n in saved_names):
        # Renamed keys that overlap: each moved group under its own escaped name instead.
        patterns = {k: v for k, v in config["pattern_dict"].items() if k not in dropped}
        for old, new in moved.items():
            key = next((k for k in config["pattern_dict"] if re.fullmatch(k, old)), None)
            if key is not None:
                patterns[re.escape(new)] = config["pattern_dict"][key]
    model.config.dfloat11_config = dict(config, pattern_dict=patterns)


def _renamed_key(key: str, old: str, new: str) -> str:
    """The pattern_dict key for group `new`, saved under that name for the folder's `old`,
    which `key` matches: where the two names differ only in a prefix, `key` with its escaped
    prefix renamed (the key of a vision tower's blocks, "vision_tower.vision_model.encoder.
    layers.<n>" in the folder, becomes the key of "vision_tower.encoder.layers.<n>", which all
    of them match); else `new` escaped, a key for that group alone."""
    common = 0
    while common < min(len(old), len(new)) and old[-1 - common] == new[-1 - common]:
        common += 1
    before, after = re.escape(old[:len(old) - common]), re.escape(new[:len(new) - common])
    if key.startswith(before):
        renamed = after + key[len(before):]
        if re.fullmatch(renamed, new):
            return renamed
    return re.escape(new)


def state_dict(model, engine) -> Dict[str, torch.Tensor]:
    """What save_pretrained writes for a DF11 model: the coded groups as stored, and every
    other tensor of the model's state dict (those stored raw) but the ones the groups code and
    their ties."""
    if engine.prefix:
        raise ValueError(f"df11: {engine.folder.path}: this base model ({type(model).__name__}) "
                         f"was loaded from the folder of a model with a head (names under "
                         f"'{engine.prefix}'), whose coded groups hold the head too: save the "
                         "model it was saved from (AutoModelForCausalLM.from_pretrained, then "
                         "save_pretrained)")
    engine.check_cast()  # after model.to(torch.float32) the raw tensors are not BF16's
    coded_parts, coded = coded_tensors(engine.folder)
    if engine.renames:  # the model's names: transformers' save renames them back (_saved_names)
        coded = {engine.model_name(n) for n in coded}
        parts = dict(_PARTS)
        coded_parts = {(_model_part_name(engine, k) if k.rpartition(".")[2] in parts
                        else engine.model_name(k)): v  # a guard: a member's name
                       for k, v in coded_parts.items()}
        coded_parts.pop(None, None)  # a guard of a member the model does not name
        _saved_pattern_dict(model, engine, coded_parts)
    # The coded weights that are not parameters are listed as CodedWeight placeholders (a
    # fused experts' weight under a name of its own, not the folder's): the groups hold them.
    own = {name: t for name, t in model.state_dict().items() if not isinstance(t, CodedWeight)}
    tied_to_coded = {t.data_ptr() for name, t in own.items() if name in coded}
    out = {name: t for name, t in own.items()
           if name not in coded and t.data_ptr() not in tied_to_coded and t.device.type != "meta"}
    clash = sorted(set(out) & set(coded_parts))
    if clash:
        raise ValueError(f"df11: {engine.folder.path}: the model has tensors named as the "
                         f"folder's coded groups: {', '.join(clash[:5])}")
    out.update(coded_parts)
    return out
