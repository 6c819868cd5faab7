"""bench/compact_lookup_counts.py: the warp's lookups per step under each lookup scheme, on
codeword lengths whose counts can be worked out by hand, and the code it takes from df11's
encoder."""
import importlib.util
import os

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def load_script():
    path = os.path.join(HERE, "..", "..", "bench", "compact_lookup_counts.py")
    spec = importlib.util.spec_from_file_location("compact_lookup_counts", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


m = load_script()


def lengths(*rows):
    """One warp step per row list: lane 0's 16 lengths given, the other lanes all 1 bit."""
    L = np.ones((len(rows), m.LANES, m.SLOTS), dtype=np.int64)
    for i, row in enumerate(rows):
        L[i, 0] = row
    return L


def test_short_codewords_take_the_schemes_fixed_counts():
    L = np.full((3, m.LANES, m.SLOTS), 2, dtype=np.int64)
    assert list(m.lookups_fixed(L, [2] * 8)) == [8, 8, 8]
    assert list(m.lookups_fixed(L, [3] * 5 + [1])) == [6, 6, 6]
    assert list(m.lookups_fixed(L, [4] * 4)) == [4, 4, 4]
    assert list(m.lookups_greedy(L, 4)) == [4, 4, 4]
    assert list(m.lookups_greedy(L, 3)) == [6, 6, 6]  # 5 lookups of 3 and one of 1


def test_one_lanes_long_pair_costs_the_warp_a_second_lookup():
    row = [1] * 16
    row[4], row[5] = 7, 6  # the third pair: 13 bits
    L = lengths(row, [1] * 16)
    assert list(m.lookups_fixed(L, [2] * 8)) == [9, 8]
    # greedy up to 4: 1,1,1,1 | 7 | 6,1,1,1 | 1,1,1,1 | 1,1,1 -> 5 lookups
    assert list(m.lookups_greedy(L, 4)) == [5, 4]


def test_every_codeword_of_7_bits_takes_a_lookup_of_its_own():
    L = np.full((1, m.LANES, m.SLOTS), 7, dtype=np.int64)
    for sizes in ([2] * 8, [3] * 5 + [1], [4] * 4):
        assert list(m.lookups_fixed(L, sizes)) == [16]
    assert list(m.lookups_greedy(L, 4)) == [16]


def test_carried_lookups_keep_the_extra_exponents_for_the_next_step():
    # 2-bit codewords, up to 3 a lookup: 48 codewords (3 steps) in 16 lookups, steps of 6, 5, 5
    L = np.full((1, m.LANES, 8 * m.SLOTS), 2, dtype=np.int64)
    per_step = m.lookups_greedy_carried(L, 3)
    assert list(per_step[:3]) == [6, 5, 5]
    assert per_step.sum() == (8 * m.SLOTS + 2) // 3


def test_gaussian_exponents_and_their_code():
    e = m.bf16_exponents_gaussian(1 << 16, seed=3)
    assert e.min() > 0 and e.max() < 0x7F  # N(0, 0.02^2): below 1, above the subnormals
    counts = np.bincount(e, minlength=m.SYMBOLS)
    pytest.importorskip("df11")
    from df11 import _tools
    if not _tools.available():
        pytest.skip("libdf11-tools not installed")
    code = m.code_lengths(counts)
    used = code[counts > 0]
    assert used.max() <= m.MAX_BITS and used.min() >= 1
    assert abs((2.0 ** -used.astype(float)).sum() - 1.0) < 1e-9  # a complete prefix code
