"""Tensors over memory the C API owns, and module attributes that view df11's buffers: shared by
the engine (engine.py) and the execution mode (exec_mode.py)."""

import torch

# safetensors dtype names -> torch dtypes (the ones this torch has), and back.
TORCH_DTYPES = {
    "BF16": torch.bfloat16, "F16": torch.float16, "F32": torch.float32, "F64": torch.float64,
    "I8": torch.int8, "U8": torch.uint8, "I16": torch.int16, "I32": torch.int32,
    "I64": torch.int64, "BOOL": torch.bool, "C64": torch.complex64,
}
for _name, _attr in (("U16", "uint16"), ("U32", "uint32"), ("U64", "uint64"),
                     ("F8_E4M3", "float8_e4m3fn"), ("F8_E5M2", "float8_e5m2"),
                     ("F8_E8M0", "float8_e8m0fnu")):
    if hasattr(torch, _attr):
        TORCH_DTYPES[_name] = getattr(torch, _attr)
SAFETENSORS_DTYPES = {dtype: name for name, dtype in TORCH_DTYPES.items()}


def _mapped(addr: int, nbytes: int) -> torch.Tensor:
    """A uint8 CPU tensor over `nbytes` bytes at `addr` (the C API's read-only mapping of a
    shard): only ever read (copied from)."""
    if nbytes == 0:
        return torch.empty(0, dtype=torch.uint8)
    import ctypes
    import warnings
    buf = (ctypes.c_uint8 * nbytes).from_address(addr)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.frombuffer(buf, dtype=torch.uint8, count=nbytes)


def _set_view(module: torch.nn.Module, attr: str, view: torch.Tensor) -> None:
    """The member's weight becomes a plain tensor attribute viewing the decode buffer (as the
    official loader does): not a Parameter, so that model.parameters() / state_dict() do not
    report the buffer's changing contents as the model's weights, and .to() leaves it alone."""
    if "_df11_order" not in module.__dict__:  # the parameters' order, for dequantize
        module.__dict__["_df11_order"] = tuple(module._parameters)
    module._parameters.pop(attr, None)
    module._buffers.pop(attr, None)
    if attr in module.__dict__:
        del module.__dict__[attr]
    object.__setattr__(module, attr, view)
