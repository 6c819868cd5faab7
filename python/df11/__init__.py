"""df11: DFloat11 (lossless BF16 weight compression) models in PyTorch, on df11's own decoders.

    import df11
    model = df11.from_pretrained("path/to/df11-folder")        # transformers model, GPU or CPU
    model = df11.from_pretrained(path, bfloat16_model=flux)     # diffusers (or any) model

The native part is libdf11 (the C API, capi/include/df11/df11.h) through ctypes; see README.md,
"Python".
"""
from ._capi import Df11Error, has_cuda, version
from . import _ops  # noqa: F401  (registers torch.ops.df11.*)
from .loader import DFloat11Model, from_pretrained

__all__ = ["Df11Error", "DFloat11Model", "from_pretrained", "has_cuda", "version"]
__version__ = "0.1.0"
