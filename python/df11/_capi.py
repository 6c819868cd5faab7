"""ctypes binding of the C API (capi/include/df11/df11.h): a thin layer that mirrors it.

One Python object per C handle (`Model` for df11_model, `CudaPlan` for df11_cuda_plan), tensors
in and out as raw pointers (a tensor's data_ptr(); a CUDA stream as its cudaStream_t), and every
failing df11_status raised as one exception type, `Df11Error`, carrying the status name and the
handle's message (which names the file and the tensor or group).

Why ctypes: it ties the package to no torch build (no C++ extension compiled against one torch
ABI), and the C API's calls are few and coarse (one per block per forward pass), so the
~1 us a ctypes call costs is small next to the kernel launches it makes (docs/running/transformers.md).
"""
from __future__ import annotations

import ctypes
import os
from ctypes import (POINTER, Structure, c_char_p, c_int, c_size_t, c_uint, c_uint32, c_uint64,
                    c_void_p)
from typing import Dict, List, Optional, Sequence, Tuple

SIZE_MAX = (1 << (8 * ctypes.sizeof(c_size_t))) - 1

# df11_group_part (spec/DF11.md section 3.2 order).
PART_LUTS = 0
PART_ENCODED_EXPONENT = 1
PART_SIGN_MANTISSA = 2
PART_OUTPUT_POSITIONS = 3
PART_GAPS = 4
PART_SPLIT_POSITIONS = 5
# The parts a CUDA decode reads (split positions are host-only).
DEVICE_PARTS = (PART_LUTS, PART_ENCODED_EXPONENT, PART_SIGN_MANTISSA, PART_OUTPUT_POSITIONS,
                PART_GAPS)
ALL_PARTS = DEVICE_PARTS + (PART_SPLIT_POSITIONS,)


class Df11Error(RuntimeError):
    """A df11_status other than DF11_OK. `status` is its lower_snake name ("corrupt_data"),
    `code` its number, `message` the handle's message (file, group or tensor, what is wrong)."""

    def __init__(self, code: int, status: str, message: str):
        self.code = code
        self.status = status
        self.message = message
        super().__init__(f"{message} [{status}]" if message else f"[{status}]")

    @classmethod
    def named(cls, status: str, message: str) -> "Df11Error":
        """The error df11's C library reports as `status` ("bad_shape"), with its code."""
        return cls(status_code(status), status, message)


class CudaGroup(Structure):
    """df11_cuda_group: device copies of one group's parts and its output."""
    _fields_ = [("d_luts", c_void_p), ("d_encoded_exponent", c_void_p),
                ("d_sign_mantissa", c_void_p), ("d_output_positions", c_void_p),
                ("d_gaps", c_void_p), ("d_out", c_void_p)]


class GroupHostParts(Structure):
    """df11_group_host_parts: a group that lives on the GPU only, described by host copies of
    its small parts and the sizes of the rest (CudaPlan.from_parts)."""
    _fields_ = [("name", c_char_p), ("luts", c_void_p), ("luts_bytes", c_size_t),
                ("output_positions", c_void_p), ("output_positions_bytes", c_size_t),
                ("split_positions", c_void_p), ("split_positions_bytes", c_size_t),
                ("encoded_exponent_bytes", c_uint64), ("sign_mantissa_bytes", c_uint64),
                ("gaps_bytes", c_uint64)]


class ExecMatrix(Structure):
    """df11_exec_matrix: one member's execution-layout blob in device memory and its shape."""
    _fields_ = [("d_blob", c_void_p), ("bytes", c_size_t), ("rows", c_uint32), ("cols", c_uint32),
                ("n_exceptions", c_uint32)]


class ExecSource(Structure):
    """df11_exec_source: a BF16 [rows, cols] row-major matrix in device memory."""
    _fields_ = [("d_w", c_void_p), ("rows", c_uint32), ("cols", c_uint32)]


class ExecGemm(Structure):
    """df11_exec_gemm: Y = X W^T from one blob."""
    _fields_ = [("w", ExecMatrix), ("d_x", c_void_p), ("d_y", c_void_p)]


class CompactMatrix(Structure):
    """df11_compact_matrix: one member's compact-layout blob and decode table in device memory,
    its shape and the bits of its codeword stream."""
    _fields_ = [("d_blob", c_void_p), ("d_table", c_void_p), ("bytes", c_size_t),
                ("stream_bits", c_uint64), ("rows", c_uint32), ("cols", c_uint32)]


class CompactGemm(Structure):
    """df11_compact_gemm: Y = X W^T from one compact blob."""
    _fields_ = [("w", CompactMatrix), ("d_x", c_void_p), ("d_y", c_void_p)]


class Shape(Structure):
    """df11_shape: one weight's name and dimensions, as the caller knows them."""
    _fields_ = [("name", c_char_p), ("rank", c_size_t), ("dims", POINTER(c_uint64))]


EXEC_STATUS_BYTES = 16  # DF11_EXEC_STATUS_BYTES
EXEC_MAX_BATCH = 256  # DF11_EXEC_MAX_BATCH
COMPACT_MAX_BATCH = 32  # DF11_COMPACT_MAX_BATCH
CUDA_MAX_DECODE_SPANS = 8  # DF11_CUDA_MAX_DECODE_SPANS
CUDA_MAX_SELECTED_ROWS = 65535  # DF11_CUDA_MAX_SELECTED_ROWS
EXEC_KEEP_STATUS = 1  # DF11_EXEC_KEEP_STATUS
COMPACT_SYMBOLS = 256  # DF11_COMPACT_SYMBOLS
COMPACT_TABLE_BYTES = 16384  # DF11_COMPACT_TABLE_BYTES


def _library_path(name: str) -> str:
    """The shared library `name` ("libdf11.so.0"): $DF11_LIBRARY_DIR (a build tree's folder,
    for development) or the package's own lib/ folder, where the wheel puts it."""
    folder = os.environ.get("DF11_LIBRARY_DIR")
    if folder:
        return os.path.join(folder, name)
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib", name)


_lib = None


def lib() -> ctypes.CDLL:
    """libdf11, loaded once, with every prototype declared."""
    global _lib
    if _lib is None:
        path = _library_path("libdf11.so.0")
        try:
            handle = ctypes.CDLL(path)
        except OSError as e:
            raise ImportError(f"df11: cannot load {path}: {e} (install the package with pip, "
                              "or set DF11_LIBRARY_DIR to a build's capi folder)") from e
        _declare(handle)
        _lib = handle
    return _lib


def _declare(L: ctypes.CDLL) -> None:
    def f(name, restype, *argtypes):
        fn = getattr(L, name)
        fn.restype = restype
        fn.argtypes = list(argtypes)

    model_p = c_void_p
    plan_p = c_void_p
    f("df11_version_number", c_uint)
    f("df11_version_string", c_char_p)
    f("df11_status_name", c_char_p, c_int)
    f("df11_model_open", c_int, c_char_p, POINTER(c_void_p))
    f("df11_model_open_with_shapes", c_int, c_char_p, POINTER(Shape), c_size_t,
      POINTER(c_void_p))
    f("df11_model_close", None, model_p)
    f("df11_model_errmsg", c_char_p, model_p)
    f("df11_model_errcode", c_int, model_p)
    f("df11_model_tensor_count", c_size_t, model_p)
    f("df11_model_group_count", c_size_t, model_p)
    f("df11_model_find_tensor", c_size_t, model_p, c_char_p)
    f("df11_tensor_name", c_char_p, model_p, c_size_t)
    f("df11_tensor_dtype", c_char_p, model_p, c_size_t)
    f("df11_tensor_rank", c_size_t, model_p, c_size_t)
    f("df11_tensor_shape", POINTER(c_uint64), model_p, c_size_t)
    f("df11_tensor_byte_size", c_uint64, model_p, c_size_t)
    f("df11_tensor_group", c_size_t, model_p, c_size_t)
    f("df11_tensor_group_offset", c_uint64, model_p, c_size_t)
    f("df11_group_name", c_char_p, model_p, c_size_t)
    f("df11_group_file", c_char_p, model_p, c_size_t)
    f("df11_group_element_count", c_uint64, model_p, c_size_t)
    f("df11_group_member_count", c_size_t, model_p, c_size_t)
    f("df11_group_member", c_size_t, model_p, c_size_t, c_size_t)
    f("df11_group_alias_of", c_size_t, model_p, c_size_t)
    f("df11_group_alias_name", c_char_p, model_p, c_size_t)
    f("df11_group_part_bytes", c_int, model_p, c_size_t, c_int, POINTER(c_void_p),
      POINTER(c_size_t))
    f("df11_decode_tensor", c_int, model_p, c_size_t, c_void_p, c_size_t)
    f("df11_decode_group", c_int, model_p, c_size_t, c_void_p, c_size_t)
    f("df11_decode_group_range", c_int, model_p, c_size_t, c_uint64, c_void_p, c_size_t)
    f("df11_decode_group_on", c_int, model_p, c_size_t, c_void_p, c_size_t, c_void_p, c_uint)
    f("df11_decode_group_range_on", c_int, model_p, c_size_t, c_uint64, c_void_p, c_size_t,
      c_void_p, c_uint)
    f("df11_group_check_stored", c_int, model_p, c_size_t)
    f("df11_cuda_check_stored_scratch_bytes", c_size_t, c_size_t)
    f("df11_cuda_check_stored", c_int, model_p, POINTER(c_size_t), POINTER(CudaGroup), c_size_t,
      c_void_p, c_size_t, c_void_p)
    f("df11_has_cuda", c_int)
    f("df11_cuda_plan_create", c_int, model_p, POINTER(c_size_t), c_size_t, POINTER(CudaGroup),
      POINTER(c_void_p))
    f("df11_cuda_plan_create_parts", c_int, POINTER(GroupHostParts), c_size_t,
      POINTER(CudaGroup), c_char_p, POINTER(c_void_p))
    f("df11_cuda_plan_destroy", None, plan_p)
    f("df11_cuda_plan_errmsg", c_char_p, plan_p)
    f("df11_cuda_plan_errcode", c_int, plan_p)
    f("df11_cuda_plan_workspace_bytes", c_size_t, plan_p)
    f("df11_cuda_workspace_init", c_int, plan_p, c_void_p, c_size_t, c_void_p)
    f("df11_cuda_decode", c_int, plan_p, c_void_p, c_size_t, c_void_p)
    f("df11_cuda_status_sync", c_int, plan_p, c_void_p, c_void_p)
    f("df11_cuda_plan_status_bytes", c_size_t, plan_p)
    f("df11_cuda_status_copy", c_int, plan_p, c_void_p, c_void_p, c_size_t, c_void_p)
    f("df11_cuda_group_status", c_int, plan_p, c_void_p, c_size_t, c_size_t)
    f("df11_cuda_status_copy_many", c_int, POINTER(c_void_p), POINTER(c_void_p), c_size_t,
      c_void_p, c_size_t, c_void_p)
    f("df11_cuda_group_status_many", c_int, POINTER(c_void_p), c_size_t, c_void_p, c_size_t,
      POINTER(c_size_t))
    f("df11_cuda_decode_rows", c_int, plan_p, c_size_t, c_void_p, c_size_t, c_size_t, c_void_p,
      c_void_p, c_size_t, c_void_p)
    f("df11_cuda_decode_spans", c_int, plan_p, c_size_t, c_void_p, c_void_p, c_size_t, c_void_p,
      c_void_p, c_size_t, c_void_p)
    f("df11_cuda_decode_selected_rows", c_int, plan_p, c_size_t, c_void_p, c_size_t, c_size_t,
      c_void_p, c_void_p, c_size_t, c_void_p)
    # Experimental section (DF11_EXPERIMENTAL).
    f("df11_cuda_decode_and_copy_status", c_int, plan_p, c_void_p, c_size_t, c_void_p, c_size_t,
      c_void_p)
    f("df11_cuda_decode_rows_and_copy_status", c_int, plan_p, c_size_t, c_void_p, c_size_t,
      c_size_t, c_void_p, c_void_p, c_size_t, c_void_p, c_size_t, c_void_p)
    f("df11_cuda_exec_workspace_bytes", c_int, model_p, c_size_t, POINTER(c_size_t),
      POINTER(c_size_t))
    f("df11_cuda_exec_measure", c_int, model_p, c_size_t, POINTER(CudaGroup), c_void_p, c_size_t,
      c_void_p, POINTER(ExecMatrix), POINTER(c_char_p), c_size_t)
    f("df11_cuda_exec_pack", c_int, model_p, c_size_t, c_void_p, c_size_t, POINTER(ExecMatrix),
      c_size_t, c_void_p)
    f("df11_cuda_exec_bf16_workspace_bytes", c_int, model_p, POINTER(ExecSource), c_size_t,
      POINTER(c_size_t))
    f("df11_cuda_exec_bf16_measure", c_int, model_p, POINTER(ExecSource), c_size_t, c_void_p,
      c_size_t, c_void_p, POINTER(ExecMatrix))
    f("df11_cuda_exec_bf16_pack", c_int, model_p, POINTER(ExecSource), c_size_t, c_void_p,
      c_size_t, POINTER(ExecMatrix), c_void_p)
    f("df11_cuda_compact_bf16_workspace_bytes", c_int, model_p, c_uint32, c_uint32,
      POINTER(c_size_t))
    f("df11_cuda_compact_bf16_count", c_int, model_p, POINTER(ExecSource), c_void_p, c_size_t,
      c_void_p, c_void_p)
    f("df11_cuda_compact_bf16_measure", c_int, model_p, POINTER(ExecSource), c_void_p, c_void_p,
      c_size_t, c_void_p, POINTER(CompactMatrix))
    f("df11_cuda_compact_bf16_pack", c_int, model_p, POINTER(ExecSource), c_void_p, c_void_p,
      c_size_t, POINTER(CompactMatrix), c_void_p)
    f("df11_cuda_exec_to_bf16_ex", c_int, model_p, POINTER(ExecMatrix), POINTER(c_void_p),
      c_size_t, c_void_p, c_size_t, c_uint32, c_void_p)
    f("df11_cuda_exec_gemm_ex", c_int, model_p, POINTER(ExecGemm), c_size_t, c_uint32, c_void_p,
      c_size_t, c_uint32, c_void_p)
    f("df11_cuda_exec_gemm_ld", c_int, model_p, POINTER(ExecGemm), c_size_t, c_uint32, c_uint32,
      c_void_p, c_size_t, c_uint32, c_void_p)
    f("df11_cuda_exec_status_reset", c_int, c_void_p, c_size_t, c_void_p)
    f("df11_cuda_exec_status_sync", c_int, model_p, c_void_p, c_void_p)
    f("df11_cuda_exec_reference_gemm", c_int, model_p, c_void_p, c_uint32, c_uint32, c_void_p,
      c_void_p, c_uint32, c_void_p)
    f("df11_cuda_compact_workspace_bytes", c_int, model_p, c_size_t, POINTER(c_size_t),
      POINTER(c_size_t))
    f("df11_cuda_compact_count", c_int, model_p, c_size_t, POINTER(CudaGroup), c_void_p,
      c_size_t, c_void_p, POINTER(c_uint64), c_size_t)
    f("df11_cuda_compact_measure", c_int, model_p, c_size_t, c_void_p, c_size_t,
      POINTER(ctypes.c_uint8), c_void_p, POINTER(CompactMatrix), POINTER(c_char_p), c_size_t)
    f("df11_cuda_compact_pack", c_int, model_p, c_size_t, c_void_p, c_size_t,
      POINTER(CompactMatrix), c_size_t, c_void_p)
    f("df11_cuda_compact_to_bf16_ex", c_int, model_p, POINTER(CompactMatrix), POINTER(c_void_p),
      c_size_t, c_void_p, c_size_t, c_uint32, c_void_p)
    f("df11_cuda_compact_gemm_ex", c_int, model_p, POINTER(CompactGemm), c_size_t, c_uint32,
      c_void_p, c_size_t, c_uint32, c_void_p)
    f("df11_cuda_compact_status_sync", c_int, model_p, c_void_p, c_void_p)


def status_name(code: int) -> str:
    return lib().df11_status_name(code).decode()


_STATUS_CODES: Dict[str, int] = {}


def status_code(name: str) -> int:
    """The code of a df11_status by its lower_snake name, as the C library names its codes
    (df11_status_name), so that Python never writes the numbers again."""
    if not _STATUS_CODES:
        code = 1
        while (found := status_name(code)) != "unknown":
            _STATUS_CODES[found] = code
            code += 1
    if name not in _STATUS_CODES:
        raise ValueError(f"df11: no status named '{name}' in libdf11 "
                         f"({', '.join(sorted(_STATUS_CODES))})")
    return _STATUS_CODES[name]


def version() -> str:
    return lib().df11_version_string().decode()


def has_cuda() -> bool:
    """True if libdf11 was built with the CUDA decoder (touches no GPU)."""
    return bool(lib().df11_has_cuda())


def _text(p: Optional[bytes]) -> str:
    return p.decode("utf-8", "replace") if p is not None else ""


class Handle:
    """Owns one C handle (self._h): released once by close(), at the end of a `with` block, or
    when the object is collected. Subclasses name their library call in _release."""

    def _release(self, h: c_void_p) -> None:
        raise NotImplementedError

    def close(self) -> None:
        if getattr(self, "_h", None):
            self._release(self._h)
            self._h = c_void_p()

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Model(Handle):
    """A df11_model: a DF11 folder opened by df11_model_open (every shard mapped, every header
    and the metadata checked). Queries never touch the weights; decodes run on the CPU.

    shapes: {weight name: shape} for a folder published by the dfloat11 tools whose
    config.json does not give its coded weights' shapes (df11_model_open_with_shapes; names
    that are no coded weight are ignored)."""

    def __init__(self, path: str, shapes: Optional[Dict[str, Sequence[int]]] = None):
        self._h = c_void_p()
        L = lib()
        if shapes:
            names = [name.encode() for name in shapes]
            dims = [(c_uint64 * len(shape))(*shape) for shape in shapes.values()]
            given = (Shape * len(names))(*(Shape(n, len(d), d) for n, d in zip(names, dims)))
            rc = L.df11_model_open_with_shapes(os.fsencode(path), given, len(names),
                                               ctypes.byref(self._h))
        else:
            rc = L.df11_model_open(os.fsencode(path), ctypes.byref(self._h))
        if rc != 0:
            message = _text(L.df11_model_errmsg(self._h)) if self._h else "out of memory"
            self.close()
            raise Df11Error(rc, status_name(rc), message)
        self.path = path
        self.shapes = shapes  # another handle on the same folder opens with them

    def _release(self, h: c_void_p) -> None:
        lib().df11_model_close(h)

    @property
    def handle(self) -> c_void_p:
        return self._h

    def _check(self, rc: int) -> None:
        if rc != 0:
            raise Df11Error(rc, status_name(rc), _text(lib().df11_model_errmsg(self._h)))

    # ---- listing
    def tensor_count(self) -> int:
        return lib().df11_model_tensor_count(self._h)

    def group_count(self) -> int:
        return lib().df11_model_group_count(self._h)

    def find_tensor(self, name: str) -> Optional[int]:
        i = lib().df11_model_find_tensor(self._h, name.encode())
        return None if i == SIZE_MAX else i

    def tensor_name(self, i: int) -> str:
        return _text(lib().df11_tensor_name(self._h, i))

    def tensor_dtype(self, i: int) -> str:
        return _text(lib().df11_tensor_dtype(self._h, i))

    def tensor_shape(self, i: int) -> Tuple[int, ...]:
        L = lib()
        rank = L.df11_tensor_rank(self._h, i)
        shape = L.df11_tensor_shape(self._h, i)
        return tuple(int(shape[k]) for k in range(rank))

    def tensor_byte_size(self, i: int) -> int:
        return lib().df11_tensor_byte_size(self._h, i)

    def tensor_group(self, i: int) -> Optional[int]:
        g = lib().df11_tensor_group(self._h, i)
        return None if g == SIZE_MAX else g

    def tensor_group_offset(self, i: int) -> int:
        return lib().df11_tensor_group_offset(self._h, i)

    def group_name(self, g: int) -> str:
        return _text(lib().df11_group_name(self._h, g))

    def group_file(self, g: int) -> str:
        return _text(lib().df11_group_file(self._h, g))

    def group_element_count(self, g: int) -> int:
        return lib().df11_group_element_count(self._h, g)

    def group_members(self, g: int) -> List[int]:
        L = lib()
        return [L.df11_group_member(self._h, g, k)
                for k in range(L.df11_group_member_count(self._h, g))]

    def group_alias_of(self, g: int) -> Optional[int]:
        """The tensor a group that codes a copy of it copies (a tied lm_head), else None."""
        t = lib().df11_group_alias_of(self._h, g)
        return None if t == SIZE_MAX else t

    def group_alias_name(self, g: int) -> Optional[str]:
        """The copy's name for the loader ("lm_head.weight"), else None."""
        name = lib().df11_group_alias_name(self._h, g)
        return None if name is None else _text(name)

    def group_part(self, g: int, part: int) -> Tuple[int, int]:
        """(address, bytes) of part `part` of group `g` in the mapped shard (read-only)."""
        data, size = c_void_p(), c_size_t()
        self._check(lib().df11_group_part_bytes(self._h, g, part, ctypes.byref(data),
                                                ctypes.byref(size)))
        return (data.value or 0), size.value

    # ---- CPU decodes (the GIL is released by ctypes during the call). On oneTBB's threads, or
    # with `team` = (run, threads) on a team of the caller's (df11_team_run: the address of an
    # OpenMP runtime's GOMP_parallel and a thread count; df11.cpu_team finds torch's).
    def decode_tensor(self, i: int, out_ptr: int, out_bytes: int) -> None:
        self._check(lib().df11_decode_tensor(self._h, i, c_void_p(out_ptr), out_bytes))

    def decode_group(self, g: int, out_ptr: int, out_bytes: int,
                     team: Optional[Tuple[int, int]] = None) -> None:
        if team is None:
            self._check(lib().df11_decode_group(self._h, g, c_void_p(out_ptr), out_bytes))
        else:
            self._check(lib().df11_decode_group_on(self._h, g, c_void_p(out_ptr), out_bytes,
                                                   c_void_p(team[0]), team[1]))

    def decode_group_range(self, g: int, first: int, out_ptr: int, out_bytes: int,
                           team: Optional[Tuple[int, int]] = None) -> None:
        """Weights [first, first + out_bytes / 2) of group g (df11_decode_group_range: only the
        blocks holding them decoded and checked, no member checksums)."""
        if team is None:
            self._check(lib().df11_decode_group_range(self._h, g, first, c_void_p(out_ptr),
                                                      out_bytes))
        else:
            self._check(lib().df11_decode_group_range_on(self._h, g, first, c_void_p(out_ptr),
                                                         out_bytes, c_void_p(team[0]), team[1]))

    def check_stored(self, g: int) -> None:
        """Group g's stored bytes against the checksums df11's metadata records for them
        (df11_group_check_stored; nothing to check in a folder the dfloat11 tools published).
        Raises Df11Error (corrupt_data) naming the file, the stored tensor and the group."""
        self._check(lib().df11_group_check_stored(self._h, g))

    def check_stored_on_gpu(self, groups: List[int], dev: List["CudaGroup"], scratch_ptr: int,
                            scratch_bytes: int, stream: int) -> None:
        """check_stored for groups whose stored bytes lie on the current GPU at dev[i]'s parts,
        hashed there in one launch on `stream` (df11_cuda_check_stored; synchronises it).
        The scratch: check_stored_scratch_bytes(len(groups)) bytes of device memory."""
        n = len(groups)
        self._check(lib().df11_cuda_check_stored(self._h, (c_size_t * n)(*groups),
                                                 (CudaGroup * n)(*dev), n,
                                                 c_void_p(scratch_ptr), scratch_bytes,
                                                 c_void_p(stream)))


def check_stored_scratch_bytes(n_groups: int) -> int:
    """Device bytes Model.check_stored_on_gpu needs for n_groups groups."""
    return lib().df11_cuda_check_stored_scratch_bytes(n_groups)


class CudaPlan(Handle):
    """A df11_cuda_plan over groups of a Model with their device buffers. Creation validates
    every group on the host (no device memory touched, nothing synchronises)."""

    def __init__(self, model: Model, groups: List[int], dev: List[CudaGroup]):
        L = lib()
        self._h = c_void_p()
        n = len(groups)
        g_arr = (c_size_t * n)(*groups)
        d_arr = (CudaGroup * n)(*dev)
        self._created(L.df11_cuda_plan_create(model.handle, g_arr, n, d_arr,
                                              ctypes.byref(self._h)))

    @classmethod
    def from_parts(cls, host: List[GroupHostParts], dev: List[CudaGroup],
                   what: str) -> "CudaPlan":
        """A plan over groups that belong to no folder (df11_cuda_plan_create_parts): host[i]
        and dev[i] describe group i; `what` leads every message."""
        self = cls.__new__(cls)
        self._h = c_void_p()
        n = len(host)
        rc = lib().df11_cuda_plan_create_parts((GroupHostParts * n)(*host), n,
                                               (CudaGroup * n)(*dev), what.encode(),
                                               ctypes.byref(self._h))
        self._created(rc)
        return self

    def _created(self, rc: int) -> None:
        L = lib()
        if rc != 0:
            message = _text(L.df11_cuda_plan_errmsg(self._h)) if self._h else "out of memory"
            self.close()
            raise Df11Error(rc, status_name(rc), message)
        self.workspace_bytes = L.df11_cuda_plan_workspace_bytes(self._h)
        self.status_bytes = L.df11_cuda_plan_status_bytes(self._h)

    def _release(self, h: c_void_p) -> None:
        lib().df11_cuda_plan_destroy(h)

    @property
    def handle(self) -> c_void_p:
        return self._h

    def _check(self, rc: int) -> None:
        if rc != 0:
            raise Df11Error(rc, status_name(rc), _text(lib().df11_cuda_plan_errmsg(self._h)))

    def workspace_init(self, d_ws: int, ws_bytes: int, stream: int) -> None:
        self._check(lib().df11_cuda_workspace_init(self._h, c_void_p(d_ws), ws_bytes,
                                                   c_void_p(stream)))

    def decode(self, d_ws: int, ws_bytes: int, stream: int) -> None:
        self._check(lib().df11_cuda_decode(self._h, c_void_p(d_ws), ws_bytes, c_void_p(stream)))

    def decode_and_copy_status(self, d_ws: int, ws_bytes: int, h_status: int, status_bytes: int,
                               stream: int) -> None:
        self._check(lib().df11_cuda_decode_and_copy_status(
            self._h, c_void_p(d_ws), ws_bytes, c_void_p(h_status), status_bytes,
            c_void_p(stream)))

    def decode_rows(self, i: int, d_ids: int, n_ids: int, row_elements: int, d_out: int,
                    d_ws: int, ws_bytes: int, stream: int) -> None:
        self._check(lib().df11_cuda_decode_rows(self._h, i, c_void_p(d_ids), n_ids, row_elements,
                                                c_void_p(d_out), c_void_p(d_ws), ws_bytes,
                                                c_void_p(stream)))

    def status_sync(self, d_ws: int, stream: int) -> None:
        self._check(lib().df11_cuda_status_sync(self._h, c_void_p(d_ws), c_void_p(stream)))

    def status_copy(self, d_ws: int, h_status: int, status_bytes: int, stream: int) -> None:
        self._check(lib().df11_cuda_status_copy(self._h, c_void_p(d_ws), c_void_p(h_status),
                                                status_bytes, c_void_p(stream)))

    def group_status(self, h_status: int, status_bytes: int, i: int) -> None:
        self._check(lib().df11_cuda_group_status(self._h, c_void_p(h_status), status_bytes, i))
