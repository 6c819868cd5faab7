#!/usr/bin/env python3
"""How many table lookups a warp of the compact GEMM spends on one step's exponents, under the
lookup that decodes two codewords (the kernels') and under lookups that would decode three, four
or as many as fit: the bound on the "fewer lookups per exponent" lever of the compact layout
(decoder/cuda/EXEC_KERNEL.md, "Fewer lookups per exponent: the bound"). CPU only.

    python3 bench/compact_lookup_counts.py [--weights N] [--steps N] [--safetensors FILE] [--json]

The exponents are those of N(0, 0.02^2) weights rounded to BF16 (the compact benchmarks'
weights), or of every BF16 tensor of --safetensors. Their code is the one df11's encoder chooses
(libdf11-tools, `df11_tools_compact_lengths`: package-merge, at most 12 bits). A step gives each
of a warp's 32 lanes 16 codewords, drawn from the exponents at random.

A lookup reads 12 bits at the lane's position and returns the codewords that lie whole in them,
up to the scheme's count; where fewer fit, the lane takes further lookups (a branch that the
warp takes when any lane needs it). Per scheme, the warp's lookups per step:
- pairs (the kernels' table, 32-bit entries): 8 lookups, plus a second at each of the 8 where
  some lane's two codewords exceed 12 bits;
- triples (3 exponent bytes, 4 bits of length, 2 of count and a flag: still 32-bit entries):
  5 lookups of 3 and one of 1 per step, plus the completions;
- quads (64-bit entries, a table of 32 KiB): 4 lookups, plus the completions;
- greedy (as many as fit, up to 3 with 32-bit entries or 4 with 64-bit ones): each lane's
  lookups vary, the warp runs the most any lane needs;
- carried: greedy, a lane's extra exponents kept for the tile's next step (16 + cap - 1 of
  them held at most), so that a step's lookups vary less from lane to lane.
"""
import argparse
import ctypes
import json
import sys

import numpy as np

SYMBOLS = 256
MAX_BITS = 12
LANES = 32
SLOTS = 16


def bf16_exponents_gaussian(n: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).normal(0.0, 0.02, n).astype(np.float32)
    b = x.view(np.uint32)
    b = (b + 0x7FFF + ((b >> 16) & 1)) >> 16  # round to nearest even (no NaN here)
    return ((b >> 7) & 0xFF).astype(np.uint8)


def bf16_exponents_file(path: str) -> np.ndarray:
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        meta = json.loads(f.read(n))
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    out = []
    for name, info in meta.items():
        if name != "__metadata__" and info["dtype"] == "BF16":
            start, end = info["data_offsets"]
            w = raw[8 + n + start:8 + n + end].view(np.uint16)
            out.append(((w >> 7) & 0xFF).astype(np.uint8))
    if not out:
        raise SystemExit(f"{path}: no BF16 tensor")
    return np.concatenate(out)


def code_lengths(counts: np.ndarray) -> np.ndarray:
    from df11 import _tools
    if not _tools.available():
        raise SystemExit("df11's libdf11-tools is not installed (pip install df11)")
    T = _tools.lib()
    c = (ctypes.c_uint64 * SYMBOLS)(*[int(v) for v in counts])
    out = (ctypes.c_uint8 * SYMBOLS)()
    rc = T.df11_tools_compact_lengths(c, out)
    if rc != 0:
        raise SystemExit(f"no code for these exponents (status {rc})")
    return np.frombuffer(bytes(out), dtype=np.uint8).astype(np.int64)


def lookups_fixed(L: np.ndarray, sizes) -> np.ndarray:
    """Warp lookups per step for fixed groups: `sizes` lists the codewords each of the step's
    main lookups is to return (e.g. [2] * 8); where a lane's group does not fit 12 bits, the
    lane takes another lookup for what is left, and so on. L: (warps, lanes, 16) lengths."""
    warps = L.shape[0]
    total = np.zeros(warps, dtype=np.int64)
    at = 0
    for size in sizes:
        g = L[:, :, at:at + size]
        at += size
        # per lane, the lookups this group takes: greedy, each as many as fit up to what is left
        need = np.ones(g.shape[:2], dtype=np.int64)
        used = np.zeros(g.shape[:2], dtype=np.int64)
        for j in range(size):
            lj = g[:, :, j]
            over = used + lj > MAX_BITS
            need += over
            used = np.where(over, lj, used + lj)
        total += need.max(axis=1)  # the warp runs as many rounds as its neediest lane
    assert at == L.shape[2]
    return total


def lookups_greedy(L: np.ndarray, cap: int) -> np.ndarray:
    """Each lane's lookups for its 16 codewords, each taking as many as fit, up to cap; the
    warp's count is its neediest lane's."""
    need = np.zeros(L.shape[:2], dtype=np.int64)
    used = np.full(L.shape[:2], MAX_BITS + 1, dtype=np.int64)  # forces a first lookup
    count = np.zeros(L.shape[:2], dtype=np.int64)
    for j in range(L.shape[2]):
        lj = L[:, :, j]
        new = (used + lj > MAX_BITS) | (count == cap)
        need += new
        used = np.where(new, lj, used + lj)
        count = np.where(new, 1, count + 1)
    return need.max(axis=1)


def lookups_greedy_carried(L: np.ndarray, cap: int, steps: int = 8) -> np.ndarray:
    """As lookups_greedy, but a lane's lookups run on through a tile's `steps` steps: at each
    step it looks up until it holds that step's 16 exponents, keeping any extra for the next
    (at most cap - 1). L: (tiles, lanes, 16 * steps). The warp's count per step is its neediest
    lane's; returns them per tile and step, flattened."""
    tiles, lanes, n = L.shape
    assert n == SLOTS * steps
    used = np.full((tiles, lanes), MAX_BITS + 1, dtype=np.int64)
    count = np.zeros((tiles, lanes), dtype=np.int64)
    started = np.zeros((tiles, lanes), dtype=np.int64)
    done_by = np.zeros((tiles, lanes, steps), dtype=np.int64)
    for j in range(n):
        lj = L[:, :, j]
        new = (used + lj > MAX_BITS) | (count == cap)
        started += new
        used = np.where(new, lj, used + lj)
        count = np.where(new, 1, count + 1)
        if j % SLOTS == SLOTS - 1:
            done_by[:, :, j // SLOTS] = started  # the lookup holding the step's last codeword
    per_step = np.diff(done_by, axis=2, prepend=0)
    return per_step.max(axis=1).reshape(-1)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--weights", type=int, default=1 << 24, help="Gaussian weights for the code")
    p.add_argument("--steps", type=int, default=20000, help="warp steps drawn (a multiple of 8)")
    p.add_argument("--safetensors", help="exponents of this file's BF16 tensors instead")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    if a.steps % 8:
        p.error("--steps: a multiple of 8 (tiles of 8 steps)")
    e = bf16_exponents_file(a.safetensors) if a.safetensors else \
        bf16_exponents_gaussian(a.weights, a.seed)
    counts = np.bincount(e, minlength=SYMBOLS)
    lengths = code_lengths(counts)
    prob = counts / counts.sum()
    mean_bits = float((prob * lengths).sum())
    rng = np.random.default_rng(a.seed + 1)
    L = lengths[rng.choice(SYMBOLS, size=(a.steps, LANES, SLOTS), p=prob)]
    # the same draws as tiles of 8 steps, each lane's 128 codewords in a row
    tiles = L.reshape(-1, 8, LANES, SLOTS).transpose(0, 2, 1, 3).reshape(-1, LANES, 8 * SLOTS)
    schemes = {
        "pairs (now)": lookups_fixed(L, [2] * 8),
        "triples": lookups_fixed(L, [3] * 5 + [1]),
        "quads": lookups_fixed(L, [4] * 4),
        "greedy, up to 3": lookups_greedy(L, 3),
        "greedy, up to 4": lookups_greedy(L, 4),
        "carried, up to 3": lookups_greedy_carried(tiles, 3),
        "carried, up to 4": lookups_greedy_carried(tiles, 4),
    }
    base = float(schemes["pairs (now)"].mean())
    rows = []
    for name, v in schemes.items():
        rows.append({"scheme": name, "warp_lookups_per_step": float(v.mean()),
                     "max": int(v.max()), "vs_pairs": float(v.mean()) / base})
    pair_over = float(((L[:, :, 0::2] + L[:, :, 1::2]) > MAX_BITS).mean())
    result = {"source": a.safetensors or f"N(0, 0.02^2), {a.weights} weights",
              "mean_code_bits": mean_bits, "max_code_bits": int(lengths[counts > 0].max()),
              "pairs_over_12_bits_per_lane": pair_over, "warp_steps": a.steps, "rows": rows}
    if a.json:
        json.dump(result, sys.stdout, indent=1)
        print()
        return 0
    print(f"{result['source']}: mean codeword {mean_bits:.3f} bits, longest "
          f"{result['max_code_bits']}; a lane's pair over 12 bits: {100 * pair_over:.2f}%")
    print(f"{'scheme':<18} {'warp lookups / step':>20} {'max':>5} {'vs pairs':>9}")
    for r in rows:
        print(f"{r['scheme']:<18} {r['warp_lookups_per_step']:>20.3f} {r['max']:>5} "
              f"{r['vs_pairs']:>9.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
