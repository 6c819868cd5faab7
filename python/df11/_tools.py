"""ctypes binding of the tools C API (tools_capi/include/df11/df11_tools.h): a thin layer that
mirrors it, as _capi.py mirrors df11.h.

libdf11-tools.so.0 holds what Python needs beyond decoding: compressing a checkpoint held in
memory (df11.compress) and pulling Hub ids into the shared cache (df11.from_pretrained("org/name")),
the same C++ code as `df11 compress` and `df11 pull`. It is apart from libdf11 (the decode-only
library an engine links, which carries no encoder and no HTTP client) and loaded only when one
of those is used. One Python object per C handle (`Checkpoint`, `Hub`); every failing
df11_status is raised as df11.Df11Error with the status name and the handle's message.
"""
from __future__ import annotations

import ctypes
import os
from ctypes import CFUNCTYPE, POINTER, c_char_p, c_int, c_int64, c_size_t, c_uint, c_uint64, c_void_p
from typing import Callable, List, Optional, Sequence

from ._capi import Df11Error, Handle, _text, status_code, status_name

LIBRARY = "libdf11-tools.so.0"

# df11_compress_option
COMPRESS_THREADS = 1
COMPRESS_GROUP_BY = 2
COMPRESS_FORCE = 3
COMPRESS_SHARD_BYTES = 4
COMPRESS_SOURCE_SHA256 = 5
# df11_compress_result
RESULT_INPUT_BYTES = 1
RESULT_OUTPUT_BYTES = 2
RESULT_SHARDS = 3
RESULT_TENSORS = 4
RESULT_TENSORS_CODED = 5
RESULT_GROUPS_CODED = 6
RESULT_GROUPS_RAW = 7

# int (*)(void* user, const char* phase, uint64_t done, uint64_t total)
PROGRESS_FN = CFUNCTYPE(c_int, c_void_p, c_char_p, c_uint64, c_uint64)
# int (*)(void* user, uint64_t offset, void* dst, size_t bytes)
READ_FN = CFUNCTYPE(c_int, c_void_p, c_uint64, c_void_p, c_size_t)


# Relative folders in the variables below are taken from where the package was imported: a
# program may change directory before it first needs the library.
_IMPORT_CWD = os.getcwd()


def _candidates() -> List[str]:
    """Where libdf11-tools may be: $DF11_TOOLS_LIBRARY_DIR; else, with $DF11_LIBRARY_DIR (a
    build tree's capi folder, for development), that folder and its sibling tools_capi (where
    the build puts this library); else the package's own lib/ folder, where the wheel puts it
    beside libdf11."""
    tools_dir = os.environ.get("DF11_TOOLS_LIBRARY_DIR")
    if tools_dir:
        return [os.path.join(_IMPORT_CWD, tools_dir, LIBRARY)]
    folder = os.environ.get("DF11_LIBRARY_DIR")
    if folder:
        folder = os.path.join(_IMPORT_CWD, folder)
        sibling = os.path.join(os.path.dirname(os.path.normpath(folder)), "tools_capi")
        return [os.path.join(folder, LIBRARY), os.path.join(sibling, LIBRARY)]
    return [os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib", LIBRARY)]


_lib = None


def lib() -> ctypes.CDLL:
    """libdf11-tools, loaded once, with every prototype declared. OSError with what was tried
    when it is missing (a wheel built without it, or a build tree without the pipelines)."""
    global _lib
    if _lib is None:
        errors = []
        for path in _candidates():
            if not os.path.exists(path):
                errors.append(f"{path}: not found")
                continue
            try:
                handle = ctypes.CDLL(path)
            except OSError as e:
                errors.append(f"{path}: {e}")
                continue
            _declare(handle)
            _lib = handle
            break
        else:
            raise OSError("df11: cannot load the tools library " + LIBRARY + " ("
                          + "; ".join(errors) + "). df11.compress and Hub ids need it: install "
                          "the package with pip (it builds it), or build the target df11_tools "
                          "(scripts/build.sh) and set DF11_LIBRARY_DIR to the build's capi folder "
                          "(or DF11_TOOLS_LIBRARY_DIR to its tools_capi folder)")
    return _lib


def available() -> bool:
    try:
        lib()
        return True
    except OSError:
        return False


class CudaEncodingSizes(ctypes.Structure):
    """df11_cuda_encoding_sizes."""
    _fields_ = [(name, c_uint64) for name in (
        "n_elements", "luts_bytes", "encoded_exponent_bytes", "encoded_exponent_capacity",
        "sign_mantissa_bytes", "output_positions_bytes", "gaps_bytes", "scratch_bytes")]


HISTOGRAM_SCRATCH_BYTES = 2048  # DF11_CUDA_HISTOGRAM_SCRATCH_BYTES


class CudaEncoding(Handle):
    """A df11_cuda_encoding: the DF11 coding of n BF16 weights in device memory, planned on the
    GPU (their exponents counted there, on `stream`, which this waits for) and enqueued by
    encode() into the caller's device parts. Df11Error where the weights cannot be coded
    (DF11_ERROR_UNCODABLE: an Inf, NaN or |x| >= 2^113)."""

    def __init__(self, d_weights: int, n: int, d_scratch: int, scratch_bytes: int, stream: int):
        L = lib()
        self._h = c_void_p()
        rc = L.df11_tools_cuda_encode_plan(c_void_p(d_weights), n, c_void_p(d_scratch),
                                           scratch_bytes, c_void_p(stream), ctypes.byref(self._h))
        self._check(rc)
        self.sizes = CudaEncodingSizes()
        self._check(L.df11_tools_cuda_encoding_sizes(self._h, ctypes.byref(self.sizes)))

    def _release(self, h: c_void_p) -> None:
        lib().df11_tools_cuda_encoding_free(h)

    def _check(self, rc: int) -> None:
        if rc != 0:
            message = (_text(lib().df11_tools_cuda_encoding_errmsg(self._h)) if self._h
                       else "out of memory")
            raise Df11Error(rc, status_name(rc), message)

    def luts(self) -> bytes:
        """The group's luts part (host bytes)."""
        return ctypes.string_at(lib().df11_tools_cuda_encoding_luts(self._h),
                                self.sizes.luts_bytes)

    def encode(self, d_weights: int, d_encoded_exponent: int, d_sign_mantissa: int,
               d_output_positions: int, d_gaps: int, d_scratch: int, stream: int) -> None:
        self._check(lib().df11_tools_cuda_encode(
            self._h, c_void_p(d_weights), c_void_p(d_encoded_exponent),
            c_void_p(d_sign_mantissa), c_void_p(d_output_positions), c_void_p(d_gaps),
            c_void_p(d_scratch), self.sizes.scratch_bytes, c_void_p(stream)))


def has_cuda_encoder() -> bool:
    """libdf11-tools is installed and was built with the GPU encoder."""
    if not available():
        return False
    L = lib()
    h = c_void_p()
    rc = L.df11_tools_cuda_encode_plan(None, 0, None, 0, None, ctypes.byref(h))
    L.df11_tools_cuda_encoding_free(h)
    return rc != status_code("unsupported")


def _declare(L: ctypes.CDLL) -> None:
    def f(name, restype, *argtypes):
        fn = getattr(L, name)
        fn.restype = restype
        fn.argtypes = list(argtypes)

    p = c_void_p
    f("df11_tools_version_number", c_uint)
    f("df11_tools_compact_lengths", c_int, POINTER(c_uint64), POINTER(ctypes.c_uint8))
    f("df11_checkpoint_create", c_int, POINTER(c_void_p))
    f("df11_checkpoint_free", None, p)
    f("df11_checkpoint_errmsg", c_char_p, p)
    f("df11_checkpoint_errcode", c_int, p)
    f("df11_checkpoint_add_tensor", c_int, p, c_char_p, c_char_p, c_char_p, c_size_t,
      POINTER(c_uint64), c_void_p, c_uint64)
    f("df11_checkpoint_add_tensor_reader", c_int, p, c_char_p, c_char_p, c_char_p, c_size_t,
      POINTER(c_uint64), c_uint64, READ_FN, c_void_p)
    f("df11_checkpoint_set_shard_metadata", c_int, p, c_char_p, c_char_p, c_char_p)
    f("df11_checkpoint_add_file", c_int, p, c_char_p, c_void_p, c_size_t)
    f("df11_checkpoint_set_option", c_int, p, c_int, c_int64)
    f("df11_checkpoint_set_progress", c_int, p, PROGRESS_FN, c_void_p)
    f("df11_checkpoint_compress", c_int, p, c_char_p)
    f("df11_checkpoint_warning_count", c_size_t, p)
    f("df11_checkpoint_warning", c_char_p, p, c_size_t)
    f("df11_checkpoint_result", c_uint64, p, c_int)
    f("df11_hub_create", c_int, POINTER(c_void_p))
    f("df11_hub_free", None, p)
    f("df11_hub_errmsg", c_char_p, p)
    f("df11_hub_errcode", c_int, p)
    f("df11_hub_set_transfers", c_int, p, c_int)
    f("df11_hub_set_progress", c_int, p, PROGRESS_FN, c_void_p)
    f("df11_hub_pull", c_int, p, c_char_p, POINTER(c_char_p))
    f("df11_tools_cuda_encode_plan", c_int, p, c_uint64, p, c_size_t, p, POINTER(c_void_p))
    f("df11_tools_cuda_encoding_free", None, p)
    f("df11_tools_cuda_encoding_errmsg", c_char_p, p)
    f("df11_tools_cuda_encoding_sizes", c_int, p, POINTER(CudaEncodingSizes))
    f("df11_tools_cuda_encoding_luts", c_void_p, p)
    f("df11_tools_cuda_encode", c_int, p, p, p, p, p, p, p, c_size_t, p)


def _shape(shape: Sequence[int]):
    return (c_uint64 * max(len(shape), 1))(*shape)


def _name(s: Optional[str]) -> Optional[bytes]:
    return None if s is None else s.encode("utf-8")


class _Callbacks:
    """Python callables behind the C callbacks. An exception raised in one (KeyboardInterrupt
    included: a progress call is where Ctrl-C surfaces during a long call) stops the C call
    (non-zero return) and is raised again when it returns."""

    def __init__(self):
        self.error: Optional[BaseException] = None

    def progress(self, fn: Optional[Callable[[str, int, int], object]]):
        def call(_user, phase, done, total):
            try:
                if fn is not None and fn(_text(phase), done, total):
                    return 1
                return 0
            except BaseException as e:  # noqa: B902 (re-raised after the C call)
                self.error = self.error or e
                return 1
        return PROGRESS_FN(call)

    def reader(self, fn: Callable[[int, int, int], None]):
        def call(_user, offset, dst, size):
            try:
                fn(offset, dst, size)
                return 0
            except BaseException as e:  # noqa: B902
                self.error = self.error or e
                return 1
        return READ_FN(call)

    def reraise(self) -> None:
        if self.error is not None:
            error, self.error = self.error, None
            raise error


class Checkpoint(Handle):
    """A df11_checkpoint: a BF16 checkpoint described in memory, compressed into a DF11 folder
    by compress(). Tensor bytes given by address are not copied: they must stay alive until
    compress() returns (this object keeps no reference; the caller does)."""

    def __init__(self):
        self._h = c_void_p()
        rc = lib().df11_checkpoint_create(ctypes.byref(self._h))
        if rc != 0:
            raise Df11Error(rc, status_name(rc), "out of memory")
        self._callbacks = _Callbacks()
        self._keep = []  # ctypes callback objects the library holds pointers to

    def _release(self, h: c_void_p) -> None:
        lib().df11_checkpoint_free(h)

    def _check(self, rc: int) -> None:
        self._callbacks.reraise()
        if rc != 0:
            raise Df11Error(rc, status_name(rc), _text(lib().df11_checkpoint_errmsg(self._h)))

    def add_tensor(self, file: Optional[str], name: str, dtype: str, shape: Sequence[int],
                   address: int, nbytes: int) -> None:
        self._check(lib().df11_checkpoint_add_tensor(
            self._h, _name(file), _name(name), dtype.encode(), len(shape), _shape(shape),
            c_void_p(address or None), nbytes))

    def add_tensor_reader(self, file: Optional[str], name: str, dtype: str,
                          shape: Sequence[int], nbytes: int,
                          read: Callable[[int, int, int], None]) -> None:
        """read(offset, dst_address, size) fills size bytes at dst_address (at most 64 MiB per
        call, never two calls at once)."""
        fn = self._callbacks.reader(read)
        self._keep.append(fn)
        self._check(lib().df11_checkpoint_add_tensor_reader(
            self._h, _name(file), _name(name), dtype.encode(), len(shape), _shape(shape), nbytes,
            fn, None))

    def set_shard_metadata(self, file: str, key: str, value: str) -> None:
        self._check(lib().df11_checkpoint_set_shard_metadata(self._h, _name(file), _name(key),
                                                             _name(value)))

    def add_file(self, path: str, data: bytes) -> None:
        buf = ctypes.create_string_buffer(data, len(data))
        self._check(lib().df11_checkpoint_add_file(self._h, _name(path), buf, len(data)))

    def set_option(self, option: int, value: int) -> None:
        self._check(lib().df11_checkpoint_set_option(self._h, option, value))

    def compress(self, out_dir: str,
                 progress: Optional[Callable[[str, int, int], object]] = None) -> None:
        """Writes the DF11 folder (blocking; the GIL is released, callbacks take it back).
        progress(phase, done, total) returning True stops the call (Df11Error interrupted)."""
        fn = self._callbacks.progress(progress)
        L = lib()
        self._check(L.df11_checkpoint_set_progress(self._h, fn, None))
        try:
            self._check(L.df11_checkpoint_compress(self._h, os.fsencode(out_dir)))
        finally:
            L.df11_checkpoint_set_progress(self._h, PROGRESS_FN(), None)

    def warnings(self) -> List[str]:
        L = lib()
        return [_text(L.df11_checkpoint_warning(self._h, i))
                for i in range(L.df11_checkpoint_warning_count(self._h))]

    def result(self, which: int) -> int:
        return lib().df11_checkpoint_result(self._h, which)


class Hub(Handle):
    """A df11_hub: `df11 pull` into the shared Hugging Face cache (HF_ENDPOINT, HF_TOKEN or
    HF_HOME/token, HF_HUB_CACHE / HF_HOME read by each call)."""

    def __init__(self, transfers: int = 8):
        self._h = c_void_p()
        L = lib()
        rc = L.df11_hub_create(ctypes.byref(self._h))
        if rc != 0:
            raise Df11Error(rc, status_name(rc), "out of memory")
        self._callbacks = _Callbacks()
        self._check(L.df11_hub_set_transfers(self._h, transfers))

    def _release(self, h: c_void_p) -> None:
        lib().df11_hub_free(h)

    def _check(self, rc: int) -> None:
        self._callbacks.reraise()
        if rc != 0:
            raise Df11Error(rc, status_name(rc), _text(lib().df11_hub_errmsg(self._h)))

    def pull(self, repo: str,
             progress: Optional[Callable[[str, int, int], object]] = None) -> str:
        """The snapshot folder of `repo` ("org/name[@revision]") in the cache."""
        fn = self._callbacks.progress(progress)
        L = lib()
        self._check(L.df11_hub_set_progress(self._h, fn, None))
        folder = c_char_p()
        try:
            self._check(L.df11_hub_pull(self._h, repo.encode("utf-8"), ctypes.byref(folder)))
        finally:
            L.df11_hub_set_progress(self._h, PROGRESS_FN(), None)
        return os.fsdecode(folder.value)


def pull(repo: str) -> str:
    """df11.from_pretrained's Hub ids: `repo` pulled into the shared cache by df11's own client
    (the same code as `df11 pull`); returns its snapshot folder."""
    hub = Hub()
    try:
        return hub.pull(repo)
    finally:
        hub.close()
