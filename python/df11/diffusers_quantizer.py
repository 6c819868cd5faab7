"""A DF11 diffusers model as diffusers sees a quantized one: `model.hf_quantizer`, so that
diffusers' own `save_pretrained` writes what the model really holds, as hf_quantizer.py does for
transformers.

A DF11 model's coded weights are not parameters, so `model.state_dict()` lists only the tensors
stored raw; diffusers' save_pretrained asks a quantized model's quantizer for the state dict to
write (`get_state_dict_and_metadata`). The df11 quantizer answers with the folder's coded groups
under their stored names (spec/DF11.md 3.2) and the model's raw tensors, and the model's config
carries `dfloat11_config` (without df11's marker: diffusers writes the shards, with no df11
metadata, spec 7.2) and `quantization_config` {"quant_method": "df11"}. The folder written
loads again with `df11.from_pretrained(out)`, with outputs equal to the source folder's, each
coded tensor byte for byte the source's.

diffusers lets no outside format register a quantizer for loading: this one only saves; a DF11
diffusers folder loads with `df11.from_pretrained`.
"""
from __future__ import annotations

import weakref

from . import hf_quantizer

_CLASS = {}


def _quantizer_class():
    """The quantizer class, defined once (diffusers is imported only for diffusers models)."""
    if _CLASS:
        return _CLASS["quantizer"]
    from diffusers.quantizers.base import DiffusersQuantizer
    from diffusers.quantizers.quantization_config import QuantizationConfigMixin

    class Df11DiffusersConfig(QuantizationConfigMixin):
        """quant_method "df11": weights stored DF11-coded (lossless), decoded just before use."""

        def __init__(self):
            self.quant_method = "df11"

    class Df11DiffusersQuantizer(DiffusersQuantizer):
        """The quantizer of a diffusers model df11.from_pretrained loaded (module docstring)."""

        def __init__(self, model, engine):
            super().__init__(Df11DiffusersConfig(), pre_quantized=True)
            self._model = weakref.ref(model)  # the model holds its quantizer
            self.engine = engine

        def _process_model_before_weight_loading(self, model, **kwargs):
            raise ValueError("df11: a DF11 diffusers folder loads with df11.from_pretrained")

        def _process_model_after_weight_loading(self, model, **kwargs):
            raise ValueError("df11: a DF11 diffusers folder loads with df11.from_pretrained")

        @property
        def is_serializable(self) -> bool:
            return True

        @property
        def is_trainable(self) -> bool:  # adapters train over the frozen coded base
            return True

        def get_state_dict_and_metadata(self, state_dict, safe_serialization=False):
            return hf_quantizer.state_dict(self._model(), self.engine), {}

        def _dequantize(self, model):
            """model.dequantize(): the BF16 model, bit for bit (df11.dequantize)."""
            from .dequantize import dequantize
            return dequantize(model)

    _CLASS["quantizer"] = Df11DiffusersQuantizer
    return Df11DiffusersQuantizer


def attach(model, engine, config_json: dict) -> None:
    """Gives a diffusers model df11.from_pretrained loaded its quantizer, and its config the
    keys a DF11 folder's config.json carries (config_json: the loaded folder's)."""
    model.hf_quantizer = _quantizer_class()(model, engine)
    dfloat11_config = config_json.get("dfloat11_config")
    if isinstance(dfloat11_config, dict):
        model.register_to_config(
            dfloat11_config={k: v for k, v in dfloat11_config.items() if k != "df11"})
    model.register_to_config(quantization_config={"quant_method": "df11"})


def is_diffusers_model(model) -> bool:
    try:
        from diffusers import ModelMixin
    except ImportError:
        return False
    return isinstance(model, ModelMixin)
