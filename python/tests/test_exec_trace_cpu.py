"""How modes "exec" and "compact" are compiled, on the CPU: each Linear is traced as
torch.ops.df11.exec_linear on its key (modules.ExecLinearModule), and Inductor's graph pass
(exec_mode.SiblingPass) makes the siblings a model calls on one input (q/k/v, gate/up) one
torch.ops.df11.exec_site; a sibling called on another input (as cross-attention calls k/v), or
twice, leaves its site's Linears each their own op. The launches themselves need a GPU
(python/tests/gpu/test_gpu.py); here the Linears' run / run_site compute with torch on the CPU,
so what is tested is the graph the pass makes, the ops' fakes, the pass's place among
Inductor's passes, what dynamo guards, and which eager sibling calls are served without a
launch."""
import pytest
import torch

from df11 import exec_mode
from df11.modules import ExecLinearModule


def linears(monkeypatch, shapes, seed=0):
    """ExecLinearModules over ExecLinear objects with CPU weights (rows x cols each),
    registered as the traced ops find them, their run / run_site replaced by torch's matmul
    and recorded in `calls`."""
    calls = []
    monkeypatch.setattr(exec_mode.ExecLinear, "run", lambda self, x, siblings: (
        calls.append(("exec_linear", self.name)) or x @ self.w.t()))
    monkeypatch.setattr(exec_mode.ExecLinear, "run_site", lambda self, x: (
        calls.append(("exec_site", self.name)) or [x @ m.w.t() for m in self.site.linears]))
    monkeypatch.setattr(exec_mode, "current_device", lambda: 0)
    exec_mode.install_pass()
    g = torch.Generator().manual_seed(seed)
    out = {}
    for name, (rows, cols) in shapes.items():
        lin = object.__new__(exec_mode.ExecLinear)
        lin.name, lin.rows, lin.cols, lin.device_index = name, rows, cols, 0
        lin.w = torch.randn(rows, cols, generator=g)
        lin.key = next(exec_mode._KEYS)
        lin.site, lin.index = None, 0
        exec_mode._LINEARS[lin.key] = lin
        out[name] = ExecLinearModule(torch.nn.Linear(cols, rows, bias=False, device="meta"),
                                     name, torch.device("cpu"), lin)
    return out, calls


def site(*modules):
    s = exec_mode.CallSite([m._df11_exec for m in modules])
    for i, lin in enumerate(s.linears):
        lin.site, lin.index = s, i
    return s


def compiled(f, *args):
    torch._dynamo.reset()
    with torch.no_grad():
        return torch.compile(f, fullgraph=True)(*args)


def test_siblings_on_one_input_are_one_op(monkeypatch):
    m, calls = linears(monkeypatch, {"q": (8, 16), "k": (4, 16), "v": (4, 16),
                                     "gate": (24, 16), "up": (24, 16), "o": (16, 8)})
    site(m["q"], m["k"], m["v"]), site(m["gate"], m["up"]), site(m["o"])

    def f(h):
        q, k, v = m["q"](h), m["k"](h), m["v"](h)
        return q, k, v, m["gate"](h), m["up"](h), m["o"](q)

    h = torch.randn(2, 3, 16)
    want = f(h)
    calls.clear()
    got = compiled(f, h)
    assert len(got) == len(want)
    assert all(torch.equal(a, b) for a, b in zip(got, want))
    # q/k/v one op, gate/up one op, o alone: at the trace (fakes) nothing runs, so the calls
    # are the compiled graph's.
    assert calls == [("exec_site", "q"), ("exec_site", "gate"), ("exec_linear", "o")]


def test_a_sibling_on_another_input_or_twice_keeps_its_own_ops(monkeypatch):
    """k on another input (cross-attention): q, k and v each their own op. q twice and no v:
    the same."""
    m, calls = linears(monkeypatch, {"q": (8, 16), "k": (4, 16), "v": (4, 16)}, seed=1)
    site(m["q"], m["k"], m["v"])
    h, enc = torch.randn(5, 16), torch.randn(5, 16)
    for f, args in ((lambda h, enc: (m["q"](h), m["k"](enc), m["v"](h)), (h, enc)),
                    (lambda h: (m["q"](h), m["k"](h), m["q"](h * 2)), (h,))):
        want = f(*args)
        calls.clear()
        got = compiled(f, *args)
        assert all(torch.equal(a, b) for a, b in zip(got, want))
        assert [c[0] for c in calls] == ["exec_linear"] * 3, calls


def test_eager_siblings_served_from_the_launch_on_their_input(monkeypatch):
    """Eagerly, the first of q/k/v called on an input launches all three (ExecLinear._run
    records the others' outputs with the input tensor and its version); k and v on that same
    tensor, unchanged, are then served without a launch, the last one dropping the record. On
    another tensor (even with equal values), after an in-place change, or where a gradient
    would be asked for, a sibling runs its own launch."""
    m, calls = linears(monkeypatch, {"q": (8, 16), "k": (4, 16), "v": (4, 16)}, seed=4)
    s = site(m["q"], m["k"], m["v"])
    h = torch.randn(3, 16)
    yk, yv = torch.randn(3, 4), torch.randn(3, 4)

    def record(x):
        s.cache = (x, x._version, {1: yk, 2: yv})

    with torch.no_grad():
        record(h)
        assert m["k"](h) is yk and m["v"](h) is yv
        assert calls == [] and s.cache is None
        record(h)
        assert m["v"](h) is yv and s.cache is not None  # k's output still held
        assert m["k"](h.clone()) is not yk  # another tensor: its own launch
        assert calls == [("exec_linear", "k")]
        h.mul_(2)  # in place: the version moves on
        assert m["k"](h) is not yk
        assert calls[-1] == ("exec_linear", "k")
    g = torch.randn(3, 16, requires_grad=True)
    record(g)
    with torch.enable_grad():
        m["k"](g)  # _run's error for a gradient, not the recorded output
    assert calls[-1] == ("exec_linear", "k")


def test_the_graph_reads_only_the_keys(monkeypatch):
    """Dynamo guards a traced Linear on its module's key only (guards run on every call of the
    compiled code): a change to its ExecLinear's or its site's Python state compiles nothing
    again."""
    m, calls = linears(monkeypatch, {"gate": (24, 16), "up": (24, 16)}, seed=3)
    s = site(m["gate"], m["up"])
    counts = []

    def backend(gm, example_inputs):
        counts.append(1)
        return gm.forward

    torch._dynamo.reset()
    f = torch.compile(lambda h: (m["gate"](h), m["up"](h)), backend=backend, fullgraph=True)
    h = torch.randn(3, 16)
    with torch.no_grad():
        f(h)
        s.cache = (h, 0, {})  # as an eager call leaves it
        gate = m["gate"]._df11_exec
        gate.key += 1000  # read by nothing once the module is made
        gate.site = exec_mode.CallSite(list(s.linears))
        f(h)
    assert len(counts) == 1


def test_pass_keeps_a_pass_set_before_and_is_installed_once(monkeypatch):
    from torch._inductor import config
    seen = []

    class Before:
        def __call__(self, graph):
            seen.append(graph)

        def uuid(self):
            return "before"

    with config.patch(post_grad_custom_pre_pass=Before()):
        exec_mode.install_pass()
        exec_mode.install_pass()
        p = config.post_grad_custom_pre_pass
        assert isinstance(p, exec_mode.SiblingPass) and isinstance(p.inner, Before)
        graph = torch.fx.Graph()
        graph.output(graph.placeholder("x"))
        p(graph)
        assert seen == [graph]
        first = p.uuid()
        m, _ = linears(monkeypatch, {"gate": (24, 16), "up": (24, 16)}, seed=4)
        assert p.uuid() != first  # new Linears: the cached graphs of before do not apply
        site(m["gate"], m["up"])
        assert p.uuid() not in (first, None)
        p.inner = lambda graph: None  # a pass without an id: Inductor bypasses its caches
        assert p.uuid() is None


@pytest.mark.parametrize("tokens", [1, 7])
def test_fakes_give_the_outputs_shapes(monkeypatch, tokens):
    m, _ = linears(monkeypatch, {"gate": (24, 16), "up": (12, 16)}, seed=2)
    site(m["gate"], m["up"])
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode() as mode:
        x = mode.from_tensor(torch.randn(tokens, 16))
        outs = torch.ops.df11.exec_site(x, m["gate"]._df11_key)
        one = torch.ops.df11.exec_linear(x, m["up"]._df11_key)
    assert [tuple(o.shape) for o in outs] == [(tokens, 24), (tokens, 12)]
    assert tuple(one.shape) == (tokens, 12)
