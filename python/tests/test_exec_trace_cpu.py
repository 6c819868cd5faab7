"""How modes "exec" and "compact" are traced (exec_mode.ExecLinear._traced), on the CPU: siblings
on one input (q/k/v, gate/up) become one torch.ops.df11.exec_site in the graph, a sibling called
on another input (as cross-attention calls k/v) its own torch.ops.df11.exec_linear, and a Linear
alone its exec_linear; each caller gets its own output. The launches themselves need a GPU
(python/tests/gpu/test_gpu.py); here the Linears' run / run_site compute with torch on the CPU,
so what is tested is the pairing made at trace time, the ops' fakes and the state left after."""
import pytest
import torch

from df11 import exec_mode


def linears(monkeypatch, shapes, seed=0):
    """ExecLinear objects with CPU weights (rows x cols each), registered as the traced ops
    find them, their run / run_site replaced by torch's matmul and recorded in `calls`."""
    calls = []
    monkeypatch.setattr(exec_mode.ExecLinear, "run", lambda self, x, siblings: (
        calls.append(("exec_linear", self.name)) or x @ self.w.t()))
    monkeypatch.setattr(exec_mode.ExecLinear, "run_site", lambda self, x: (
        calls.append(("exec_site", self.name)) or [x @ m.w.t() for m in self.site.linears]))
    g = torch.Generator().manual_seed(seed)
    out = {}
    for name, (rows, cols) in shapes.items():
        lin = object.__new__(exec_mode.ExecLinear)
        lin.name, lin.rows, lin.cols = name, rows, cols
        lin.w = torch.randn(rows, cols, generator=g)
        lin.key = next(exec_mode._KEYS)
        exec_mode._LINEARS[lin.key] = lin
        out[name] = lin
    return out, calls


def site(*lins):
    s = exec_mode.CallSite(list(lins))
    for i, lin in enumerate(lins):
        lin.site, lin.index = s, i
    return s


def test_siblings_on_one_input_are_one_op(monkeypatch):
    lins, calls = linears(monkeypatch, {"q": (8, 16), "k": (4, 16), "v": (4, 16),
                                        "gate": (24, 16), "up": (24, 16), "o": (16, 8)})
    sites = [site(lins["q"], lins["k"], lins["v"]), site(lins["gate"], lins["up"]),
             site(lins["o"])]

    def f(h, enc):
        q, k, v = lins["q"].forward(h), lins["k"].forward(enc), lins["v"].forward(h)
        return q, k, v, lins["gate"].forward(h), lins["up"].forward(h), lins["o"].forward(q)

    h, enc = torch.randn(2, 3, 16), torch.randn(2, 3, 16)
    want = (h @ lins["q"].w.t(), enc @ lins["k"].w.t(), h @ lins["v"].w.t(),
            h @ lins["gate"].w.t(), h @ lins["up"].w.t())
    want += (want[0] @ lins["o"].w.t(),)
    torch._dynamo.reset()
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    for _ in range(2):  # traced, then the cached graph
        calls.clear()
        got = compiled(h, enc)
        assert len(got) == len(want)
        assert all(torch.equal(a, b) for a, b in zip(got, want))
        # q/k/v: one op for q and v on h, k on enc its own; gate/up one op; o alone.
        assert calls == [("exec_site", "q"), ("exec_linear", "k"), ("exec_site", "gate"),
                         ("exec_linear", "o")]
    assert all(s.traced is None for s in sites)  # nothing held after the trace


def test_a_sibling_called_twice_starts_a_new_op(monkeypatch):
    """q, k, then q again on one input (no v): the second q cannot take the first op's output
    (it was taken), so it is a new op; k's and v's pending outputs of that one are dropped
    with the trace."""
    lins, calls = linears(monkeypatch, {"q": (8, 16), "k": (4, 16), "v": (4, 16)}, seed=1)
    s = site(lins["q"], lins["k"], lins["v"])

    def f(h):
        return lins["q"].forward(h), lins["k"].forward(h), lins["q"].forward(h * 2)

    h = torch.randn(5, 16)
    torch._dynamo.reset()
    got = torch.compile(f, fullgraph=True, backend="aot_eager")(h)
    want = (h @ lins["q"].w.t(), h @ lins["k"].w.t(), (h * 2) @ lins["q"].w.t())
    assert all(torch.equal(a, b) for a, b in zip(got, want))
    assert calls == [("exec_site", "q"), ("exec_site", "q")]
    # The second op's k and v outputs were never taken: the trace left them pending, and the
    # next trace starts from them only for a sibling still pending on the same input.
    assert s.traced is not None and s.traced[1] == (1, 2)


@pytest.mark.parametrize("tokens", [1, 7])
def test_fakes_give_the_outputs_shapes(monkeypatch, tokens):
    lins, _ = linears(monkeypatch, {"gate": (24, 16), "up": (12, 16)}, seed=2)
    site(lins["gate"], lins["up"])
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode() as mode:
        x = mode.from_tensor(torch.randn(tokens, 16))
        outs = torch.ops.df11.exec_site(x, lins["gate"].key)
        one = torch.ops.df11.exec_linear(x, lins["up"].key)
    assert [tuple(o.shape) for o in outs] == [(tokens, 24), (tokens, 12)]
    assert tuple(one.shape) == (tokens, 12)
