"""DF11 folders in vLLM (>= 0.24): the plugin's entry point and what needs no vLLM.

vLLM calls `register()` in each of its processes (the front end, the engine core, every worker)
through the `vllm.general_plugins` entry point that pyproject.toml declares. It registers, from
df11.vllm_plugin (imported only then, so df11 works without vLLM):
  - the quantization method "df11" (`--quantization df11`);
  - a config parser for vLLM's "hf" config format that marks a DF11 folder's config (it has
    `dfloat11_config`, df11's folders and the dfloat11 tools' alike) as quantized with "df11",
    so that vLLM picks the method without a flag (`df11.vllm_config.quantization_config()`);
  - a model loader for the load formats "auto" (the default) and "df11", which loads a DF11
    folder and defers to vLLM's own loader for every other model.
docs/running/vllm.md says what each part does and what it costs.
"""
from __future__ import annotations

from .vllm_config import (QUANT_METHOD, is_df11_config, lacks_model_config,  # noqa: F401
                          member_names, quantization_config, single_file_hint)


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
