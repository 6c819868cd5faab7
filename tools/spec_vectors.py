#!/usr/bin/env python3
"""Writes the DF11 test vectors under spec/vectors/ (spec/DF11.md section 9).

This is an independent implementation of spec/DF11.md written from the spec alone, in plain
Python + numpy: it shares no code with the C++ encoder and decoders, so that agreement between
the two is evidence that both follow the spec. It is tooling, never part of the product.

    python3 tools/spec_vectors.py            # (re)write spec/vectors/
    python3 tools/spec_vectors.py --check    # exit 1 if spec/vectors/ differs from a fresh run
    python3 tools/spec_vectors.py --print-examples   # the numbers of the spec's section 8

Every valid vector is decoded again here with two decoders written from spec section 4 (the
sequential reference decoder with all of its checks, and the per-window decoder the GPU uses);
every invalid vector is checked to fail with its expected error. Output is deterministic: no
clocks, no numpy random streams (a splitmix64 generator instead), sorted JSON keys.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import hashlib
import json
import struct
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

# ---- spec 1.3: limits and constants ---------------------------------------------------------
BYTES_PER_WINDOW = 8
WINDOWS_PER_BLOCK = 512
BYTES_PER_BLOCK = BYTES_PER_WINDOW * WINDOWS_PER_BLOCK  # 4096
BITS_PER_WINDOW = 8 * BYTES_PER_WINDOW  # 64
BITS_PER_BLOCK = 8 * BYTES_PER_BLOCK  # 32768
GAP_BITS = 5
MAX_CODE_LENGTH = 32
MAX_SUBTABLES = 16
MAX_LUT_ROWS = 1 + MAX_SUBTABLES + 1  # 18
FIRST_POINTER_ENTRY = 240
MAX_CODABLE_EXPONENT = 239
MAX_LUT_DEPTH = 3  # root = depth 0, subtables at depths 1..3
MAX_GROUP_ELEMENTS = 2**32 - 1
MAX_WEIGHTS_PER_BLOCK_COMPAT = (49152 - (WINDOWS_PER_BLOCK * 4 + 4)) // 2  # 23550
MAX_HEADER_BYTES = 100_000_000
SPEC_VERSION = "1.0"
ENCODER_NAME = "df11 spec_vectors.py 1.0"

SUFFIXES = ("luts", "encoded_exponent", "sign_mantissa", "output_positions", "gaps",
            "split_positions")

ROOT = Path(__file__).resolve().parent.parent
VECTORS = ROOT / "spec" / "vectors"


class SpecError(Exception):
    """A rule of the spec is violated; `code` is the error name of status.h."""

    def __init__(self, code: str, message: str):
        super().__init__(f"{code}: {message}")
        self.code = code


# ---- checksums --------------------------------------------------------------------------------
def _load_xxh3():
    # XXH3_64bits from the system libxxhash (the same algorithm the metadata names; no PyPI).
    for name in ("libxxhash.so.0", ctypes.util.find_library("xxhash") or "libxxhash.so"):
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        fn = lib.XXH3_64bits
        fn.restype = ctypes.c_uint64
        fn.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        return fn
    sys.exit("spec_vectors.py: libxxhash (XXH3_64bits) not found; install libxxhash0")


_XXH3 = _load_xxh3()


def xxh3_hex(data: bytes) -> str:
    return f"{_XXH3(bytes(data), len(data)):016x}"


assert xxh3_hex(b"") == "2d06800538d394c2", "libxxhash XXH3_64bits self-test failed"


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ---- deterministic pseudo-random numbers (splitmix64) -------------------------------------------
class Rng:
    def __init__(self, seed: int):
        self.state = seed & (2**64 - 1)

    def next(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & (2**64 - 1)
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & (2**64 - 1)
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & (2**64 - 1)
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        return self.next() % n

    def shuffle(self, items: list) -> list:
        items = list(items)
        for i in range(len(items) - 1, 0, -1):
            j = self.below(i + 1)
            items[i], items[j] = items[j], items[i]
        return items


# ---- spec 2.1: BF16 split -----------------------------------------------------------------------
def split_bf16(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    w = w.astype(np.uint16)
    exponent = ((w >> 7) & 0xFF).astype(np.uint8)
    sign_mantissa = (((w >> 8) & 0x80) | (w & 0x7F)).astype(np.uint8)
    return exponent, sign_mantissa


def join_bf16(exponent: int, sign_mantissa: int) -> int:
    return ((sign_mantissa & 0x80) << 8) | (exponent << 7) | (sign_mantissa & 0x7F)


# ---- spec 2.2: histogram ------------------------------------------------------------------------
def histogram(exponents: np.ndarray) -> list[int]:
    return [int(c) for c in np.bincount(exponents, minlength=256)]


# ---- spec 2.3: optimal length-limited code (package-merge) and canonical codes -----------------
def package_merge(hist: list[int], max_length: int = MAX_CODE_LENGTH) -> list[int]:
    """Code lengths per spec 2.3: leaves sorted by (count, symbol); on equal weight a leaf comes
    before a package; the first 2m - 2 items of the level-1 list are selected."""
    leaves = sorted((c, s) for s, c in enumerate(hist) if c > 0)
    m = len(leaves)
    lengths = [0] * 256
    if m == 0:
        raise SpecError("invalid_argument", "empty histogram")
    if m == 1:
        lengths[leaves[0][1]] = 1
        return lengths
    assert m <= 2**max_length
    # Each item: (weight, None, leaf index) for a leaf or (weight, (i, j), None) for a package of
    # items i and i + 1 of the deeper list.
    levels: list[list[tuple]] = []
    deeper: list[tuple] = []
    for _ in range(max_length):  # level max_length first, level 1 last
        packages = [(deeper[2 * i][0] + deeper[2 * i + 1][0], 2 * i)
                    for i in range(len(deeper) // 2)]
        merged = []
        li = pi = 0
        while li < m or pi < len(packages):
            if pi == len(packages) or (li < m and leaves[li][0] <= packages[pi][0]):
                merged.append((leaves[li][0], None, li))
                li += 1
            else:
                merged.append((packages[pi][0], packages[pi][1], None))
                pi += 1
        levels.append(merged)
        deeper = merged
    levels.reverse()  # levels[0] is level 1
    # Walk the selection down: at level j the selected items are a prefix of the list.
    take = 2 * m - 2
    for level in levels:
        if take == 0:
            break
        packages_taken = 0
        for weight, first, leaf in level[:take]:
            if leaf is not None:
                lengths[leaves[leaf][1]] += 1
            else:
                packages_taken += 1
        take = 2 * packages_taken
    return lengths


def canonical_codes(lengths: list[int]) -> list[int]:
    """spec 2.3: symbols in order of (length, symbol) get consecutive codes, shorter first."""
    codes = [0] * 256
    order = sorted((l, s) for s, l in enumerate(lengths) if l > 0)
    code = 0
    prev = order[0][0]
    for i, (l, s) in enumerate(order):
        if i > 0:
            code = (code + 1) << (l - prev)
        codes[s] = code
        prev = l
    kraft = sum(2.0**-l for l, _ in order)
    assert kraft <= 1.0 and code < 2**order[-1][0], "lengths violate the Kraft inequality"
    return codes


def subtable_prefixes(lengths: list[int], codes: list[int]) -> list[tuple[int, int]]:
    """spec 2.4: the (depth, prefix) of every subtable, in row order (depth, then prefix)."""
    rows = set()
    for s in range(256):
        l = lengths[s]
        for d in range(1, 4):
            if l > 8 * d:
                rows.add((d, codes[s] >> (l - 8 * d)))
    return sorted(rows)


def optimal_lengths(hist: list[int]) -> list[int]:
    """spec 2.3 + 2.4 for histograms whose package-merge code fits the table limit (the only
    case whose bytes the spec fixes; vectors never need df11's fallback)."""
    if any(hist[s] for s in range(FIRST_POINTER_ENTRY, 256)):
        raise SpecError("uncodable", "exponent >= 240")
    lengths = package_merge(hist)
    if len(subtable_prefixes(lengths, canonical_codes(lengths))) > MAX_SUBTABLES:
        raise SpecError("internal", "package-merge code needs more than Max_Subtables")
    return lengths


# ---- spec 3.3: lookup tables ----------------------------------------------------------------------
def build_luts(lengths: list[int], codes: list[int]) -> bytes:
    prefixes = subtable_prefixes(lengths, codes)
    row_of = {p: 1 + i for i, p in enumerate(prefixes)}
    n_luts = len(prefixes) + 2
    assert n_luts <= MAX_LUT_ROWS
    rows = [[None] * 256 for _ in range(n_luts - 1)]
    for s in range(256):
        l = lengths[s]
        if l == 0:
            continue
        assert s <= MAX_CODABLE_EXPONENT and l <= MAX_CODE_LENGTH
        c = codes[s]
        depth = (l - 1) // 8
        for d in range(depth):  # pointer entries along the code's prefix
            row = 0 if d == 0 else row_of[(d, c >> (l - 8 * d))]
            index = (c >> (l - 8 * (d + 1))) & 0xFF
            value = 256 - row_of[(d + 1, c >> (l - 8 * (d + 1)))]
            assert rows[row][index] in (None, value)
            rows[row][index] = value
        row = 0 if depth == 0 else row_of[(depth, c >> (l - 8 * depth))]
        free = 8 * (depth + 1) - l
        low = (c << free) & 0xFF
        for index in range(low, low + (1 << free)):
            assert rows[row][index] is None
            rows[row][index] = s
    # Entries no code covers (only a one-symbol code leaves some) repeat the nearest covered
    # entry before them in the row, or after them if none precedes (spec 3.3).
    for r in rows:
        first = next(v for v in r if v is not None)
        last = first
        for i in range(256):
            if r[i] is None:
                r[i] = last
            last = r[i]
    out = bytearray()
    for r in rows:
        out += bytes(r)
    out += bytes(lengths)
    return bytes(out)


# ---- spec 3.2-3.6: a group's six stored buffers ---------------------------------------------------
@dataclass
class Group:
    luts: bytes
    encoded_exponent: bytes
    sign_mantissa: bytes
    output_positions: bytes
    gaps: bytes
    split_positions: bytes

    def buffers(self) -> dict[str, bytes]:
        return {s: getattr(self, s) for s in SUFFIXES}


def n_blocks_for(n_bytes: int) -> int:
    return (n_bytes + BYTES_PER_BLOCK - 1) // BYTES_PER_BLOCK


def gap_bytes_for(n_blocks: int) -> int:
    return (n_blocks * WINDOWS_PER_BLOCK * GAP_BITS + 7) // 8


def pack_gaps(values: list[int]) -> bytes:
    bits = "".join(format(v, "05b") for v in values)
    bits += "0" * (-len(bits) % 8)
    return int(bits, 2).to_bytes(len(bits) // 8, "big") if bits else b""


def read_gap(gaps: bytes, w: int) -> int:
    bit = GAP_BITS * w
    two = gaps[bit // 8] << 8
    if bit // 8 + 1 < len(gaps):
        two |= gaps[bit // 8 + 1]
    return (two >> (11 - bit % 8)) & 0x1F


def encode_stream(exponents: np.ndarray, lengths: list[int], codes: list[int],
                  pad_bit: str = "0") -> tuple[bytes, list[int]]:
    """spec 3.4: codes MSB-first back to back; the last byte padded (with zeros by default)."""
    parts = []
    starts = []
    pos = 0
    table = [format(codes[s], f"0{lengths[s]}b") if lengths[s] else None for s in range(256)]
    for e in exponents.tolist():
        starts.append(pos)
        parts.append(table[e])
        pos += lengths[e]
    bits = "".join(parts)
    bits += pad_bit * (-len(bits) % 8)
    return int(bits, 2).to_bytes(len(bits) // 8, "big"), starts


def gaps_and_positions(starts: list[int], n_bytes: int) -> tuple[list[int], list[int]]:
    """spec 3.5 and 3.6 from the code start positions."""
    n_blocks = n_blocks_for(n_bytes)
    gaps = [None] * (n_blocks * WINDOWS_PER_BLOCK)
    for p in starts:
        w = p // BITS_PER_WINDOW
        if gaps[w] is None:
            gaps[w] = p - w * BITS_PER_WINDOW
    gaps = [0 if g is None else g for g in gaps]  # windows with no code start: df11 writes 0
    positions = []
    i = 0
    for b in range(n_blocks):
        while i < len(starts) and starts[i] < b * BITS_PER_BLOCK:
            i += 1
        positions.append(i)
    positions.append(len(starts))
    return gaps, positions


def encode_group(members: list[np.ndarray], lengths: list[int] | None = None,
                 pad_bit: str = "0") -> Group:
    flat = [np.asarray(m, dtype=np.uint16).reshape(-1) for m in members]
    w = np.concatenate(flat)
    exponents, sign_mantissa = split_bf16(w)
    if lengths is None:
        lengths = optimal_lengths(histogram(exponents))
    codes = canonical_codes(lengths)
    stream, starts = encode_stream(exponents, lengths, codes, pad_bit)
    gaps, positions = gaps_and_positions(starts, len(stream))
    splits = np.cumsum([len(f) for f in flat])[:-1].astype("<i8")
    return Group(
        luts=build_luts(lengths, codes),
        encoded_exponent=stream,
        sign_mantissa=sign_mantissa.tobytes(),
        output_positions=np.array(positions, dtype="<u4").tobytes(),
        gaps=pack_gaps(gaps),
        split_positions=splits.tobytes(),
    )


# ---- spec 3.8: structural validation ----------------------------------------------------------
def validate(g: Group) -> dict:
    n = len(g.sign_mantissa)
    n_bytes = len(g.encoded_exponent)
    # Z1..Z6: sizes
    if n == 0:
        raise SpecError("bad_group", "no weights")
    if n > MAX_GROUP_ELEMENTS:
        raise SpecError("bad_group", "more than Max_Group_Elements")
    if (n + 7) // 8 > n_bytes:
        raise SpecError("bad_group", "n_elements > 8 * n_bytes")
    n_blocks = n_blocks_for(n_bytes)
    if len(g.output_positions) != 4 * (n_blocks + 1):
        raise SpecError("bad_group", "output_positions size")
    if len(g.gaps) != gap_bytes_for(n_blocks):
        raise SpecError("bad_group", "gaps size")
    if len(g.split_positions) % 8:
        raise SpecError("bad_group", "split_positions size")
    # L1, L2: lookup tables. Depth of a row = fewest pointer steps from the root (at most
    # Max_Lut_Depth); U: unusable entries are counted, not rejected.
    if len(g.luts) % 256:
        raise SpecError("bad_lut", "luts size")
    n_luts = len(g.luts) // 256
    if not 2 <= n_luts <= MAX_LUT_ROWS:
        raise SpecError("bad_lut", f"{n_luts} rows")
    lengths_row = n_luts - 1
    lengths = g.luts[256 * lengths_row:]
    depth = {0: 0}
    queue = [0]
    unusable = 0
    for row in queue:
        d = depth[row]
        for i in range(256):
            v = g.luts[256 * row + i]
            if v >= FIRST_POINTER_ENTRY:
                t = 256 - v
                if t >= lengths_row:
                    raise SpecError("bad_lut", f"row {row} index {i} points to row {t}")
                if t not in depth and d < MAX_LUT_DEPTH:
                    depth[t] = d + 1
                    queue.append(t)
                if depth.get(t) != d + 1:
                    unusable += 1
            elif not 8 * d < lengths[v] <= 8 * d + 8:
                unusable += 1
    # P1..P5: output positions
    op = struct.unpack(f"<{n_blocks + 1}I", g.output_positions)
    if op[0] != 0:
        raise SpecError("bad_output_positions", "op[0] != 0")
    for b in range(n_blocks):
        if op[b + 1] < op[b]:
            raise SpecError("bad_output_positions", f"op[{b + 1}] < op[{b}]")
        if op[b + 1] - op[b] > BITS_PER_BLOCK:
            raise SpecError("bad_output_positions", f"block {b} > 32768 weights")
        if op[b + 1] == op[b] and b < n_blocks - 1:
            raise SpecError("bad_output_positions", f"block {b} empty")
    if op[n_blocks] != n:
        raise SpecError("bad_output_positions", "op[n_blocks] != n")
    # S1: split positions
    splits = struct.unpack(f"<{len(g.split_positions) // 8}q", g.split_positions)
    prev = 0
    for s in splits:
        if s <= prev or s >= n:
            raise SpecError("bad_group", f"split position {s}")
        prev = s
    return {"n": n, "n_bytes": n_bytes, "n_blocks": n_blocks, "op": op, "depth": depth,
            "unusable": unusable,
            "max_block_weights": max(op[b + 1] - op[b] for b in range(n_blocks))}


# ---- spec 4: decoding ----------------------------------------------------------------------------
def stream_bits(stream: bytes, pos: int, count: int) -> int:
    """`count` stream bits from bit `pos`, MSB-first; bits past the end read as zero (4.1)."""
    first = pos // 8
    chunk = stream[first:first + (count + 15) // 8]
    chunk += bytes((count + 15) // 8 - len(chunk))
    v = int.from_bytes(chunk, "big")
    return (v >> (8 * len(chunk) - (pos % 8) - count)) & ((1 << count) - 1)


def lookup(g: Group, info: dict, pos: int) -> tuple[int, int] | None:
    """spec 3.3: (exponent, code length) of the code starting at bit pos, or None if the walk
    meets an unusable entry (a pointer that does not lead one level down, or a symbol whose
    length does not fit its depth)."""
    n_luts = len(g.luts) // 256
    row = 0
    for d in range(MAX_LUT_DEPTH + 1):
        v = g.luts[256 * row + stream_bits(g.encoded_exponent, pos + 8 * d, 8)]
        if v < FIRST_POINTER_ENTRY:
            length = g.luts[256 * (n_luts - 1) + v]
            return (v, length) if 8 * d < length <= 8 * d + 8 else None
        if info["depth"].get(256 - v) != d + 1:
            return None
        row = 256 - v
    raise AssertionError("usable pointers stop at depth 3")


def decode_reference(g: Group) -> np.ndarray:
    """spec 4.2: sequential decoding with every decode-time check (D1..D4)."""
    info = validate(g)
    n, op = info["n"], info["op"]
    end_bit = 8 * info["n_bytes"]
    out = np.zeros(n, dtype=np.uint16)
    pos = 0
    checked_window = -1
    next_block = 0
    for i in range(n):
        if pos >= end_bit:
            raise SpecError("corrupt_data", f"stream ends after {i} codes")
        while next_block <= info["n_blocks"] and next_block * BITS_PER_BLOCK <= pos:
            if op[next_block] != i:
                raise SpecError("bad_output_positions", f"op[{next_block}] != {i}")
            next_block += 1
        w = pos // BITS_PER_WINDOW
        if w != checked_window:
            if read_gap(g.gaps, w) != pos % BITS_PER_WINDOW:
                raise SpecError("bad_gap", f"gap {w}")
            checked_window = w
        code = lookup(g, info, pos)
        if code is None:
            raise SpecError("corrupt_data", f"code {i} reaches an unusable table entry")
        e, length = code
        if pos + length > end_bit:
            raise SpecError("corrupt_data", f"code {i} runs past the end")
        out[i] = join_bf16(e, g.sign_mantissa[i])
        pos += length
    while next_block <= info["n_blocks"]:
        if op[next_block] != n:
            raise SpecError("bad_output_positions", f"op[{next_block}] != n")
        next_block += 1
    if (pos + 7) // 8 != info["n_bytes"]:
        raise SpecError("corrupt_data", "trailing bytes")
    return out


def decode_per_window(g: Group) -> np.ndarray:
    """spec 4.4: what one GPU thread per window computes (the official kernel's procedure),
    for a group that decode_reference accepted. Bits past the stream read as zero here."""
    info = validate(g)
    n, op = info["n"], info["op"]
    out = np.full(n, 0xFFFF, dtype=np.uint16)
    for b in range(info["n_blocks"]):
        index = op[b]  # output index of the next code (exclusive prefix sum of the counts)
        for w in range(b * WINDOWS_PER_BLOCK, (b + 1) * WINDOWS_PER_BLOCK):
            pos = w * BITS_PER_WINDOW + read_gap(g.gaps, w)
            while pos < (w + 1) * BITS_PER_WINDOW:
                code = lookup(g, info, pos)
                if code is None:
                    # Only codes after the group's last one reach unusable entries in a valid
                    # group; the thread stops (its remaining codes would be discarded).
                    assert index >= op[b + 1], "a code of the group reaches an unusable entry"
                    break
                if index < op[b + 1]:
                    out[index] = join_bf16(code[0], g.sign_mantissa[index])
                index += 1
                pos += code[1]
    return out


# ---- spec 6: safetensors ---------------------------------------------------------------------------
DTYPE_SIZE = {"U8": 1, "I8": 1, "BF16": 2, "F16": 2, "I64": 8, "F32": 4, "U32": 4, "I32": 4}


def header_text(entries: list[tuple[str, dict]], metadata: dict | None) -> str:
    """Compact JSON, keys in the given order, padded with spaces to a multiple of 8 (6.4)."""
    obj = {}
    if metadata is not None:
        obj["__metadata__"] = metadata
    for name, entry in entries:
        obj[name] = entry
    text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
    return text + " " * (-len(text.encode()) % 8)


def safetensors_bytes(tensors: list[tuple[str, str, list[int], bytes]],
                      metadata: dict | None) -> bytes:
    entries = []
    offset = 0
    for name, dtype, shape, data in tensors:
        assert len(data) == int(np.prod(shape, dtype=object)) * DTYPE_SIZE[dtype], name
        entries.append((name, {"dtype": dtype, "shape": list(shape),
                               "data_offsets": [offset, offset + len(data)]}))
        offset += len(data)
    text = header_text(entries, metadata).encode()
    return struct.pack("<Q", len(text)) + text + b"".join(t[3] for t in tensors)


# ---- spec 5: a single-file DF11 shard with its df11 metadata ------------------------------------------
@dataclass
class Member:
    name: str
    shape: list[int]
    data: np.ndarray  # uint16 BF16 patterns, flattened

    @property
    def raw(self) -> bytes:
        return self.data.astype("<u2").tobytes()


@dataclass
class Shard:
    """One vector file: one group (its members), optional raw tensors, and its original."""
    file: str
    group: str
    members: list[Member]
    stored: Group
    raw: list[tuple[str, str, list[int], bytes]] = field(default_factory=list)
    metadata_overrides: dict = field(default_factory=dict)  # top-level keys to set

    def original(self) -> bytes:
        tensors = [(m.name, "BF16", m.shape, m.raw) for m in self.members] + self.raw
        tensors.sort(key=lambda t: t[0])
        return safetensors_bytes(tensors, {"format": "pt"})

    def metadata(self) -> dict:
        original = self.original()
        n_header = struct.unpack("<Q", original[:8])[0]
        return {**self._metadata(original, n_header), **self.metadata_overrides}

    def _metadata(self, original: bytes, n_header: int) -> dict:
        return {
            "spec_version": SPEC_VERSION,
            "encoder": ENCODER_NAME,
            "groups": [{
                "name": self.group,
                "n_elements": sum(int(np.prod(m.shape)) for m in self.members),
                "members": [{"name": m.name, "dtype": "BF16", "shape": m.shape,
                             "n_elements": int(np.prod(m.shape)), "xxh3": xxh3_hex(m.raw)}
                            for m in self.members],
                "stored": {s: xxh3_hex(b) for s, b in self.stored.buffers().items()},
            }],
            "tensors": {name: {"xxh3": xxh3_hex(data)} for name, _, _, data in self.raw},
            "sources": [{"file": self.file, "size": len(original),
                         "sha256": sha256_hex(original),
                         "header": original[8:8 + n_header].decode()}],
            "side_files": [],
        }

    def tensors(self) -> list[tuple[str, str, list[int], bytes]]:
        b = self.stored.buffers()
        n_luts = len(b["luts"]) // 256
        out = [(f"{self.group}.luts", "U8", [n_luts, 256], b["luts"])]
        for s in SUFFIXES[1:5]:
            out.append((f"{self.group}.{s}", "U8", [len(b[s])], b[s]))
        out.append((f"{self.group}.split_positions", "I64", [len(b["split_positions"]) // 8],
                    b["split_positions"]))
        return out + self.raw

    def file_bytes(self, df11_json: str | None = None) -> bytes:
        meta = {"format": "pt",
                "df11": df11_json if df11_json is not None else
                json.dumps(self.metadata(), separators=(",", ":"))}
        return safetensors_bytes(self.tensors(), meta)


def bf16(values) -> np.ndarray:
    """BF16 patterns of float values (exactly representable ones: the vectors use such)."""
    f = np.asarray(values, dtype=np.float32)
    bits = f.view(np.uint32)
    assert np.all(bits & 0xFFFF == 0), "value not exactly representable in BF16"
    return (bits >> 16).astype(np.uint16)


def patterns_with_exponents(rng: Rng, exponents: list[int]) -> np.ndarray:
    """BF16 patterns with the given exponents and pseudo-random sign and mantissa."""
    out = np.empty(len(exponents), dtype=np.uint16)
    for i, e in enumerate(exponents):
        sm = rng.below(256)
        out[i] = join_bf16(e, sm)
    return out


def exponent_sequence(rng: Rng, counts: dict[int, int]) -> list[int]:
    seq = [e for e in sorted(counts) for _ in range(counts[e])]
    return rng.shuffle(seq)


# A realistic exponent distribution of trained weights (|w| mostly in 2^-12 .. 2^-3).
WEIGHT_LIKE = {112: 2, 113: 4, 114: 9, 115: 18, 116: 36, 117: 70, 118: 130, 119: 220,
               120: 320, 121: 380, 122: 330, 123: 210, 124: 90, 125: 25, 126: 6, 127: 2}


def stream_bits_for(counts: dict[int, int]) -> int:
    hist = [0] * 256
    for e, c in counts.items():
        hist[e] = c
    lengths = optimal_lengths(hist)
    return sum(c * lengths[e] for e, c in counts.items())


def counts_for_bits(target_bits_lo: int, target_bits_hi: int, scale_from: dict[int, int]):
    """Scales `scale_from` and then adjusts the most frequent exponent one weight at a time
    until the optimal code's stream has between lo and hi bits (inclusive)."""
    base = sum(c * 4 for c in scale_from.values())  # about 4 bits per weight for this shape
    factor = target_bits_lo / base
    counts = {e: max(1, round(c * factor)) for e, c in scale_from.items()}
    top = max(counts, key=lambda e: counts[e])
    for _ in range(100000):
        bits = stream_bits_for(counts)
        if target_bits_lo <= bits <= target_bits_hi:
            return counts
        counts[top] += 1 if bits < target_bits_lo else -1
    raise AssertionError("no histogram found")


# ---- the vectors ------------------------------------------------------------------------------
@dataclass
class Valid:
    name: str
    shard: Shard
    description: str
    canonical: bool


@dataclass
class Invalid:
    name: str
    data: bytes
    expected_error: str
    stage: str
    description: str


# spec 8.1: the tiny worked example.
WORKED_TINY_VALUES = [1.0, -0.5, 1.5, 2.0, -1.25, 0.75, 1.0, 0.25, -1.75]

# spec 8.2: the multi-level worked example: Fibonacci counts give codes of 1..9 bits.
WORKED_MULTILEVEL_COUNTS = {127: 55, 126: 34, 128: 21, 125: 13, 124: 8, 129: 5, 123: 3,
                            122: 2, 121: 1, 130: 1}


def worked_tiny() -> Shard:
    w = bf16(WORKED_TINY_VALUES)
    m = Member("model.layers.0.mlp.down_proj.weight", [3, 3], w)
    return Shard("worked_tiny.safetensors", "model.layers.0.mlp.down_proj", [m],
                 encode_group([w]))


def worked_multilevel() -> Shard:
    rng = Rng(0x5EED0002)
    exps = exponent_sequence(rng, WORKED_MULTILEVEL_COUNTS)
    w = patterns_with_exponents(rng, exps)
    m = Member("lm_head.weight", [11, 13], w)
    return Shard("worked_multilevel.safetensors", "lm_head", [m], encode_group([w]))


def single(file: str, group: str, member: str, w: np.ndarray, shape=None,
           lengths=None, pad_bit="0") -> Shard:
    shape = shape or [len(w)]
    return Shard(file, group, [Member(member, list(shape), w)],
                 encode_group([w], lengths=lengths, pad_bit=pad_bit))


def sized_vector(name: str, seed: int, lo_bits: int, hi_bits: int,
                 predicate=None) -> Shard:
    """A one-member group whose stream has lo_bits..hi_bits bits (so n_bytes is fixed)."""
    rng = Rng(seed)
    counts = counts_for_bits(lo_bits, hi_bits, WEIGHT_LIKE)
    for attempt in range(1000):
        exps = exponent_sequence(rng, counts)
        w = patterns_with_exponents(rng, exps)
        shard = single(f"{name}.safetensors", "model.layers.1.mlp.up_proj",
                       "model.layers.1.mlp.up_proj.weight", w)
        if predicate is None or predicate(shard.stored):
            return shard
    raise AssertionError(f"{name}: no arrangement satisfies the predicate")


def last_block_has_no_code_start(g: Group) -> bool:
    info = validate(g)
    op = info["op"]
    return info["n_blocks"] >= 2 and op[-1] == op[-2]


def last_block_has_code_start(g: Group) -> bool:
    info = validate(g)
    op = info["op"]
    return op[-1] > op[-2]


def deep_code_lengths() -> list[int]:
    """Code lengths 1..31 and two of 32 (Kraft sum 1): subtables at depths 1, 2 and 3."""
    lengths = [0] * 256
    for i, l in enumerate(list(range(1, 32)) + [32, 32]):
        lengths[100 + i] = l
    return lengths


def deep_vector() -> Shard:
    lengths = deep_code_lengths()
    by_length = {}
    for s, l in enumerate(lengths):
        if l:
            by_length.setdefault(l, []).append(s)
    rng = Rng(0x5EED0007)
    # A 31-bit and a 32-bit code first: the third code starts at bit 63, so window 1's first
    # code starts at bit 95 (gap 31, the largest value), then every symbol at least once.
    exps = [by_length[31][0], by_length[32][0], by_length[32][1]]
    rest = [s for s in range(256) if lengths[s]] * 2 + [by_length[1][0]] * 40
    exps += rng.shuffle(rest)
    w = patterns_with_exponents(rng, exps)
    return single("deep_32bit_codes.safetensors", "model.layers.2.self_attn.o_proj",
                  "model.layers.2.self_attn.o_proj.weight", w, lengths=lengths)


def max_subtables_lengths() -> list[int]:
    """All 240 codable exponents: 32 codes of 7 bits, 176 of 8, 32 of 9 bits. The 9-bit codes
    fill 16 root entries, so exactly Max_Subtables = 16 subtables (n_luts = 18)."""
    lengths = [0] * 256
    for s in range(240):
        lengths[s] = 7 if s < 32 else (8 if s < 208 else 9)
    return lengths


def max_subtables_vector() -> Shard:
    rng = Rng(0x5EED0008)
    exps = rng.shuffle(list(range(240)) * 2)
    w = patterns_with_exponents(rng, exps)
    return single("max_subtables.safetensors", "model.embed_tokens",
                  "model.embed_tokens.weight", w, shape=[40, 12],
                  lengths=max_subtables_lengths())


def multi_member_vector() -> Shard:
    rng = Rng(0x5EED0009)
    shapes = [("self_attn.q_proj", [16, 8]), ("self_attn.k_proj", [4, 8]),
              ("self_attn.v_proj", [4, 8]), ("mlp.down_proj", [8, 2, 3])]
    members = []
    for sub, shape in shapes:
        n = int(np.prod(shape))
        exps = [min(239, max(0, 120 + int(rng.below(9)) - 4)) for _ in range(n)]
        members.append(Member(f"model.layers.5.{sub}.weight", shape,
                              patterns_with_exponents(rng, exps)))
    stored = encode_group([m.data for m in members])
    norm = patterns_with_exponents(rng, [127] * 8)
    raw = [("model.layers.5.input_layernorm.weight", "BF16", [8], norm.astype("<u2").tobytes())]
    return Shard("multi_member.safetensors", "model.layers.5", members, stored, raw)


def all_patterns_vector() -> Shard:
    w = np.array([p for p in range(0x10000) if ((p >> 7) & 0xFF) <= MAX_CODABLE_EXPONENT],
                 dtype=np.uint16)
    assert len(w) == 61440
    return single("all_codable_patterns.safetensors", "model.embed_tokens",
                  "model.embed_tokens.weight", w, shape=[480, 128])


def special_values_vector() -> Shard:
    w = np.array([
        0x0000, 0x8000,  # +0, -0
        0x0001, 0x8001, 0x007F, 0x807F, 0x0040,  # subnormals (exponent 0)
        0x0080, 0x8080,  # smallest normals
        0x77FF, 0xF7FF,  # largest codable magnitude (exponent 239): just below 2^113
        0x7780, 0xF780,  # 2^112, -2^112
        0x3F80, 0xBF80, 0x4049, 0xC049,  # 1, -1, ~pi, ~-pi
        0x0000, 0x8000, 0x0000,
    ], dtype=np.uint16)
    return single("special_values.safetensors", "model.layers.3.mlp.gate_proj",
                  "model.layers.3.mlp.gate_proj.weight", w, shape=[4, 5])


def dense_block_vector() -> Shard:
    # One symbol: 1-bit codes. 32800 weights: block 0 holds 32768 of them (one per bit), more
    # than Max_Weights_Per_Block_Compat: valid, but df11 would store such a tensor raw.
    rng = Rng(0x5EED000C)
    w = patterns_with_exponents(rng, [126] * 32800)
    return single("block_32768_weights.safetensors", "model.layers.4.mlp.up_proj",
                  "model.layers.4.mlp.up_proj.weight", w, shape=[32800])


def with_stored(shard: Shard, **changes) -> Shard:
    return replace(shard, stored=replace(shard.stored, **changes))


def code_starts(g: Group) -> list[int]:
    """Bit positions where the codes start (spec 4.2), for a group known to be valid."""
    info = validate(g)
    pos = 0
    starts = []
    for _ in range(len(g.sign_mantissa)):
        starts.append(pos)
        pos += lookup(g, info, pos)[1]
    return starts


def tail_gaps_vector() -> Shard:
    base = sized_vector("tail_gaps_nonzero", 0x5EED000D, 4000 * 8 + 1, 4000 * 8 + 7)
    g = base.stored
    n_windows = n_blocks_for(len(g.encoded_exponent)) * WINDOWS_PER_BLOCK
    values = [read_gap(g.gaps, w) for w in range(n_windows)]
    last_window_with_start = code_starts(g)[-1] // BITS_PER_WINDOW
    for w in range(last_window_with_start + 1, n_windows):
        values[w] = (7 * w + 3) % 32  # anything: decoders ignore these fields
    return replace(with_stored(base, gaps=pack_gaps(values)),
                   file="tail_gaps_nonzero.safetensors")


def unusable_entries_vector() -> Shard:
    """An incomplete code whose unused table entries are unusable, as the official encoder
    leaves around its end-of-file code; its padding bits (ones) reach one of them."""
    lengths = [0] * 256
    lengths[127], lengths[126], lengths[125], lengths[128], lengths[124] = 1, 2, 3, 4, 9
    rng = Rng(0x5EED000E)
    exps = rng.shuffle([127] * 30 + [126] * 14 + [125] * 7 + [128] * 4 + [124] * 3)
    w = patterns_with_exponents(rng, exps)
    shard = single("unusable_entries_unreached.safetensors", "model.layers.6.mlp.down_proj",
                   "model.layers.6.mlp.down_proj.weight", w, lengths=lengths, pad_bit="1")
    rows = luts_rows(shard.stored)
    assert rows[0][240] == 255 and rows[1][0] == 124  # the only pointer; 124's 9-bit code
    rows[0][241:248] = bytes([3]) * 7      # symbol 3: code length 0
    rows[0][248:256] = bytes([130]) * 8    # symbol 130: length 12 in the root
    rows[2][130] = 12
    rows[1][128:192] = bytes([255]) * 64   # row 1 points to itself
    rows[1][192:256] = bytes([127]) * 64   # a 1-bit symbol at depth 1
    return with_stored(shard, luts=join_rows(rows))


def table_limited_lengths(hist: list[int]) -> list[int]:
    """A valid code when package-merge needs too many subtables: the package-merge code with
    the length limit lowered until it fits (spec 2.4). Valid but not optimal; df11 itself
    finds the optimal code (spec 2.3 step 3)."""
    for limit in range(MAX_CODE_LENGTH, 7, -1):
        if sum(1 for c in hist if c) > 2**limit:
            break
        lengths = package_merge(hist, limit)
        if len(subtable_prefixes(lengths, canonical_codes(lengths))) <= MAX_SUBTABLES:
            return lengths
    raise AssertionError("no length limit meets the table limit")


def lut_limit_vector() -> Shard:
    # One exponent with 10,000 weights and 239 exponents once each: the optimal code gives the
    # dominant exponent 1 bit and the others 8 or 9 bits, whose 9-bit codes need 111 subtables.
    hist = [1] * 240
    hist[120] = 10000
    lengths = package_merge(hist)
    assert len(subtable_prefixes(lengths, canonical_codes(lengths))) > MAX_SUBTABLES
    rng = Rng(0x5EED000F)
    exps = rng.shuffle([e for e in range(240) for _ in range(hist[e])])
    w = patterns_with_exponents(rng, exps)
    return single("table_limit_fallback.safetensors", "model.layers.7.mlp.down_proj",
                  "model.layers.7.mlp.down_proj.weight", w, shape=[len(w)],
                  lengths=table_limited_lengths(hist))


def official_style_group(exponents: np.ndarray, sign_mantissa: np.ndarray) -> Group | None:
    """A group laid out the way the official dfloat11 compressor writes it (the facts spec 3.3,
    3.4 and 3.5 record), to show that such files are valid: a Huffman code with an extra
    end-of-file leaf of count 1 that is never written in full; table rows for each code prefix
    ordered by length, each row filled by carrying the previous entry forward (also across
    rows); padding bits taken from the end-of-file code; and the padding's offset as the gap of
    a window where only padding starts. None if some code would exceed 32 bits."""
    import heapq
    hist = histogram(exponents)
    eof = 256
    # Leaves carry (symbol, length, value); merging prepends 0 to the lighter node's codes.
    heap = [(c, s, [(s, 0, 0)]) for s, c in enumerate(hist) if c] + [(1, eof, [(eof, 0, 0)])]
    heapq.heapify(heap)
    order = 257
    while len(heap) > 1:
        a = heapq.heappop(heap)
        b = heapq.heappop(heap)
        merged = [(s, n + 1, v) for s, n, v in a[2]] + [(s, n + 1, (1 << n) + v) for s, n, v in b[2]]
        heapq.heappush(heap, (a[0] + b[0], order, merged))
        order += 1
    table = heap[0][2]  # (symbol, length, value) in the merged node's order
    if max(n for _, n, _ in table) > MAX_CODE_LENGTH:
        return None
    bitstr = {s: format(v, f"0{n}b") for s, n, v in table}
    prefixes = [""]
    for s, n, v in table:
        if s != eof:
            p = bitstr[s][:(n - 1) // 8 * 8]
            if p not in prefixes:
                prefixes.append(p)
    prefixes.sort(key=len)
    if len(prefixes) > 1 + MAX_SUBTABLES:
        return None
    rows = []
    carried = None
    for p in prefixes:
        entries = {}
        depth = len(p) // 8
        for s, n, v in table:
            if s == eof or not bitstr[s].startswith(p):
                continue
            if (n - 1) // 8 == depth:
                entries[int(bitstr[s][8 * depth:].ljust(8, "0"), 2)] = s
            else:
                entries[int(bitstr[s][8 * depth:8 * depth + 8], 2)] = \
                    256 - prefixes.index(bitstr[s][:8 * depth + 8])
        row = []
        for i in range(256):
            carried = entries.get(i, carried)
            row.append(carried)
        rows.append(bytes(row))
    lengths = [0] * 256
    for s, n, _ in table:
        if s != eof:
            lengths[s] = n
    luts = b"".join(rows) + bytes(lengths)
    # Stream: codes, then the first bits of the end-of-file code as padding.
    bits = "".join(bitstr[e] for e in exponents.tolist())
    starts = np.concatenate([[0], np.cumsum([lengths[e] for e in exponents.tolist()])[:-1]])
    end = len(bits)
    if end % 8:
        bits += (bitstr[eof] + "0" * 8)[:-end % 8]
    stream = int(bits, 2).to_bytes(len(bits) // 8, "big")
    gaps, positions = gaps_and_positions([int(x) for x in starts], len(stream))
    last_window = int(starts[-1]) // BITS_PER_WINDOW
    if end % 8 and end // BITS_PER_WINDOW > last_window:
        gaps[end // BITS_PER_WINDOW] = end % BITS_PER_WINDOW  # padding starts a window
    return Group(luts=luts, encoded_exponent=stream, sign_mantissa=sign_mantissa.tobytes(),
                 output_positions=np.array(positions, dtype="<u4").tobytes(),
                 gaps=pack_gaps(gaps), split_positions=b"")


def official_style_vector() -> Shard:
    """Weight-like data whose official-style tables carry a root symbol into a subtable."""
    for seed in range(0x5EED0100, 0x5EED0200):
        rng = Rng(seed)
        counts = {e: max(1, c * (1 + rng.below(3)) // 2) for e, c in WEIGHT_LIKE.items()}
        counts[100 + rng.below(10)] = 1  # a rare exponent deepens the tree
        exps = np.array(exponent_sequence(rng, counts), dtype=np.uint8)
        w = patterns_with_exponents(rng, exps.tolist())
        _, sm = split_bf16(w)
        g = official_style_group(exps, sm)
        if g is None or validate(g)["unusable"] == 0:
            continue
        m = Member("model.layers.8.self_attn.q_proj.weight", [len(w)], w)
        return Shard("official_style.safetensors", "model.layers.8.self_attn.q_proj", [m], g)
    raise AssertionError("no seed gives unusable entries")


def valid_vectors() -> list[Valid]:
    v = []
    v.append(Valid("worked_tiny", worked_tiny(),
                   "spec 8.1: 9 weights, 4 exponents, codes of 1..3 bits, 15 bits + 1 padding bit",
                   True))
    v.append(Valid("worked_multilevel", worked_multilevel(),
                   "spec 8.2: 143 weights with Fibonacci exponent counts: codes of 1..9 bits, "
                   "one subtable (n_luts 3)", True))
    w1 = bf16([0.5])
    v.append(Valid("one_element",
                   single("one_element.safetensors", "lm_head", "lm_head.weight", w1, [1, 1]),
                   "a single weight: one symbol, a 1-bit code, one byte of stream", True))
    v.append(Valid("one_symbol",
                   single("one_symbol.safetensors", "model.layers.0.mlp.gate_proj",
                          "model.layers.0.mlp.gate_proj.weight",
                          bf16([0.0] * 37 + [-0.0] * 27), [8, 8]),
                   "+-0 only: one symbol (exponent 0), 64 weights in 64 bits", True))
    v.append(Valid("bytes_4095", sized_vector("bytes_4095", 0x5EED0003, 4094 * 8 + 1, 4095 * 8),
                   "n_bytes 4095: one block, its last window partly used", True))
    v.append(Valid("bytes_4096", sized_vector("bytes_4096", 0x5EED0004, 4096 * 8, 4096 * 8),
                   "n_bytes 4096: exactly one block, 32768 bits, no padding", True))
    v.append(Valid("bytes_4097",
                   sized_vector("bytes_4097", 0x5EED0005, 4096 * 8 + 1, 4097 * 8,
                                last_block_has_code_start),
                   "n_bytes 4097: two blocks, the second holds code starts in its first byte",
                   True))
    v.append(Valid("bytes_4097_empty_last_block",
                   sized_vector("bytes_4097_empty_last_block", 0x5EED0006, 4096 * 8 + 1,
                                4097 * 8, last_block_has_no_code_start),
                   "n_bytes 4097: the last code starts in block 0 and ends in block 1, so "
                   "block 1 holds no code start (op[1] = op[2] = n) and its gaps are ignored",
                   True))
    v.append(Valid("deep_32bit_codes", deep_vector(),
                   "code lengths 1..32 (not the optimal code for this data): subtables at "
                   "depths 1..3, a code starting at bit 63 (gap 31)", False))
    v.append(Valid("max_subtables", max_subtables_vector(),
                   "all 240 codable exponents; 9-bit codes under 16 root entries: exactly "
                   "Max_Subtables = 16 subtables, n_luts = 18, pointers 255..240", False))
    v.append(Valid("multi_member", multi_member_vector(),
                   "4 members (q, k, v, down_proj) with split positions, plus a raw tensor", True))
    v.append(Valid("all_codable_patterns", all_patterns_vector(),
                   "all 61,440 BF16 patterns with exponent <= 239, ascending", True))
    v.append(Valid("special_values", special_values_vector(),
                   "+-0, subnormals, smallest normals, the largest codable magnitudes "
                   "(0x77FF, 0xF7FF < 2^113), negative values", True))
    v.append(Valid("block_32768_weights", dense_block_vector(),
                   "one symbol, 32800 1-bit codes: block 0 holds 32768 weights (the most a "
                   "block can hold; above Max_Weights_Per_Block_Compat)", True))
    v.append(Valid("tail_gaps_nonzero", tail_gaps_vector(),
                   "gap fields of windows with no code start hold arbitrary values: decoders "
                   "ignore them", False))
    v.append(Valid("unusable_entries_unreached", unusable_entries_vector(),
                   "an incomplete code whose unused entries are unusable (length 0, a root "
                   "symbol of 12 bits, a self-pointer, a 1-bit symbol in a subtable), as the "
                   "official encoder leaves around its end-of-file code; no code of the group "
                   "reaches them, but the padding (ones) does", False))
    v.append(Valid("official_style", official_style_vector(),
                   "laid out as the official compressor does: a Huffman code with an unwritten "
                   "end-of-file leaf, tables filled by carrying entries forward (a root symbol "
                   "lands in a subtable: unusable, unreached), end-of-file bits as padding", False))
    v.append(Valid("table_limit_fallback", lut_limit_vector(),
                   "one exponent 10,000 times and the 239 others once: the package-merge code "
                   "needs 111 subtables (> Max_Subtables), so the encoder must find another "
                   "code (this one: package-merge with the length limit lowered until it "
                   "fits; df11's optimal one is no longer)", False))
    future = worked_tiny()
    future = replace(future, file="metadata_future_minor.safetensors",
                     metadata_overrides={"spec_version": "1.7",
                                         "future_key": {"anything": [1, 2, 3]}})
    v.append(Valid("metadata_future_minor", future,
                   "the worked example with spec_version \"1.7\" and an unknown top-level key: "
                   "readers of 1.x MUST accept both", True))
    pad = single("padding_ones.safetensors", "model.layers.0.mlp.up_proj",
                 "model.layers.0.mlp.up_proj.weight", bf16(WORKED_TINY_VALUES), [9],
                 pad_bit="1")
    v.append(Valid("padding_ones", pad,
                   "the worked example with its padding bit set (the official encoder pads "
                   "with code bits): decoders ignore padding", False))
    return v


# ---- invalid vectors -----------------------------------------------------------------------------
def luts_rows(g: Group) -> list[bytearray]:
    return [bytearray(g.luts[i:i + 256]) for i in range(0, len(g.luts), 256)]


def join_rows(rows) -> bytes:
    return b"".join(bytes(r) for r in rows)


def set_op(g: Group, b: int, value: int) -> bytes:
    op = bytearray(g.output_positions)
    op[4 * b:4 * b + 4] = struct.pack("<I", value)
    return bytes(op)


def set_gap(g: Group, w: int, value: int) -> bytes:
    n_windows = len(g.gaps) * 8 // GAP_BITS
    values = [read_gap(g.gaps, i) for i in range(n_windows)]
    values[w] = value
    return pack_gaps(values)


def invalid_vectors(valid: dict[str, Valid]) -> list[Invalid]:
    tiny = valid["worked_tiny"].shard
    ml = valid["worked_multilevel"].shard
    deep = valid["deep_32bit_codes"].shard
    b4097 = valid["bytes_4097"].shard
    mm = valid["multi_member"].shard
    dense = valid["block_32768_weights"].shard
    out = []

    def group_fault(name, shard, expected, stage, description, **changes):
        s = with_stored(shard, **changes)
        out.append(Invalid(name, s.file_bytes(), expected, stage, description))

    # spec 3.3 / 3.8 L-rules
    rows = luts_rows(ml.stored)
    rows[0][255] = 256 - 16
    group_fault("lut_pointer_to_missing_row", ml, "bad_lut", "validate",
                "root entry 255 = 240 points to row 16; luts has 3 rows", luts=join_rows(rows))
    rows = luts_rows(ml.stored)
    rows[0][255] = 256 - 2
    group_fault("lut_pointer_to_lengths_row", ml, "bad_lut", "validate",
                "root entry 255 = 254 points to row 2, the code-lengths row",
                luts=join_rows(rows))
    # spec 3.3 unusable entries reached by a code of the group: found when decoding (D5)
    rows = luts_rows(ml.stored)
    rows[1][0:128] = bytes([255]) * 128
    group_fault("lut_cycle", ml, "corrupt_data", "decode",
                "row 1 entries 0..127 (exponent 121's) = 255 point back to row 1: a pointer "
                "that does not lead one level down, reached by weight 131",
                luts=join_rows(rows))
    rows = luts_rows(deep.stored)
    # rows: root, depth 1, depth 2, depth 3, lengths. Turn a depth-3 symbol into a pointer.
    target = rows[3][0]
    rows[3] = bytearray(255 if v == target else v for v in rows[3])
    group_fault("lut_too_deep", deep, "corrupt_data", "decode",
                f"the depth-3 entries of exponent {target} = 255 point to another row: a fifth "
                "lookup (codes over 32 bits), reached by that exponent's codes",
                luts=join_rows(rows))
    rows = luts_rows(ml.stored)
    rows[2][127] = 0
    group_fault("lut_code_length_zero", ml, "corrupt_data", "decode",
                "exponent 127 (root entries 0..127) has code length 0", luts=join_rows(rows))
    rows = luts_rows(deep.stored)
    rows[-1][rows[3][0]] = 33
    group_fault("lut_code_length_33", deep, "corrupt_data", "decode",
                f"exponent {rows[3][0]}, decoded at depth 3, has code length 33 "
                "(> Max_Code_Length)", luts=join_rows(rows))
    rows = luts_rows(ml.stored)
    rows[2][127] = 9
    group_fault("lut_depth_inconsistent", ml, "corrupt_data", "decode",
                "exponent 127 is decoded in the root row but its length is 9 (root symbols have "
                "1..8 bits)", luts=join_rows(rows))
    rows = luts_rows(ml.stored)
    rows[2][121] = 8
    group_fault("lut_depth_inconsistent_subtable", ml, "corrupt_data", "decode",
                "exponent 121 is decoded in the depth-1 subtable but its length is 8",
                luts=join_rows(rows))
    rows = luts_rows(valid["max_subtables"].shard.stored)
    rows.insert(1, bytearray(rows[1]))
    group_fault("lut_too_many_rows", valid["max_subtables"].shard, "bad_lut", "validate",
                "19 rows: more than 1 + Max_Subtables + 1 = 18", luts=join_rows(rows))
    group_fault("lut_one_row", tiny, "bad_lut", "validate",
                "luts has 1 row: no code-lengths row", luts=tiny.stored.luts[:256])

    # spec 3.6 / 3.8 P-rules
    g = b4097.stored
    group_fault("op_not_starting_at_zero", b4097, "bad_output_positions", "validate",
                "output_positions[0] = 1", output_positions=set_op(g, 0, 1))
    n = len(g.sign_mantissa)
    group_fault("op_decreasing", b4097, "bad_output_positions", "validate",
                "output_positions[1] > output_positions[2] = n",
                output_positions=set_op(g, 1, n + 1))
    group_fault("op_not_ending_at_n", b4097, "bad_output_positions", "validate",
                "output_positions[2] = n - 1", output_positions=set_op(g, 2, n - 1))
    gd = dense.stored
    group_fault("op_block_over_32768", dense, "bad_output_positions", "validate",
                "output_positions[1] = 32769: block 0 would hold more weights than its 32768 "
                "bits", output_positions=set_op(gd, 1, 32769))
    group_fault("op_empty_block_not_last", b4097, "bad_output_positions", "validate",
                "output_positions[1] = 0: block 0 (not the last) holds no code start",
                output_positions=set_op(g, 1, 0))

    # spec 3.2 / 3.8 V-rules (sizes)
    group_fault("gaps_wrong_size", tiny, "bad_group", "validate",
                "gaps has 319 bytes; one block needs ceil(5 * 512 / 8) = 320",
                gaps=tiny.stored.gaps[:-1])
    group_fault("op_wrong_size", tiny, "bad_group", "validate",
                "output_positions has 12 bytes; one block needs 8",
                output_positions=tiny.stored.output_positions + struct.pack("<I", 9))
    bomb_n = 8 * len(tiny.stored.encoded_exponent) + 1
    bomb_members = [Member("model.layers.0.mlp.down_proj.weight", [bomb_n],
                           np.zeros(bomb_n, dtype=np.uint16))]
    bomb = replace(with_stored(tiny, sign_mantissa=bytes(bomb_n),
                               output_positions=struct.pack("<2I", 0, bomb_n)),
                   members=bomb_members)
    out.append(Invalid("elements_exceed_8x_bytes", bomb.file_bytes(), "bad_group", "validate",
                       f"n_elements = {bomb_n} > 8 * n_bytes = {bomb_n - 1}: a weight needs at "
                       "least one bit (a decompression-bomb claim)"))
    empty = replace(with_stored(tiny, sign_mantissa=b"", encoded_exponent=b"",
                                output_positions=struct.pack("<I", 0), gaps=b""),
                    members=[Member("model.layers.0.mlp.down_proj.weight", [0],
                                    np.zeros(0, dtype=np.uint16))])
    out.append(Invalid("empty_group", empty.file_bytes(), "bad_group", "validate",
                       "a group with 0 weights (empty tensors are stored raw)"))
    splits = struct.unpack(f"<{len(mm.stored.split_positions) // 8}q", mm.stored.split_positions)
    bad = list(splits)
    bad[1] = bad[0]
    group_fault("split_positions_not_increasing", mm, "bad_group", "validate",
                "split_positions[1] == split_positions[0]",
                split_positions=struct.pack(f"<{len(bad)}q", *bad))
    # A wrong last split with the same count of members: the metadata still has 4 members.
    bad = list(splits)
    bad[-1] = len(mm.stored.sign_mantissa)
    group_fault("split_positions_out_of_range", mm, "bad_group", "validate",
                "the last split position equals n_elements",
                split_positions=struct.pack(f"<{len(bad)}q", *bad))

    # spec 4.5: decode-time faults
    group_fault("gap_not_at_code_boundary", b4097, "bad_gap", "decode",
                "gaps field 5 (inside block 0) is one bit off",
                gaps=set_gap(g, 5, (read_gap(g.gaps, 5) + 1) % 32))
    group_fault("gap_block_start", b4097, "bad_gap", "decode",
                "gaps field 512 (block 1's first window) is one bit off",
                gaps=set_gap(g, 512, (read_gap(g.gaps, 512) + 1) % 32))
    group_fault("gap_first_window", tiny, "bad_gap", "decode",
                "gaps field 0 = 3; the first code starts at bit 0", gaps=set_gap(tiny.stored, 0, 3))
    ops = struct.unpack("<3I", g.output_positions)
    group_fault("op_count_mismatch", b4097, "bad_output_positions", "decode",
                "output_positions[1] one more than the codes starting in block 0 (monotonic, "
                "so only decoding finds it)", output_positions=set_op(g, 1, ops[1] + 1))
    group_fault("truncated_stream", ml, "corrupt_data", "decode",
                "encoded_exponent lost its last byte: the last codes run past the end",
                encoded_exponent=ml.stored.encoded_exponent[:-1])
    group_fault("trailing_byte", ml, "corrupt_data", "decode",
                "encoded_exponent has one byte after the byte holding the last code's end",
                encoded_exponent=ml.stored.encoded_exponent + b"\x00")

    # spec 3.2 / 5.4: tensors and dtypes of the group
    def retyped(shard: Shard, suffix: str, dtype: str, shape_fn) -> bytes:
        tensors = []
        for name, dt, shape, data in shard.tensors():
            if name == f"{shard.group}.{suffix}":
                dt, shape = dtype, shape_fn(data)
            tensors.append((name, dt, shape, data))
        meta = {"format": "pt", "df11": json.dumps(shard.metadata(), separators=(",", ":"))}
        return safetensors_bytes(tensors, meta)

    out.append(Invalid("stored_luts_dtype_i8",
                       retyped(tiny, "luts", "I8", lambda d: [len(d) // 256, 256]), "bad_dtype",
                       "group", "P.luts stored as I8 instead of U8"))
    out.append(Invalid("stored_split_positions_dtype_u8",
                       retyped(mm, "split_positions", "U8", lambda d: [len(d)]), "bad_dtype",
                       "group", "P.split_positions stored as U8 instead of I64"))
    out.append(Invalid("stored_luts_shape_1d",
                       retyped(tiny, "luts", "U8", lambda d: [len(d)]), "bad_shape",
                       "group", "P.luts has shape [512] instead of [2, 256]"))

    def metadata_fault(name, shard, expected, stage, description, edit):
        meta = shard.metadata()
        edit(meta)
        data = shard.file_bytes(json.dumps(meta, separators=(",", ":")))
        out.append(Invalid(name, data, expected, stage, description))

    metadata_fault("member_dtype_f16", tiny, "bad_dtype", "metadata",
                   "the group's member has dtype \"F16\" in the df11 metadata",
                   lambda m: m["groups"][0]["members"][0].update(dtype="F16"))
    metadata_fault("metadata_missing_groups", tiny, "bad_metadata", "metadata",
                   "the df11 metadata has no \"groups\"", lambda m: m.pop("groups"))
    metadata_fault("metadata_bad_xxh3", tiny, "bad_metadata", "metadata",
                   "a member xxh3 is not 16 lowercase hex digits",
                   lambda m: m["groups"][0]["members"][0].update(xxh3="XYZ"))
    metadata_fault("metadata_member_elements_mismatch", tiny, "bad_shape", "metadata",
                   "a member's n_elements is not the product of its shape",
                   lambda m: m["groups"][0]["members"][0].update(n_elements=10))
    metadata_fault("metadata_group_elements_mismatch", tiny, "bad_metadata", "metadata",
                   "the group's n_elements is not the sum of its members'",
                   lambda m: m["groups"][0].update(n_elements=10))
    metadata_fault("metadata_unsupported_version", tiny, "unsupported", "metadata",
                   "spec_version \"2.0\": a later major version",
                   lambda m: m.update(spec_version="2.0"))
    metadata_fault("metadata_unsafe_file_name", tiny, "bad_metadata", "metadata",
                   "a source file name with a '/' (path traversal)",
                   lambda m: m["sources"][0].update(file="../evil.safetensors"))
    mm3 = with_stored(mm, split_positions=mm.stored.split_positions[:16])
    out.append(Invalid("metadata_members_vs_splits", mm3.file_bytes(), "bad_group", "metadata",
                       "4 members in the df11 metadata but split_positions has 2 entries"))
    metadata_fault("metadata_stored_checksum_mismatch", tiny, "corrupt_data", "checksum",
                   "the stored xxh3 of P.gaps does not match its bytes",
                   lambda m: m["groups"][0]["stored"].update(gaps="0123456789abcdef"))
    metadata_fault("metadata_unknown_member_field", tiny, "bad_metadata", "metadata",
                   "a member has the unknown field 'bias' (S1)",
                   lambda m: m["groups"][0]["members"][0].update(bias=0))
    metadata_fault("metadata_side_file_size_mismatch", tiny, "bad_metadata", "metadata",
                   "a side file's size is not its content's length (R2)",
                   lambda m: m["side_files"].append({"file": "config.json", "size": 3,
                                                     "sha256": "0" * 64, "content": "{}"}))
    metadata_fault("metadata_duplicate_file", tiny, "duplicate_name", "metadata",
                   "a side file has the name of a source (F2)",
                   lambda m: m["side_files"].append({"file": m["sources"][0]["file"], "size": 2,
                                                     "sha256": "0" * 64, "content": "{}"}))
    metadata_fault("metadata_bad_source_sha256", tiny, "bad_metadata", "metadata",
                   "a source's sha256 is present but 63 hex digits (S2; 1.2 makes it optional, "
                   "not unchecked)",
                   lambda m: m["sources"][0].update(sha256="0" * 63))
    metadata_fault("metadata_source_header_not_object", tiny, "bad_metadata", "metadata",
                   "a source's header does not start with '{' (R1)",
                   lambda m: m["sources"][0].update(header="[]"))
    metadata_fault("metadata_duplicate_member_name", mm, "duplicate_name", "metadata",
                   "two members have the same name (G2)",
                   lambda m: m["groups"][0]["members"][1].update(
                       name=m["groups"][0]["members"][0]["name"]))
    dup_key = json.dumps(tiny.metadata(), separators=(",", ":"))
    dup_key = dup_key[:-1] + ",\"encoder\":\"twice\"}"
    out.append(Invalid("metadata_duplicate_key", tiny.file_bytes(dup_key), "duplicate_name",
                       "metadata", "the df11 document has the key 'encoder' twice"))
    out.append(Invalid("metadata_not_json", tiny.file_bytes("{\"spec_version\": \"1.0\","),
                       "bad_json", "metadata", "the \"df11\" value is not JSON"))

    missing = safetensors_bytes(
        [t for t in tiny.tensors() if not t[0].endswith(".gaps")],
        {"format": "pt", "df11": json.dumps(tiny.metadata(), separators=(",", ":"))})
    out.append(Invalid("missing_group_tensor", missing, "bad_group", "group",
                       "the metadata's group has no P.gaps tensor in the file"))
    extra = safetensors_bytes(
        tiny.tensors() + [("stray.weight", "BF16", [1], b"\x80\x3f")],
        {"format": "pt", "df11": json.dumps(tiny.metadata(), separators=(",", ":"))})
    out.append(Invalid("metadata_unlisted_tensor", extra, "bad_metadata", "metadata",
                       "a tensor in the file is neither a group's nor listed as raw"))

    # spec 6.3: the container
    base = tiny.file_bytes()
    n_header = struct.unpack("<Q", base[:8])[0]
    text = base[8:8 + n_header].decode()
    body = base[8 + n_header:]

    def with_header(obj_text: str, data: bytes = body) -> bytes:
        t = obj_text.encode()
        t += b" " * (-len(t) % 8)
        return struct.pack("<Q", len(t)) + t + data

    header = json.loads(text)
    out.append(Invalid("container_header_too_large",
                       struct.pack("<Q", MAX_HEADER_BYTES + 1) + base[8:], "header_too_large",
                       "parse", "header length 100,000,001 > Max_Header_Bytes"))
    out.append(Invalid("container_header_beyond_file",
                       struct.pack("<Q", len(base)) + base[8:], "header_too_large", "parse",
                       "header length larger than the rest of the file"))
    out.append(Invalid("container_truncated_length", base[:5], "truncated", "parse",
                       "5 bytes: the 8-byte header length is cut"))
    out.append(Invalid("container_truncated_data", base[:-1], "bad_offsets", "parse",
                       "the file lost its last byte: the last tensor runs past the data"))
    out.append(Invalid("container_header_not_json", with_header("{\"a\": [1, 2"), "bad_json",
                       "parse", "the header is not JSON"))

    def edited(fn) -> bytes:
        h = json.loads(text)
        fn(h)
        return with_header(json.dumps(h, separators=(",", ":")))

    names = [k for k in header if k != "__metadata__"]
    first, second = names[0], names[1]
    out.append(Invalid("container_overlapping_offsets",
                       edited(lambda h: h[second].update(
                           data_offsets=[o - 1 for o in h[second]["data_offsets"]])),
                       "bad_offsets", "parse",
                       f"tensor '{second}' starts one byte before '{first}' ends"))

    def hole(h):
        # Move the first tensor one byte later and grow the data: byte 0 belongs to nobody.
        for k in names:
            h[k]["data_offsets"] = [o + 1 for o in h[k]["data_offsets"]]
    h_hole = json.loads(text)
    hole(h_hole)
    out.append(Invalid("container_hole",
                       with_header(json.dumps(h_hole, separators=(",", ":")), b"\x00" + body),
                       "bad_offsets", "parse", "data byte 0 belongs to no tensor"))
    out.append(Invalid("container_trailing_data", base + b"\x00", "bad_offsets", "parse",
                       "one data byte after the last tensor belongs to no tensor"))
    last = names[-1]

    def oob(h):
        h[last]["shape"] = [h[last]["shape"][0] + 1]
        h[last]["data_offsets"][1] += 8
    out.append(Invalid("container_offsets_past_end", edited(oob), "bad_offsets", "parse",
                       "the last tensor's data_offsets end past the end of the file"))
    dup = text.rstrip()
    key = f"\"{first}\":"
    entry_start = dup.index(key)
    entry_end = dup.index("}", entry_start) + 1
    dup = dup[:-1] + "," + dup[entry_start:entry_end] + "}"
    out.append(Invalid("container_duplicate_name", with_header(dup), "duplicate_name", "parse",
                       f"tensor '{first}' appears twice in the header"))
    out.append(Invalid("container_shape_overflow",
                       edited(lambda h: h[first].update(shape=[2**32, 2**32, 2])), "overflow",
                       "parse", "shape [2^32, 2^32, 2]: the element count overflows 64 bits"))
    out.append(Invalid("container_unknown_dtype",
                       edited(lambda h: h[first].update(dtype="U7")), "bad_dtype", "parse",
                       "dtype \"U7\" is not a safetensors dtype"))
    out.append(Invalid("container_shape_mismatch",
                       edited(lambda h: h[first].update(shape=[3, 256])), "bad_shape", "parse",
                       "P.luts shape [3, 256] needs 768 bytes but its offsets hold 512"))
    out.append(Invalid("container_metadata_not_string",
                       edited(lambda h: h["__metadata__"].update(format=1)), "bad_json", "parse",
                       "a __metadata__ value is a number, not a string"))
    out.append(Invalid("container_leading_whitespace", with_header(" " + text.rstrip()),
                       "bad_json", "parse", "the header starts with a space, not '{' (H4)"))
    entry = json.dumps(header[first], separators=(",", ":"))
    out.append(Invalid("container_entry_duplicate_key",
                       with_header(text.rstrip().replace(entry, entry[:-1] + ",\"dtype\":\"U8\"}")),
                       "bad_json", "parse", "a tensor entry has the key 'dtype' twice (D2)"))
    out.append(Invalid("container_too_deep",
                       edited(lambda h: h[first].update(shape=[[[2]], 256])), "bad_json", "parse",
                       "a shape nests arrays 5 containers deep (> Max_Header_Json_Depth)"))
    out.append(Invalid("container_float_shape",
                       edited(lambda h: h[first].update(shape=[2.0, 256])), "bad_shape", "parse",
                       "a shape holds the float 2.0 (T3)"))
    out.append(Invalid("container_negative_offset",
                       edited(lambda h: h[first].update(data_offsets=[-1, 511])), "bad_offsets",
                       "parse", "data_offsets [-1, 511] (T4)"))
    return out


# ---- checks and output ---------------------------------------------------------------------------
def check_valid(v: Valid) -> np.ndarray:
    g = v.shard.stored
    expected = np.concatenate([m.data for m in v.shard.members]).astype(np.uint16)
    ref = decode_reference(g)
    assert np.array_equal(ref, expected), f"{v.name}: reference decode differs"
    if len(expected) <= 70000:
        win = decode_per_window(g)
        assert np.array_equal(win, expected), f"{v.name}: per-window decode differs"
    if v.canonical:
        again = encode_group([m.data for m in v.shard.members])
        assert again == g, f"{v.name}: marked canonical but not the canonical encoding"
    return expected


def check_invalid(inv: Invalid) -> None:
    """Runs the Python decoder chain on the invalid vector's group where that is the stage."""
    if inv.stage not in ("validate", "decode"):
        return
    n_header = struct.unpack("<Q", inv.data[:8])[0]
    header = json.loads(inv.data[8:8 + n_header])
    data = inv.data[8 + n_header:]
    meta = json.loads(header["__metadata__"]["df11"])
    p = meta["groups"][0]["name"]
    bufs = {}
    for s in SUFFIXES:
        a, b = header[f"{p}.{s}"]["data_offsets"]
        bufs[s] = data[a:b]
    g = Group(**bufs)
    try:
        validate(g)
        if inv.stage == "validate":
            raise AssertionError(f"{inv.name}: validation passed")
        decode_reference(g)
        raise AssertionError(f"{inv.name}: decoding passed")
    except SpecError as e:
        assert e.code == inv.expected_error, f"{inv.name}: got {e}, want {inv.expected_error}"
        if inv.stage == "decode":
            validate(g)  # the fault is found by decoding, not by validation


def render() -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    valid = valid_vectors()
    for v in valid:
        expected = check_valid(v)
        raw = expected.astype("<u2").tobytes()
        files[f"valid/{v.name}.safetensors"] = v.shard.file_bytes()
        files[f"valid/{v.name}.expected.bin"] = raw
        files[f"valid/{v.name}.json"] = (json.dumps({
            "group": v.shard.group, "n_elements": len(expected),
            "sha256_of_expected": sha256_hex(raw), "description": v.description,
            "canonical": v.canonical}, indent=2, sort_keys=True) + "\n").encode()
    for inv in invalid_vectors({v.name: v for v in valid}):
        check_invalid(inv)
        files[f"invalid/{inv.name}.safetensors"] = inv.data
        files[f"invalid/{inv.name}.json"] = (json.dumps({
            "expected_error": inv.expected_error, "stage": inv.stage,
            "description": inv.description}, indent=2, sort_keys=True) + "\n").encode()
    return files


def print_examples() -> None:
    for shard in (worked_tiny(), worked_multilevel()):
        w = np.concatenate([m.data for m in shard.members])
        exps, sm = split_bf16(w)
        hist = histogram(exps)
        lengths = optimal_lengths(hist)
        codes = canonical_codes(lengths)
        g = shard.stored
        print(f"== {shard.file}: n = {len(w)}")
        print("weights:", " ".join(f"{x:04X}" for x in w[:24].tolist()))
        print("exponents:", " ".join(str(e) for e in exps[:24].tolist()))
        print("sign_mantissa:", g.sign_mantissa[:24].hex(" ").upper())
        for s in range(256):
            if hist[s]:
                print(f"  exp {s}: count {hist[s]} length {lengths[s]} "
                      f"code {format(codes[s], f'0{lengths[s]}b')}")
        print("encoded_exponent:", g.encoded_exponent.hex(" ").upper())
        rows = luts_rows(g)
        for i, r in enumerate(rows):
            runs = []
            start = 0
            for j in range(1, 257):
                if j == 256 or r[j] != r[start]:
                    runs.append(f"{start}..{j - 1}={r[start]}" if j - 1 > start
                                else f"{start}={r[start]}")
                    start = j
            print(f"  row {i}:", ", ".join(runs))
        print("output_positions:", g.output_positions.hex(" ").upper())
        print("gaps[0..8]:", g.gaps[:8].hex(" ").upper(), "n gap bytes", len(g.gaps))
        print("n_bytes", len(g.encoded_exponent), "file bytes", len(shard.file_bytes()))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with spec/vectors/, write nothing")
    ap.add_argument("--print-examples", action="store_true")
    ap.add_argument("--out", type=Path, default=VECTORS)
    args = ap.parse_args()
    if args.print_examples:
        print_examples()
        return 0
    files = render()
    existing = {str(p.relative_to(args.out)): p for sub in ("valid", "invalid")
                for p in (args.out / sub).glob("*") if p.is_file()} if args.out.exists() else {}
    if args.check:
        bad = sorted(set(existing) ^ set(files)) + sorted(
            k for k in files if k in existing and existing[k].read_bytes() != files[k])
        for k in bad:
            print(f"differs: {k}")
        print(f"{len(files)} files, {len(bad)} differ")
        return 1 if bad else 0
    for k, data in files.items():
        path = args.out / k
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_bytes() != data:
            path.write_bytes(data)
    for k in set(existing) - set(files):
        existing[k].unlink()
    total = sum(len(d) for d in files.values())
    print(f"wrote {len(files)} files, {total} bytes, under {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
