"""The Python package's status codes are the C library's: every DF11_ERROR_* of the C header
has the code and lower_snake name df11._capi reports, and errors raised in Python carry them."""
import os
import re

import pytest

import models
from df11 import _capi


def header_codes():
    with open(os.path.join(models.REPO, "capi", "include", "df11", "df11.h")) as f:
        text = f.read()
    return {name.lower(): int(code)
            for name, code in re.findall(r"DF11_ERROR_([A-Z_]+) = (\d+)", text)}


def test_every_header_code_has_its_name():
    codes = header_codes()
    assert len(codes) >= 26
    for name, code in codes.items():
        assert _capi.status_name(code) == name
        assert _capi.status_code(name) == code


def test_named_error_carries_the_library_code():
    e = _capi.Df11Error.named("bad_shape", "model.safetensors: tensor 'w'")
    assert (e.code, e.status) == (header_codes()["bad_shape"], "bad_shape")
    assert str(e) == "model.safetensors: tensor 'w' [bad_shape]"
    with pytest.raises(ValueError, match="no status named 'bad_shapes'"):
        _capi.Df11Error.named("bad_shapes", "x")


def test_exec_constants_are_the_headers():
    with open(os.path.join(models.REPO, "capi", "include", "df11", "df11.h")) as f:
        defines = dict(re.findall(r"#define DF11_((?:EXEC|CUDA_MAX)_[A-Z_]+) (\d+)u?\b",
                                  f.read()))
    assert {"EXEC_STATUS_BYTES", "EXEC_MAX_BATCH", "EXEC_KEEP_STATUS",
            "CUDA_MAX_DECODE_SPANS"} <= set(defines)
    for name, value in defines.items():
        assert getattr(_capi, name) == int(value), name
