"""What df11's vLLM plugin decides without vLLM: which configs are DF11 folders, the
quantization config vLLM should see for them, and which checkpoint tensors a vLLM Linear layer
fuses. Imported by df11.vllm (the entry point) and df11.vllm_plugin; tested without vLLM."""
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


def lacks_model_config(config: Mapping[str, Any]) -> bool:
    """True for the config.json the dfloat11 encoder writes by default (`save_single_file=True`):
    `dfloat11_config` alone, no model type or architecture, so that vLLM cannot build the model
    from it and the coded weights' shapes are in no file."""
    return (is_df11_config(config) and "model_type" not in config
            and "architectures" not in config)


def single_file_hint(where: str) -> str:
    """What to do with a folder whose config.json lacks_model_config."""
    return (f"df11: {where}: config.json holds only dfloat11_config (the dfloat11 encoder's "
            "single-file output), which names no model: give the original model's config "
            "with --hf-config-path MODEL (its folder or Hub id) and --quantization df11")


def member_names(prefix: str, packed: Mapping[str, Sequence[str]]) -> List[str]:
    """The checkpoint tensors, in order, that vLLM's Linear layer at `prefix` fuses into its
    weight: `packed` is the model's packed_modules_mapping ({"qkv_proj": ["q_proj", "k_proj",
    "v_proj"], ...}); a layer it does not name is one tensor of its own name."""
    parent, _, leaf = prefix.rpartition(".")
    return [f"{parent}.{part}.weight" if parent else f"{part}.weight"
            for part in packed.get(leaf, [leaf])]


MODE_KEY = "df11_mode"
MODES = ("decode", "exec", "compact")


def serving_mode(additional_config: Any) -> str:
    """The mode vLLM serves DF11 Linear layers in, from vLLM's `additional_config`
    ({"df11_mode": "exec"}; `--additional-config` on the command line): "decode" (the
    default: outputs equal BF16's), "exec" (the execution layout's GEMM at up to 256 tokens
    per step) or "compact" (the compact execution layout's, at DF11's size). ValueError naming
    the key for any other value."""
    mode = additional_config.get(MODE_KEY, "decode") if isinstance(additional_config,
                                                                   Mapping) else "decode"
    if mode not in MODES:
        raise ValueError(f"df11: additional_config {MODE_KEY}={mode!r}: expected one of "
                         f"{', '.join(repr(m) for m in MODES)}")
    return mode


def member_spans(sizes: Sequence[int], spans: Sequence[Sequence[int]]) -> Optional[List[int]]:
    """The members of a group, by index, that a layer's `spans` ((offset, numel) in the group's
    elements, in the layer's order) are, where each span is exactly one member of the group
    whose members have `sizes` elements each, in concatenation order; None where one is not."""
    starts, at = {}, 0
    for k, n in enumerate(sizes):
        starts[(at, n)] = k
        at += n
    picked = [starts.get((int(o), int(n))) for o, n in spans]
    return None if not picked or None in picked else picked
