"""DF11 folders in vLLM (>= 0.24): the plugin's entry point and what needs no vLLM.

vLLM calls `register()` in each of its processes (the front end, the engine core, every worker)
through the `vllm.general_plugins` entry point that pyproject.toml declares. It registers, from
df11.vllm_plugin (imported only then, so df11 works without vLLM):
  - the quantization method "df11" (`--quantization df11`);
  - a config parser for vLLM's "hf" config format that marks a DF11 folder's config (it has
    `dfloat11_config`, df11's folders and the dfloat11 tools' alike) as quantized with "df11",
    so that vLLM picks the method without a flag (`quantization_config()` below);
  - a model loader for the load formats "auto" (the default) and "df11", which loads a DF11
    folder and defers to vLLM's own loader for every other model.
docs/running/vllm.md says what each part does and what it costs.
"""
from __future__ import annotations

from typing import Any, List, Mapping, Optional, Sequence

QUANT_METHOD = "df11"


def is_df11_config(config: Mapping[str, Any]) -> bool:
    """True for the config.json of a DF11 folder: df11's and the dfloat11 tools' both carry a
    `dfloat11_config` object."""
    return isinstance(config.get("dfloat11_config"), Mapping)


def quantization_config(config: Mapping[str, Any]) -> Optional[dict]:
    """The `quantization_config` vLLM should see for a model whose config.json is `config`:
    {"quant_method": "df11"} for a DF11 folder that names no method itself, else None (the
    config is left as it is). A DF11 config that names another method is refused: df11 cannot
    serve weights that are also quantized another way."""
    if not is_df11_config(config):
        return None
    given = config.get("quantization_config")
    if given is None:
        return {"quant_method": QUANT_METHOD}
    method = str(given.get("quant_method", "")).lower() if isinstance(given, Mapping) else ""
    if method != QUANT_METHOD:
        raise ValueError(f"df11: config.json has dfloat11_config and a quantization_config "
                         f"with quant_method {method!r}: a DF11 folder's weights are BF16")
    return None


def member_names(prefix: str, packed: Mapping[str, Sequence[str]]) -> List[str]:
    """The checkpoint tensors, in order, that vLLM's Linear layer at `prefix` fuses into its
    weight: `packed` is the model's packed_modules_mapping ({"qkv_proj": ["q_proj", "k_proj",
    "v_proj"], ...}); a layer it does not name is one tensor of its own name."""
    parent, _, leaf = prefix.rpartition(".")
    return [f"{parent}.{part}.weight" if parent else f"{part}.weight"
            for part in packed.get(leaf, [leaf])]


def register() -> None:
    """The `vllm.general_plugins` entry point. Idempotent (vLLM may call it more than once in
    a process). ImportError, saying so, where vLLM is not installed."""
    try:
        import vllm  # noqa: F401
    except ImportError as e:
        raise ImportError("df11.vllm.register: vLLM is not installed "
                          "(pip install 'df11[vllm]')") from e
    from . import vllm_plugin
    vllm_plugin.register()
