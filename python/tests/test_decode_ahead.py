"""decode_ahead's bookkeeping, on the host (no GPU needed): the successor order it learns, which
slot a call may take its weight from, and the edges found to leave a CUDA graph capture. The
launches themselves run in the GPU tests (gpu/test_exec_weight.py)."""
import weakref

import pytest
import torch

from df11 import _capi, decode_ahead


class Matrix:
    def __init__(self, name):
        self.name = name
        self.shape = (2, 3)

    def __repr__(self):
        return self.name


def ahead_of(names):
    return decode_ahead.DecodeAhead(torch.device("cpu")), [Matrix(n) for n in names]


def slot(ahead, stream, owner, producer, capture):
    ahead._slots[stream] = decode_ahead._Ahead(weakref.ref(owner), weakref.ref(producer),
                                               torch.zeros(2, 3), capture)


def test_learns_the_first_pass_order_without_wrapping():
    ahead, (q, o, up, down) = ahead_of(["q", "o", "up", "down"])
    for _ in range(3):  # three passes: the order is that of the first, never down -> q
        got = [ahead._learn(m, 7) for m in (q, o, up, down)]
    assert got == [o, up, down, None]
    assert [ahead.successor(m) for m in (q, o, up, down)] == [o, up, down, None]


def test_streams_learn_apart_and_a_repeated_matrix_teaches_nothing():
    ahead, (a, b, c) = ahead_of("abc")
    ahead._learn(a, 1)
    ahead._learn(b, 2)  # another stream: a's successor is not b
    assert ahead.successor(a) is None
    ahead._learn(a, 2)  # seen before: no edge b -> a
    assert ahead.successor(b) is None
    ahead._learn(c, 2)  # first seen, after a on stream 2
    assert ahead.successor(a) is c


def test_a_slot_serves_its_matrix_in_the_capture_that_filled_it():
    ahead, (a, b, c) = ahead_of("abc")
    slot(ahead, 5, b, a, 0)
    assert ahead._take(c, 5, 0) is None  # another matrix: dropped
    assert 5 not in ahead._slots
    slot(ahead, 5, b, a, 0)
    assert ahead._take(b, 6, 0) is None  # another stream's slot is not this one's
    assert ahead._take(b, 5, 0) is not None
    slot(ahead, 5, b, a, 0)
    assert ahead._take(b, 5, 9) is None  # filled outside a capture, met inside one
    assert a not in ahead._crossing
    slot(ahead, 5, b, a, 9)
    assert ahead._take(b, 5, 9) is not None  # the same capture
    assert a not in ahead._crossing


def test_an_edge_that_leaves_its_capture_is_marked():
    ahead, (a, b) = ahead_of("ab")
    slot(ahead, 5, b, a, 9)
    assert ahead._take(b, 5, 10) is None  # the next capture
    assert a in ahead._crossing
    ahead, (a, b) = ahead_of("ab")
    slot(ahead, 5, b, a, 9)
    assert ahead._take(b, 5, 0) is None  # after the capture ended
    assert a in ahead._crossing


def test_the_capture_query_without_a_gpu_raises():
    """A build without CUDA says so; a CUDA build on a machine without a GPU reports the
    runtime's error: an exception either way, never a crash or a made-up answer."""
    if torch.cuda.is_available():
        pytest.skip("a GPU answers (the GPU tests capture through it)")
    with pytest.raises(_capi.Df11Error, match="capture state"):
        decode_ahead.capture_id(0)
