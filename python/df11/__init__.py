"""df11: DFloat11 (lossless BF16 weight compression) models in PyTorch, on df11's own decoders.

    import df11
    model = df11.from_pretrained("path/to/df11-folder")        # transformers model, GPU or CPU
    flux = df11.from_pretrained("path/to/flux-df11")            # diffusers model, likewise
    model = df11.from_pretrained(path, bfloat16_model=model)    # a model built by hand
    df11.compress(bf16_model, "out-df11")                       # what `df11 compress` writes
    AutoModelForCausalLM.from_pretrained("path/to/df11-folder")  # transformers' own, after import

`import df11` registers the "df11" quantization method with transformers (when it is
installed): folders written by `df11 compress` name it in config.json, and transformers' config
reader names it for the dfloat11 tools' folders (hf_quantizer._name_the_method).

The native part is libdf11 (the C API, capi/include/df11/df11.h) through ctypes, and for
df11.compress and Hub ids libdf11-tools (tools_capi/include/df11/df11_tools.h); see
docs/running/transformers.md.
"""
from ._capi import Df11Error, has_cuda, version
from . import _ops  # noqa: F401  (registers torch.ops.df11.*)
from .checkpoint import CompressResult, compress
from .exec_mode import reference as exec_reference
from .loader import DFloat11Model, from_pretrained

__all__ = ["CompressResult", "Df11Error", "DFloat11Model", "compress", "exec_reference",
           "from_pretrained", "has_cuda", "version"]

try:
    import transformers  # noqa: F401
except ImportError:  # df11 without transformers: diffusers or plain torch models
    pass
else:
    from . import hf_quantizer as _hf_quantizer
    _hf_quantizer.register()
    Df11Config = _hf_quantizer._classes()[0]
    __all__.append("Df11Config")
__version__ = "0.1.0"
