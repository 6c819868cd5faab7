"""A DF11 model under torch.compile on the CPU (the tiny Llama): one graph (fullgraph=True) and
the logits equal to the eager model's (aot_eager), in the CPU's layout (each Linear decodes
its weight) and in the block layout a GPU uses (tested here as its proxy): there the decode
buffer is the only input the graph mutates and a static one (what Inductor's CUDA graph trees
capture), and every decode is done in place; transformers' compiled generate gives eager's
tokens. Against the BF16 model
compiled the same way (Inductor, whose fusions round differently from eager for BF16 too) the
logits are equal too: the traced embedding lookup gathers its rows (F.embedding over the rows
decode's output) where the BF16 graph gathers from its weight, so Inductor fuses the residual
stream alike."""
import logging

import pytest
import torch

import df11
import models

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture
def block_layout(monkeypatch):
    """The layout a GPU uses (each unit decoded whole into the buffer before its forward),
    which the CPU uses only for units that are not all Linears (engine.CPU_PARTS)."""
    monkeypatch.setattr(df11.engine, "CPU_PARTS", False)


def check_equal(a, b):
    assert a.shape == b.shape
    assert torch.equal(a, b), f"max |diff| {(a.float() - b.float()).abs().max().item()}"


def _aot_backend(seen):
    """aot_eager that records, per graph, the inputs the graph mutates and its static ones."""
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    def fw(gm, example_inputs):
        meta = torch._guards.TracingContext.try_get().fw_metadata
        seen.append(([i for i, info in enumerate(meta.input_info) if info.mutates_data],
                     list(meta.static_input_indices),
                     [n for n in gm.graph.nodes  # functionalized: auto_functionalized(op, ...)
                      if "decode_into" in str(n.target) + str(n.args[:1])]))
        return make_boxed_func(gm.forward)
    return aot_autograd(fw_compiler=fw)


def _compiled_equals_eager(llama_folders, linear_class, backend):
    """Loads the tiny Llama, checks its Linears' class and eager logits against BF16's, then
    the compiled forward's (fullgraph, twice: the weights are decoded again) against eager's."""
    _, bf16_dir, df11_dir = llama_folders
    ref = models.bf16_llm(bf16_dir)
    model = df11.from_pretrained(df11_dir, device="cpu")
    assert isinstance(model.model.layers[0].mlp.down_proj, linear_class)
    ids = models.llm_inputs(ref.config.vocab_size, 2)
    eager = model(input_ids=ids).logits
    check_equal(eager, ref(input_ids=ids).logits)
    torch._dynamo.reset()
    compiled = torch.compile(model.forward, backend=backend, fullgraph=True)
    check_equal(compiled(input_ids=ids).logits, eager)
    check_equal(compiled(input_ids=ids).logits, eager)
    return model, ids, eager


@torch.no_grad()
def test_parts_layout_fullgraph_equals_eager(llama_folders):
    """The CPU's own layout (each Linear decodes its weight; torch.ops.df11.linear_parts when
    traced)."""
    _compiled_equals_eager(llama_folders, df11.modules.PartsLinear, "aot_eager")


@torch.no_grad()
def test_fullgraph_logits_equal_eager_and_mutation_is_static(llama_folders, block_layout):
    seen = []
    model, ids, eager = _compiled_equals_eager(llama_folders, df11.modules.CodedLinear,
                                               _aot_backend(seen))
    assert len(seen) == 1  # one graph
    mutated, static, decodes = seen[0]
    assert len(decodes) == len(model.df11.units)  # one decode per unit, in the graph
    assert mutated, "the decodes mutate the buffer"
    assert set(mutated) <= set(static), f"mutated inputs {mutated} not static ({static})"
    # Eager after compiled: the shared-buffer path is untouched.
    check_equal(model(input_ids=ids).logits, eager)


def _inductor_logits(llama_folders, caplog):
    _, bf16_dir, df11_dir = llama_folders
    ref = models.bf16_llm(bf16_dir)
    model = df11.from_pretrained(df11_dir, device="cpu")
    ids = models.llm_inputs(ref.config.vocab_size, 2)
    torch._dynamo.reset()
    from torch._inductor import config
    with caplog.at_level(logging.INFO, logger="torch._inductor.fx_passes.reinplace"), \
            config.patch(fx_graph_cache=False):
        got = torch.compile(model.forward, fullgraph=True)(input_ids=ids).logits
    want = torch.compile(ref.forward, fullgraph=True)(input_ids=ids).logits
    return got, want


@torch.no_grad()
def test_inductor_equals_bf16_compiled(llama_folders, caplog, block_layout):
    check_equal(*_inductor_logits(llama_folders, caplog))


@torch.no_grad()
def test_inductor_equals_bf16_compiled_parts_layout(llama_folders, caplog):
    """The CPU's own layout (each Linear decodes its weight in an opaque op)."""
    check_equal(*_inductor_logits(llama_folders, caplog))


@torch.no_grad()
def test_inductor_decodes_in_place(llama_folders, caplog, block_layout):
    _inductor_logits(llama_folders, caplog)
    # Every decode writes the buffer in place: a decode the reinplacing pass could not
    # reinplace would clone the whole buffer first (the log names it with its argument).
    lines = [r.getMessage() for r in caplog.records if "df11::decode_into" in r.getMessage()]
    missed = [line for line in lines if "unable to reinplace []" not in line]
    assert not missed, missed[0]


@torch.no_grad()
@pytest.mark.parametrize("layout", ["parts", "block"])
def test_generate_static_cache_compiled_equals_eager(llama_folders, layout, monkeypatch):
    monkeypatch.setattr(df11.engine, "CPU_PARTS", layout == "parts")
    from transformers import CompileConfig
    _, bf16_dir, df11_dir = llama_folders
    ref = models.bf16_llm(bf16_dir)
    model = df11.from_pretrained(df11_dir, device="cpu")
    ids = models.llm_inputs(ref.config.vocab_size, 2, length=8, seed=5)
    config = CompileConfig(backend="aot_eager", fullgraph=True)
    config._compile_all_devices = True  # transformers compiles on GPUs only, unless told
    kw = dict(attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=6,
              min_new_tokens=6, eos_token_id=None, pad_token_id=0,
              cache_implementation="static")
    torch._dynamo.reset()
    from torch._dynamo.utils import counters
    counters.clear()
    eager = model.generate(input_ids=ids, disable_compile=True, **kw)
    compiled = model.generate(input_ids=ids, compile_config=config, **kw)
    assert sum(counters["stats"].values()) > 0, "generate did not compile the step"
    assert torch.equal(compiled, eager)
    assert torch.equal(eager, ref.generate(input_ids=ids, disable_compile=True, **kw))


@torch.no_grad()
def test_root_hooks_are_no_frames_of_their_own_under_compile(llama_folders):
    """transformers' compiled generate (and torch.compile(model)) compile the model's __call__,
    whose root hooks torch calls outside the traced forward: they run eagerly there, with no
    frame of dynamo's own (no cache lookup or guards on every compiled step), and a module
    that calls the DF11 model still compiles in one graph, the hooks traced inline."""
    cache_entries = getattr(torch._C._dynamo.eval_frame, "_debug_get_cache_entry_list", None)
    if cache_entries is None:
        pytest.skip("this torch does not list dynamo's cache entries")
    from transformers import CompileConfig
    _, bf16_dir, df11_dir = llama_folders
    ref = models.bf16_llm(bf16_dir)
    model = df11.from_pretrained(df11_dir, device="cpu")
    assert df11.hooks._root_hooks_eager == [True]
    root_hooks = [h for h in model._forward_pre_hooks.values()
                  if isinstance(h, df11.hooks.RootHook)]
    assert root_hooks, "the model has no root hook to check"
    calls = []
    guard = root_hooks[0].fn
    root_hooks[0].fn = lambda *a: (calls.append(torch.compiler.is_compiling()), guard(*a))[1]
    ids = models.llm_inputs(ref.config.vocab_size, 2, length=8, seed=5)
    config = CompileConfig(backend="aot_eager", fullgraph=True)
    config._compile_all_devices = True
    kw = dict(attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=6,
              min_new_tokens=6, eos_token_id=None, pad_token_id=0,
              cache_implementation="static")
    torch._dynamo.reset()
    compiled = model.generate(input_ids=ids, compile_config=config, **kw)
    assert torch.equal(compiled, ref.generate(input_ids=ids, disable_compile=True, **kw))
    assert cache_entries(df11.hooks.RootHook.__call__.__code__) == []
    assert len(calls) >= 6 and not any(calls), calls  # every step, eagerly

    class Caller(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids):
            return self.inner(input_ids=input_ids).logits * 1

    calls.clear()
    torch._dynamo.reset()
    logits = torch.compile(Caller(model), backend="aot_eager", fullgraph=True)(ids)
    check_equal(logits, model(input_ids=ids).logits)
    assert calls[0] is True  # traced inline once (a second call may reuse the graph)


def _guard_leaves(fn, *args):
    """The leaf checks of the guard tree dynamo builds for fullgraph torch.compile(fn)(*args)
    (backend "eager"): one line each, as dynamo logs them."""
    messages = []

    class Collect(logging.Handler):
        def emit(self, record):
            messages.append(record.getMessage())

    handler, log = Collect(), logging.getLogger("torch._dynamo.guards.__guards")
    torch._dynamo.reset()
    torch._logging.set_logs(guards=True)
    log.addHandler(handler)
    try:
        torch.compile(fn, backend="eager", fullgraph=True)(*args)
    finally:
        torch._logging.set_logs()
        log.removeHandler(handler)
    trees = [m for m in messages if "TREE_GUARD_MANAGER" in m]
    assert len(trees) == 1, f"{len(trees)} guard trees"
    return [line for line in trees[0].splitlines()
            if "+- " in line and "Manager" not in line.split("+- ", 1)[1].split(":", 1)[0]]


@torch.no_grad()
def test_traced_forward_guards_one_key_per_module_and_unit(llama_folders, block_layout):
    """Dynamo runs a compiled call's guards on every call: a traced CodedLinear and a unit's
    hooks read their constants through _ops.plan(key), so each is guarded on its key alone,
    not on a slice tuple, a groups list and each group's key (on a GPU's 32-block Llama, 703
    fewer checks a step: bench/results/compiled-lookups-h200)."""
    _, bf16_dir, df11_dir = llama_folders
    ref = models.bf16_llm(bf16_dir)
    model = df11.from_pretrained(df11_dir, device="cpu")
    ids = models.llm_inputs(ref.config.vocab_size, 2)
    leaves = _guard_leaves(lambda i: model(input_ids=i).logits, ids)
    coded = [m for m in model.modules() if isinstance(m, df11.modules.CodedLinear)]
    assert coded and len(model.df11.units) > 1
    assert sum("._df11_plan ==" in line for line in leaves) == len(coded)
    assert sum(".plan_key ==" in line for line in leaves) == len(model.df11.units)
    for attr in ("_df11_slice", ".unit.groups", ".unit.traced_copies", ".unit.buffer_key",
                 ".unit.reads_key"):
        assert not [line for line in leaves if attr in line], attr
    check_equal(model(input_ids=ids).logits, ref(input_ids=ids).logits)


def test_compiled_logits_tool_on_the_cpu(llama_folders, tmp_path):
    """bench/compiled_logits.py (every step's logits of the static-cache generate, eager and
    compiled, each model in its own process) on the CPU: the default mode's logits equal
    BF16's at every step, eager and compiled, and each model's compiled runs equal each other;
    BF16's compiled logits part from its eager ones (Inductor's fusions), which the tool must
    see too. Compiled in Inductor's deterministic mode (--deterministic: what the workers'
    environment carries)."""
    import json
    import os
    import subprocess
    import sys
    _, bf16_dir, df11_dir = llama_folders
    tool = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "compiled_logits.py")
    out = tmp_path / "logits.json"
    subprocess.run([sys.executable, tool, "--bf16", bf16_dir, "--df11", df11_dir, "--device",
                    "cpu", "--tokens", "6", "--repeat", "2", "--deterministic", "--json",
                    str(out)], check=True)
    result = json.loads(out.read_text())
    assert result["deterministic"] is True
    rows = result["rows"]
    pair = [r for r in rows if r.get("reference") == "bf16"]
    assert len(pair) == 1 and pair[0]["variant"] == "decode"
    assert pair[0]["eager"] == dict(steps=6, differing=0, first=None)
    assert pair[0]["compiled"] == dict(steps=6, differing=0, first=None)
    alone = {r["variant"]: r for r in rows if "unstable_runs" in r}
    assert alone["bf16"]["unstable_runs"] == [] and alone["decode"]["unstable_runs"] == []
    assert alone["bf16"]["deterministic"] is True and alone["decode"]["deterministic"] is True
    assert alone["bf16"]["compiled_against_eager"]["differing"] > 0
    assert (alone["decode"]["compiled_against_eager"] ==
            alone["bf16"]["compiled_against_eager"])
