"""GPU checks of the df11 package (skipped without CUDA): run by python/tests/gpu/run_gpu.sh.

Every family on CUDA, from df11 folders and the official encoder's fixtures: logits
torch.equal to the BF16 model's on the same GPU, greedy tokens equal at batch 1 and 8; CUDA
graph capture of a decode step (same tokens as the same steps run eagerly, and as BF16's);
torch.compile(mode="reduce-overhead") through generate's static cache and of model.forward
(fullgraph, no CUDA-graph skip, in both modes); cpu_offload; a hostile
folder refused at load with no GPU memory left; corrupt streams refused at load, coded bytes
corrupted on the device after load reported after generate, naming the group; threads
sharing one model; device_map="auto" over every visible GPU."""
import gc
import os

import pytest
import torch

import df11
from df11 import exec_mode
from df11.coded import GpuUploads, decoded_tensors
import models

pytestmark = [pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU"),
              pytest.mark.filterwarnings("ignore::UserWarning")]

FAMILIES = models.FAMILIES


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("gpu")


@pytest.fixture
def inductor_heuristics():
    """Inductor's deterministic mode (torch._inductor.config.deterministic, the setting of
    TORCHINDUCTOR_DETERMINISTIC=1) for a test that compares a compiled DF11 model with BF16
    compiled the same way. By default Inductor times the candidate block sizes of each
    reduction kernel (an RMSNorm's) on the GPU and keeps the fastest: the kernels that differ
    between the two graphs (those fused with the embedding's gather) may keep other block
    sizes in DF11's, from run to run, and the logits then part by roundings after tens of
    steps. In this mode it picks them by its heuristics, alike in both."""
    import torch._inductor.config as inductor_config
    if not hasattr(inductor_config, "deterministic"):
        pytest.skip("this torch's Inductor has no deterministic mode")
    with inductor_config.patch(deterministic=True):
        yield


def greedy(model, ids, steps=16):
    with torch.no_grad():
        return model.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                              do_sample=False, max_new_tokens=steps, min_new_tokens=steps,
                              eos_token_id=None, pad_token_id=0)


def assert_equal(a, b):
    assert a.shape == b.shape
    assert torch.equal(a, b), f"max |diff| {(a.float() - b.float()).abs().max().item()}"


def check_model(model, ref):
    vocab = ref.config.vocab_size
    ids2 = models.llm_inputs(vocab, 2).cuda()
    with torch.no_grad():
        assert_equal(model(input_ids=ids2).logits, ref(input_ids=ids2).logits)
    for batch in (1, 8):
        ids = models.llm_inputs(vocab, batch, seed=11).cuda()
        assert torch.equal(greedy(model, ids), greedy(ref, ids)), f"batch {batch}"


@pytest.mark.parametrize("family", FAMILIES)
def test_df11_folder_cuda(work, family):
    bf16_dir, df11_dir = models.llm_folders(work, family)
    model = df11.from_pretrained(df11_dir, device="cuda")
    assert all(rt.device.type == "cuda" for rt in model.df11.runtimes)
    check_model(model, models.bf16_llm(bf16_dir, "cuda"))


@pytest.mark.parametrize("family", FAMILIES)
def test_head_held_decoded_buffer_sized_without_it(work, family):
    """The output head's group (an untied lm_head, or the embedding a tied head shares) is
    decoded once at load on the GPU into a tensor of its own: no unit decodes it per forward,
    the decode buffer is sized for the largest other unit, and the head equals BF16's."""
    bf16_dir, df11_dir = models.llm_folders(work, family)
    model = df11.from_pretrained(df11_dir, device="cuda")
    ref = models.bf16_llm(bf16_dir, "cuda")
    assert len(model.df11.resident) == 1
    assert all(rt.group.name not in model.df11.resident for rt in model.df11.runtimes)
    head = model.get_output_embeddings().weight
    assert head.device.type == "cuda" and type(head) is torch.nn.Parameter
    assert_equal(head, ref.get_output_embeddings().weight)
    if family in ("qwen3", "gemma3"):  # tied: the head is the loaded embedding, as in BF16
        assert head is model.get_input_embeddings().weight and not model.df11.rows
    state = model.df11.devices[torch.device("cuda", torch.cuda.current_device())]
    largest = max(sum(rt.group.elements for rt in u.groups) for u in model.df11.units)
    assert largest <= state.buffer.numel() <= largest + 128 * max(len(u.groups)
                                                                  for u in model.df11.units)
    check_model(model, ref)


def test_upload_in_small_odd_chunks(work, monkeypatch):
    """The coded groups reach the GPU through two pinned buffers in turn (decoders.Uploader):
    with chunks of 1000 bytes every part spans many chunks and ends mid-chunk, and the model
    still equals BF16; the load reports the copies and the plans as phases of their own."""
    from df11 import decoders
    monkeypatch.setattr(decoders.Uploader, "CHUNK", 1000)
    bf16_dir, df11_dir = models.llm_folders(work, "llama")
    model = df11.from_pretrained(df11_dir, device="cuda")
    phases = model.df11.load_seconds
    assert {"coded groups to the GPU", "plans, workspaces"} <= set(phases)
    check_model(model, models.bf16_llm(bf16_dir, "cuda"))


def official_families():
    """The language models' fixtures with the encoder's output as the DFloat11 Hub publishes
    it (`official/`); FLUX's has a test of its own."""
    return sorted(f for f in os.listdir(models.FIXTURES)
                  if os.path.isdir(os.path.join(models.FIXTURES, f, "official")) and f != "flux")


@pytest.mark.parametrize("family", official_families())
def test_official_folder_cuda(family):
    fixture = os.path.join(models.FIXTURES, family)
    model = df11.from_pretrained(os.path.join(fixture, "official"), device="cuda")
    check_model(model, models.bf16_llm(os.path.join(fixture, "bf16"), "cuda"))


@pytest.mark.parametrize("folder", ["df11", "official"])
def test_flux_cuda(work, folder):
    pytest.importorskip("diffusers")
    from diffusers import FluxTransformer2DModel
    src = os.path.join(models.FIXTURES, "flux", "bf16")
    ref = FluxTransformer2DModel.from_pretrained(src, torch_dtype=torch.bfloat16).cuda().eval()
    path = (models.df11_compress(src, str(work / "flux-df11")) if folder == "df11"
            else os.path.join(models.FIXTURES, "flux", "official"))
    model = df11.from_pretrained(path, device="cuda", bfloat16_model=models.flux_skeleton())
    with torch.no_grad():
        assert_equal(model(**models.flux_inputs("cuda"), return_dict=False)[0],
                     ref(**models.flux_inputs("cuda"), return_dict=False)[0])


def test_cuda_graph_tokens(work):
    from df11.generation import greedy_static
    bf16_dir, df11_dir = models.llm_folders(work, "llama")
    model = df11.from_pretrained(df11_dir, device="cuda")
    ref = models.bf16_llm(bf16_dir, "cuda")
    for batch in (1, 8):
        ids = models.llm_inputs(ref.config.vocab_size, batch, seed=5).cuda()
        eager, _ = greedy_static(model, ids, 24, cuda_graph=False)
        graphed, _ = greedy_static(model, ids, 24, cuda_graph=True)
        ref_graphed, _ = greedy_static(ref, ids, 24, cuda_graph=True)
        assert torch.equal(graphed, eager), f"batch {batch}: graph replay differs from eager"
        assert torch.equal(graphed, ref_graphed), f"batch {batch}: differs from BF16's graph"


def test_torch_compile_reduce_overhead(work, inductor_heuristics):
    """generate() with a static cache compiles the decode step (torch.compile, mode
    "reduce-overhead": CUDA graphs) when the model is on a GPU. df11's decodes trace as the
    custom op; the tokens must equal the BF16 model's compiled the same way (inductor's fusions
    may change numerics against eager, for BF16 as for DF11, which the log shows)."""
    bf16_dir, df11_dir = models.llm_folders(work, "llama")
    model = df11.from_pretrained(df11_dir, device="cuda")
    ref = models.bf16_llm(bf16_dir, "cuda")
    ids = models.llm_inputs(model.config.vocab_size, 2, seed=5).cuda()
    kw = dict(attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=12,
              min_new_tokens=12, eos_token_id=None, pad_token_id=0,
              cache_implementation="static")
    with torch.no_grad():
        eager = model.generate(input_ids=ids, disable_compile=True, **kw)
        compiled = model.generate(input_ids=ids, **kw)  # transformers compiles the step
        again = model.generate(input_ids=ids, **kw)
        ref_compiled = ref.generate(input_ids=ids, **kw)
        ref_eager = ref.generate(input_ids=ids, disable_compile=True, **kw)
    print(f"compile: df11 compiled == df11 eager: {torch.equal(compiled, eager)}; BF16 compiled "
          f"== BF16 eager: {torch.equal(ref_compiled, ref_eager)}; df11 eager == BF16 eager: "
          f"{torch.equal(eager, ref_eager)}")
    assert torch.equal(eager, ref_eager)
    assert torch.equal(compiled, ref_compiled)
    assert torch.equal(again, compiled)


def _compile_logs(fn):
    """Runs fn() with torch.compile's graph breaks and Inductor's CUDA-graph skips recorded:
    returns (fn's result, the skip messages, graph breaks)."""
    import logging
    from torch._dynamo.utils import counters
    messages = []

    class Keep(logging.Handler):
        def emit(self, record):
            messages.append(record.getMessage())
    handler = Keep(level=logging.DEBUG)
    loggers = [logging.getLogger(n) for n in ("torch._inductor", "torch._dynamo")]
    levels = [lg.level for lg in loggers]
    torch._logging.set_logs(perf_hints=True, graph_breaks=True)
    for lg in loggers:
        lg.addHandler(handler)
    counters.clear()
    try:
        out = fn()
    finally:
        for lg, level in zip(loggers, levels):
            lg.removeHandler(handler)
            lg.setLevel(level)
        torch._logging.set_logs()
    skips = [m for m in messages if "skipping cudagraphs" in m]
    skips += [f"{k} x{v}" for k, v in counters["inductor"].items() if "cudagraph_skip" in k and v]
    return out, skips, sum(counters["graph_break"].values())


@pytest.mark.parametrize("mode", ["decode", "exec", "compact"])
def test_compiled_forward_fullgraph_cudagraphs(work, mode, inductor_heuristics):
    """torch.compile(model.forward, mode="reduce-overhead", fullgraph=True): one graph, CUDA
    graphs not skipped (the decode buffer is a static input, the only one mutated), logits
    equal to BF16's compiled the same way (decode) and to the eager DF11 model's over several
    replays (Inductor's fusions are BF16's own, so compiled-against-eager is not a df11 test
    for mode="decode"; the tokens below are)."""
    bf16_dir, df11_dir = models.llm_folders(work, "llama")
    model = df11.from_pretrained(df11_dir, device="cuda", mode=mode)
    ids = models.llm_inputs(model.config.vocab_size, 1, seed=3).cuda()
    torch._dynamo.reset()
    with torch.no_grad():
        eager = model(input_ids=ids).logits
        step = torch.compile(model.forward, mode="reduce-overhead", fullgraph=True)
        (got, again, third), skips, breaks = _compile_logs(
            lambda: [step(input_ids=ids).logits.clone() for _ in range(3)])
    assert not skips, skips
    assert breaks == 0
    assert torch.equal(again, got) and torch.equal(third, got)
    if mode == "decode":
        ref = models.bf16_llm(bf16_dir, "cuda")
        torch._dynamo.reset()
        with torch.no_grad():
            want = torch.compile(ref.forward, mode="reduce-overhead",
                                 fullgraph=True)(input_ids=ids).logits.clone()
        print(f"compiled forward: df11 == BF16 compiled {torch.equal(got, want)}; df11 "
              f"compiled == eager {torch.equal(got, eager)}")
        assert torch.equal(got, want)
    model.df11.check_status(wait=True)


@pytest.mark.parametrize("mode", ["decode", "exec", "compact"])
def test_dropped_model_gives_its_memory_back(work, mode):
    """A model dropped after eager and compiled forwards gives its memory back: df11's
    registries of traced call sites hold no model alive. (torch keeps a few small blocks of
    its own across a compile, so the bound is a hundredth of what the model held.)"""
    _, df11_dir = models.llm_folders(work, "llama")
    torch._dynamo.reset()
    gc.collect()
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    model = df11.from_pretrained(df11_dir, device="cuda", mode=mode)
    held = torch.cuda.memory_allocated() - before
    ids = models.llm_inputs(model.config.vocab_size, 1, seed=3).cuda()
    with torch.no_grad():
        torch.nn.functional.linear(ids.bfloat16(), ids.bfloat16())  # cuBLAS's own workspace
        before = torch.cuda.memory_allocated() - held
        model(input_ids=ids)
        torch.compile(model.forward, fullgraph=True)(input_ids=ids)
    del model
    torch._dynamo.reset()
    gc.collect()
    torch.cuda.synchronize()
    left = torch.cuda.memory_allocated() - before
    assert left < held / 100, (left, held)


@pytest.mark.parametrize("mode", ["exec", "compact"])
def test_traced_siblings_one_launch_and_other_inputs(work, mode, monkeypatch):
    """Compiled, q/k/v (gate/up) on one input are one op, one launch (exec_mode.SiblingPass);
    a sibling called on another input too (as cross-attention calls k/v) gets its own there.
    Outputs equal the eager ones."""
    _, df11_dir = models.llm_folders(work, "llama")
    model = df11.from_pretrained(df11_dir, device="cuda", mode=mode)
    attn, mlp = model.model.layers[0].self_attn, model.model.layers[0].mlp
    sites = []
    run_site = exec_mode.ExecLinear.run_site
    monkeypatch.setattr(exec_mode.ExecLinear, "run_site",
                        lambda self, x: sites.append(self.name) or run_site(self, x))

    def f(h, enc):
        return (attn.q_proj(h), attn.k_proj(h), attn.v_proj(h), attn.k_proj(enc),
                mlp.gate_proj(h), mlp.up_proj(h))
    g = torch.Generator(device="cuda").manual_seed(4)
    h, enc = (torch.randn(2, 7, model.config.hidden_size, device="cuda", generator=g)
              .to(torch.bfloat16) for _ in range(2))
    torch._dynamo.reset()
    with torch.no_grad():
        want = f(h, enc)
        got = torch.compile(f, fullgraph=True)(h, enc)
    assert all(torch.equal(a, b) for a, b in zip(got, want))
    assert len(sites) == 2, sites  # q/k/v once, gate/up once
    assert isinstance(attn.q_proj, df11.modules.ExecLinearModule)


@pytest.mark.parametrize("mode", ["decode", "exec", "compact"])
def test_generate_static_cache_cudagraphs(work, mode, inductor_heuristics):
    """transformers' compiled generate (static cache, mode "reduce-overhead"; fullgraph=True
    here): no graph break, no CUDA-graph skip, at batch 1 and 4; mode="decode": the tokens of
    BF16 compiled the same way (and eager DF11 equals eager BF16); mode="exec": the eager
    DF11 model's tokens."""
    from transformers import CompileConfig
    bf16_dir, df11_dir = models.llm_folders(work, "llama")
    model = df11.from_pretrained(df11_dir, device="cuda", mode=mode)
    ref = models.bf16_llm(bf16_dir, "cuda")
    torch._dynamo.reset()
    for batch in (1, 4):
        ids = models.llm_inputs(model.config.vocab_size, batch, seed=5).cuda()
        kw = dict(attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=12,
                  min_new_tokens=12, eos_token_id=None, pad_token_id=0,
                  cache_implementation="static")
        config = CompileConfig(fullgraph=True)
        with torch.no_grad():
            eager = model.generate(input_ids=ids, disable_compile=True, **kw)
            (compiled, again), skips, breaks = _compile_logs(lambda: [
                model.generate(input_ids=ids, compile_config=config, **kw) for _ in range(2)])
            ref_eager = ref.generate(input_ids=ids, disable_compile=True, **kw)
            ref_compiled = ref.generate(input_ids=ids, compile_config=config, **kw)
        print(f"generate {mode} batch {batch}: compiled == eager {torch.equal(compiled, eager)}; "
              f"BF16 compiled == BF16 eager {torch.equal(ref_compiled, ref_eager)}")
        assert not skips, skips
        assert breaks == 0
        assert torch.equal(again, compiled), f"batch {batch}"
        if mode == "decode":  # Inductor's fusions are BF16's own: compiled equals compiled
            assert torch.equal(eager, ref_eager), f"batch {batch}"
            assert torch.equal(compiled, ref_compiled), f"batch {batch}"
        else:
            assert torch.equal(compiled, eager), f"batch {batch}: compiled differs from eager"


def test_cpu_offload(work):
    bf16_dir, df11_dir = models.llm_folders(work, "qwen2")
    ref = models.bf16_llm(bf16_dir, "cuda")
    for blocks in (None, 1):
        model = df11.from_pretrained(df11_dir, device="cuda", cpu_offload=True,
                                     cpu_offload_blocks=blocks)
        offloaded = [rt for rt in model.df11.runtimes if rt.host_packed is not None]
        assert offloaded and all(rt.host_packed.is_pinned() for rt in offloaded)
        if blocks is not None:
            assert len(offloaded) == blocks
        check_model(model, ref)


def test_hostile_folder_refused_nothing_left_on_gpu(work):
    _, df11_dir = models.llm_folders(work, "llama")
    official = os.path.join(models.FIXTURES, "phi3", "official")

    bump_last_position = models.bump_last_output_position
    bad = models.corrupt_copy(official, str(work / "bad-official"),
                              "model.layers.1.output_positions", bump_last_position)
    # Earlier tests' models may still await collection: collect them before counting, or
    # their memory leaves during the loads and the count after comes out smaller.
    gc.collect()
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    with pytest.raises(df11.Df11Error) as e:
        df11.from_pretrained(bad, device="cuda")
    assert "group 'model.layers.1'" in str(e.value) and "model.safetensors" in str(e.value)
    # A df11 folder with the same corruption: it opens (the header checksums hold), and is
    # refused when its plan is made (df11_cuda_plan_create validates every group on the
    # host), after the upload of the coded groups began.
    bad2 = models.corrupt_copy(df11_dir, str(work / "bad-df11"),
                               "model.layers.1.output_positions", bump_last_position)
    with pytest.raises(df11.Df11Error) as e2:
        df11.from_pretrained(bad2, device="cuda")
    assert "model.layers.1" in str(e2.value)
    gc.collect()
    torch.cuda.synchronize()
    assert torch.cuda.memory_allocated() == before


def scramble(data):  # the bitstream itself: the host checks cannot see it
    for i in range(len(data) // 4, len(data) // 2):
        data[i] ^= 0x5A


def flip_one_byte(data):  # decodes fine, to a wrong weight: only a checksum sees it
    data[len(data) // 2] ^= 0x01


@pytest.mark.parametrize("mode", ["decode", "exec", "compact"])
def test_corrupt_streams_refused_at_load(work, mode):
    """Every group is checked at load on the GPU: the stored bytes against df11's recorded
    checksums, and one decode of each group with its status read. A corrupt folder is refused
    at load naming the file and group, before any forward pass, with no GPU memory left."""
    _, df11_dir = models.llm_folders(work, "mistral")
    official = os.path.join(models.FIXTURES, "phi3", "official")
    cases = [(df11_dir, "model.layers.1.encoded_exponent", scramble),
             (df11_dir, "model.layers.1.sign_mantissa", flip_one_byte),
             (official, "model.layers.1.encoded_exponent", scramble)]
    gc.collect()
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    for k, (src, tensor, how) in enumerate(cases):
        bad = models.corrupt_copy(src, str(work / f"bad-{mode}-{k}"), tensor, how)
        with pytest.raises(df11.Df11Error) as e:
            df11.from_pretrained(bad, device="cuda", mode=mode)
        assert "group 'model.layers.1'" in str(e.value) or "model.layers.1." in str(e.value), \
            str(e.value)
        assert "model.safetensors" in str(e.value), str(e.value)
        del e
        gc.collect()
        torch.cuda.synchronize()
        assert torch.cuda.memory_allocated() == before, f"case {k}"


@pytest.mark.parametrize("which,offload", [("first", False), ("last", False), ("middle", True)])
def test_flipped_byte_found_by_the_gpu_hash(work, which, offload):
    """One flipped byte that decodes to a wrong weight: the default mode hashes every uploaded
    group's stored tensors on the GPU (df11_cuda_check_stored), the output head held decoded
    and groups staged from host memory (cpu_offload) included, and refuses the folder at load,
    naming the file, the group and the stored tensor."""
    _, df11_dir = models.llm_folders(work, "mistral")
    folder = df11._capi.Model(df11_dir)
    names = [folder.group_name(g) for g in range(folder.group_count())]
    folder.close()
    group = {"first": names[0], "last": names[-1], "middle": names[len(names) // 2]}[which]
    tensor = f"{group}.sign_mantissa"
    bad = models.corrupt_copy(df11_dir, str(work / f"flip-{which}-{offload}"), tensor,
                              flip_one_byte)
    with pytest.raises(df11.Df11Error) as e:
        df11.from_pretrained(bad, device="cuda", cpu_offload=offload)
    msg = str(e.value)
    assert e.value.status == "corrupt_data", msg
    assert f"stored tensor '{tensor}' has xxh3" in msg and ".safetensors" in msg, msg


def test_gpu_uploads_hash_the_kept_groups(work):
    """The load vLLM's plugin makes (coded.GpuUploads keeping every group on the GPU): a flipped
    sign/mantissa byte decodes without a stream error, and check_stored, hashing the kept
    groups' stored tensors on the GPU, names the file, the group and the tensor; the same
    folder unflipped passes."""
    _, df11_dir = models.llm_folders(work, "mistral")
    folder = df11._capi.Model(df11_dir)
    names = [folder.group_name(g) for g in range(folder.group_count())]
    folder.close()
    tensor = f"{names[len(names) // 2]}.sign_mantissa"
    bad = models.corrupt_copy(df11_dir, str(work / "flip-uploads"), tensor, flip_one_byte)
    for path, flipped in ((df11_dir, False), (bad, True)):
        folder = df11._capi.Model(path)
        uploads = GpuUploads(torch.device("cuda", 0), True)
        n = sum(1 for _ in decoded_tensors(folder, uploads))
        assert n >= folder.tensor_count() and len(uploads.groups) == folder.group_count()
        if not flipped:
            uploads.check_stored(folder)
            continue
        with pytest.raises(df11.Df11Error) as e:
            uploads.check_stored(folder)
        msg = str(e.value)
        assert e.value.status == "corrupt_data", msg
        assert f"stored tensor '{tensor}' has xxh3" in msg and ".safetensors" in msg, msg


def test_encode_batches_stages_gpu_weights(tmp_path):
    """coded.encode_batches on weights on the GPU (a tensor-parallel rank's slices), some of
    them not contiguous, beside one in host memory: batches copied through the pinned buffers
    while the previous batch is coded, every weight decoding to exactly its bits."""
    from df11 import coded
    g = torch.Generator(device="cuda").manual_seed(5)
    name = "model.layers.{}.mlp.down_proj.weight".format
    weights = {name(i): (torch.randn(96 + 32 * i, 64, generator=g, device="cuda") * 0.02)
               .to(torch.bfloat16) for i in range(6)}
    weights[name(2)] = weights[name(2)].t()  # a strided view
    weights[name(6)] = (torch.randn(32, 64) * 0.02).to(torch.bfloat16)  # in host memory
    cap = 2 * weights[name(1)].numel() * 2
    folders = coded.encode_batches(weights, str(tmp_path / "staged"), batch_bytes=cap)
    try:
        assert len(folders) > 2 and sorted(n for _, ns in folders for n in ns) == sorted(weights)
        for folder, names in folders:
            for name in names:
                group, spans = coded.tensor_spans(folder, folder.find_tensor(name))
                (offset, count), = spans
                got = coded._decode_group(folder, group)[offset:offset + count]
                want = weights[name].cpu().contiguous()
                assert torch.equal(got.view(torch.int16).view(want.shape),
                                   want.view(torch.int16)), name
    finally:
        for folder, _ in folders:
            folder.close()


def test_corrupt_device_bytes_reported_after_generate(work):
    """Coded bytes corrupted in GPU memory after the load's checks are reported by the
    deferred status check after generate, naming the group."""
    _, df11_dir = models.llm_folders(work, "mistral")
    model = df11.from_pretrained(df11_dir, device="cuda")
    rt = next(rt for rt in model.df11.runtimes if rt.group.name == "model.layers.1")
    state = model.df11.devices[rt.device]
    addr = rt.decoder.parts[df11._capi.PART_ENCODED_EXPONENT]
    nbytes = model.df11.folder.group_part(rt.group.index, df11._capi.PART_ENCODED_EXPONENT)[1]
    at = addr - state.coded.data_ptr()
    region = state.coded[at + nbytes // 4:at + nbytes // 2]
    region.bitwise_xor_(0x5A)
    ids = models.llm_inputs(model.config.vocab_size, 1).cuda()
    with pytest.raises(df11.Df11Error) as e:
        greedy(model, ids, steps=4)
    assert "group 'model.layers.1'" in str(e.value), str(e.value)


@pytest.mark.parametrize("mode,streams", [("decode", False), ("decode", True),
                                          ("exec", False), ("exec", True),
                                          ("compact", False), ("compact", True)])
def test_threads_share_one_model(work, mode, streams):
    """Four threads call model(ids) on one model (24 tokens each, as a threaded server's
    requests), on the default stream or each on a stream of its own: every forward pass
    returns its correct logits, as the BF16 model's (mode="exec" and "compact": as the reference
    model's)."""
    import threading
    bf16_dir, df11_dir = models.llm_folders(work, "llama")
    model = df11.from_pretrained(df11_dir, device="cuda", mode=mode)
    ref = models.bf16_llm(bf16_dir, "cuda")
    if mode != "decode":
        ref = df11.exec_reference(ref, mode=mode)
    inputs = [models.llm_inputs(ref.config.vocab_size, 1, length=24, seed=s).cuda()
              for s in range(4)]
    with torch.no_grad():
        want = [ref(input_ids=ids).logits for ids in inputs]
    results = {i: [] for i in range(4)}
    errors = []
    barrier = threading.Barrier(4)

    def worker(i):
        try:
            stream = torch.cuda.Stream() if streams else torch.cuda.current_stream()
            stream.wait_stream(torch.cuda.default_stream())
            barrier.wait()
            with torch.no_grad(), torch.cuda.stream(stream):
                for _ in range(25):
                    results[i].append(model(input_ids=inputs[i]).logits)
            stream.synchronize()
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    torch.cuda.synchronize()
    assert not errors, errors
    wrong = sum(not torch.equal(got, want[i]) for i in results for got in results[i])
    print(f"threads ({mode}, own streams: {streams}): {wrong} of 100 forward passes wrong")
    assert wrong == 0
    model.df11.check_status(wait=True)


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_device_map_auto_two_gpus(work):
    bf16_dir, df11_dir = models.llm_folders(work, "llama")
    ref = models.bf16_llm(bf16_dir, "cuda")
    # GPU 0 gets a budget for about half the model (test_models_cpu.py checks the map this
    # budget gives: the embedding and the first block on GPU 0, the rest on GPU 1).
    model = df11.from_pretrained(df11_dir, device_map="auto",
                                 max_memory={0: models.half_budget(ref), 1: "10GB"})
    devices = {rt.device for rt in model.df11.runtimes}
    assert devices == {torch.device("cuda", 0), torch.device("cuda", 1)}, devices
    check_model(model, ref)


@pytest.mark.parametrize("family,mode", [("llama", "exec"), ("qwen2", "exec"),  # qwen2: biases
                                         ("llama", "compact"), ("qwen2", "compact")])
def test_exec_mode_equals_the_reference_gemm(work, family, mode):
    """mode="exec" (and "compact"): every coded Linear runs from the execution layout (the
    compact one). At <= 32 tokens its products equal df11's reference GEMM on the BF16 weights
    bit for bit (not cuBLAS's), above 32 they are torch's on the decoded weights; so the
    model's logits are torch.equal to the BF16 model's with df11.exec_reference put in, at both
    sizes, and its greedy tokens (eager and under a CUDA graph) equal that model's. The compact
    layout's blobs are smaller than the 12-bit layout's. An untied input embedding stays coded
    (rows decodes), and the scratch of the decoded path is sized without the output head, which
    decodes into a buffer of its own above the fused GEMM's tokens."""
    from df11.generation import greedy_static
    from df11 import exec_mode
    bf16_dir, df11_dir = models.llm_folders(work, family)
    model = df11.from_pretrained(df11_dir, device="cuda", mode=mode)
    state = next(iter(model.df11.exec_states.values()))
    assert state.layout is exec_mode.LAYOUTS[mode]
    n_layers = model.config.num_hidden_layers
    assert len(state.linears) >= 7 * n_layers  # every block's Linears (and a coded lm_head)
    assert not model.df11.units  # nothing left in the decode mode: no DF11 bytes kept
    emb = model.get_input_embeddings()
    head = next(lin for lin in state.linears if lin.module is model.get_output_embeddings())
    blocks = max(lin.rows * lin.cols for lin in state.linears if lin is not head)
    if model.config.tie_word_embeddings:  # the head multiplies from the decoded embedding
        assert not model.df11.rows
    else:
        assert len(model.df11.rows) == 1 and isinstance(emb.weight, df11.modules.CodedWeight)
        assert head.transient == (head.rows * head.cols > blocks)
    assert state.scratch.numel() == (blocks if head.transient else
                                     max(blocks, head.rows * head.cols))
    # Each such Linear is an ExecLinearModule (an nn.Linear) whose weight is a CodedWeight,
    # listed in state_dict() as in the default mode; save_pretrained writes the folder's
    # stored tensors byte for byte.
    for lin in state.linears:
        assert isinstance(lin.module, df11.modules.ExecLinearModule)
        assert isinstance(lin.module.weight, df11.modules.CodedWeight)
    listed = model.state_dict()
    assert all(isinstance(listed[lin.name], df11.modules.CodedWeight) for lin in state.linears)
    saved_dir = str(work / f"saved-{family}-{mode}")
    model.save_pretrained(saved_dir)
    source, saved = models.saved_tensors(df11_dir), models.saved_tensors(saved_dir)
    assert set(saved) == set(source)
    for key, value in source.items():
        assert torch.equal(saved[key].view(torch.uint8), value.view(torch.uint8)), key
    bits = exec_mode.bits_per_weight(state)
    print(f"{family} {mode}: {bits:.3f} bits per weight")
    if mode == "exec":
        assert 11.9 < bits < 12.6
    else:  # smaller than the 12-bit layout's (the 8B block's sizes: BENCHMARKS.md)
        assert 8 < bits < 11.9
    ref = df11.exec_reference(models.bf16_llm(bf16_dir, "cuda"), mode=mode)
    plain = models.bf16_llm(bf16_dir, "cuda")
    vocab = ref.config.vocab_size
    for batch, length in ((1, 1), (1, 16), (2, 8), (1, 24), (2, 16), (1, 40), (4, 16), (3, 40),
                          (4, 40)):
        ids = models.llm_inputs(vocab, batch, length=length, seed=3).cuda()
        with torch.no_grad():
            got, want = model(input_ids=ids).logits, ref(input_ids=ids).logits
        assert_equal(got, want)
        if batch * length > exec_mode.fused_max_tokens(mode):  # F.linear on the decoded weights
            with torch.no_grad():
                assert_equal(got, plain(input_ids=ids).logits)
    for batch in (1, 8):
        ids = models.llm_inputs(vocab, batch, seed=11).cuda()
        assert torch.equal(greedy(model, ids), greedy(ref, ids)), f"batch {batch}"
        graphed, _ = greedy_static(model, ids, 20, cuda_graph=True)
        eager, _ = greedy_static(model, ids, 20, cuda_graph=False)
        ref_graphed, _ = greedy_static(ref, ids, 20, cuda_graph=True)
        assert torch.equal(graphed, eager) and torch.equal(graphed, ref_graphed), f"batch {batch}"
    model.df11.check_status(wait=True)


@pytest.mark.parametrize("mode", ["exec", "compact"])
def test_exec_mode_lora_inference(work, mode):
    """PEFT LoRA over a model in mode="exec" / "compact": its Linears are nn.Linear modules
    that PEFT wraps, and the logits equal those of the BF16 model with df11.exec_reference and
    the same adapter. A gradient through one of them (training) is refused, not dropped."""
    peft = pytest.importorskip("peft")
    bf16_dir, df11_dir = models.llm_folders(work, "llama")

    def lora(model):
        config = peft.LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, init_lora_weights=False,
                                 target_modules=["q_proj", "v_proj", "o_proj", "down_proj"])
        return peft.get_peft_model(model, config)
    got = lora(df11.from_pretrained(df11_dir, device="cuda", mode=mode))
    ref = lora(df11.exec_reference(models.bf16_llm(bf16_dir, "cuda"), mode=mode))
    ref_params = dict(ref.named_parameters())
    with torch.no_grad():
        lora_params = [(n, p) for n, p in got.named_parameters() if "lora_" in n]
        assert lora_params
        for n, p in lora_params:
            ref_params[n].copy_(p)
    ids = models.llm_inputs(ref.config.vocab_size, 2, seed=3).cuda()
    with torch.no_grad():
        assert torch.equal(got(input_ids=ids).logits, ref(input_ids=ids).logits)
    with pytest.raises(RuntimeError, match="computes none"):
        got(input_ids=ids, labels=ids)


@pytest.mark.parametrize("mode", ["exec", "compact"])
def test_exec_mode_official_folder(mode):
    """mode="exec" (and "compact") on a folder the dfloat11 tools published (no df11 metadata:
    the members come from the folder's own listing): logits equal the reference GEMM's model's."""
    fixture = os.path.join(models.FIXTURES, "llama")
    model = df11.from_pretrained(os.path.join(fixture, "official"), device="cuda", mode=mode)
    ref = df11.exec_reference(models.bf16_llm(os.path.join(fixture, "bf16"), "cuda"), mode=mode)
    for length in (4, 40):
        ids = models.llm_inputs(ref.config.vocab_size, 1, length=length, seed=2).cuda()
        with torch.no_grad():
            assert_equal(model(input_ids=ids).logits, ref(input_ids=ids).logits)


def _break_tile_offsets(blob, at, nbytes):
    # spec/EXEC_LAYOUT.md 2: tile_offsets (u32) at byte 64 of the blob, entry 0 must be 0 and
    # none past n_exceptions (P2).
    blob[at + 64:at + 72] = 0xFF


def _invert_second_half(blob, at, nbytes):
    # The compact blob's second half (the end of the byte plane and the codeword stream).
    blob[at + nbytes // 2:at + nbytes].bitwise_not_()


@pytest.mark.parametrize("mode,corrupt,title", [
    ("exec", _break_tile_offsets, "execution layout"),
    ("compact", _invert_second_half, "compact layout")])
def test_layout_mode_reports_a_corrupt_blob(work, mode, corrupt, title):
    """A blob corrupted on the device after load is reported by the deferred check after
    generate, naming the layout and the matrices of the launch."""
    _, df11_dir = models.llm_folders(work, "mistral")
    model = df11.from_pretrained(df11_dir, device="cuda", mode=mode)
    state = next(iter(model.df11.exec_states.values()))
    lin = next(x for x in state.linears if x.name.endswith("layers.1.mlp.down_proj.weight"))
    blob = next(b for b in state.blobs
                if b.data_ptr() <= lin.matrix.d_blob < b.data_ptr() + b.numel())
    corrupt(blob, lin.matrix.d_blob - blob.data_ptr(), lin.matrix.bytes)
    ids = models.llm_inputs(model.config.vocab_size, 1).cuda()
    with pytest.raises(df11.Df11Error) as e:
        greedy(model, ids, steps=4)
    assert title in str(e.value) and "model.layers.1" in str(e.value), str(e.value)


@pytest.mark.parametrize("family", ["llama"])
def test_embedding_rows(work, family):
    """An untied input embedding stays coded on the GPU and each lookup decodes only its rows:
    equal to the BF16 model's lookup for any ids shape, in a CUDA graph replayed with new ids,
    and an id outside the vocabulary reported by check_status. No (vocab x hidden) BF16 tensor
    is held for it. (A tied one is the output head, held decoded:
    test_head_held_decoded_buffer_sized_without_it.)"""
    bf16_dir, df11_dir = models.llm_folders(work, family)
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    model = df11.from_pretrained(df11_dir, device="cuda")
    held = torch.cuda.memory_allocated() - before
    ref = models.bf16_llm(bf16_dir, "cuda")
    emb, ref_emb = model.get_input_embeddings(), ref.get_input_embeddings()
    vocab, hidden = ref_emb.weight.shape
    assert len(model.df11.rows) == 1 and isinstance(emb, type(ref_emb))
    assert not isinstance(emb.weight, torch.nn.Parameter)
    # What the GPU holds: df11's buffers and the raw tensors (each allocation rounded up to 512
    # bytes), not the embedding in BF16 (2 * vocab * hidden bytes, more than the rounding).
    tensors = [t for t in list(model.parameters()) + list(model.buffers()) if t.device.type == "cuda"]
    raw = sum(t.numel() * t.element_size() for t in tensors)
    slack = 512 * (len(tensors) + 16)
    assert slack < 2 * vocab * hidden
    assert held <= sum(model.df11.memory_bytes().values()) + raw + slack
    # The embedding's group is among the coded bytes on the GPU.
    folder = model.df11.folder
    group = next(g for g in range(folder.group_count())
                 if folder.group_name(g) == model.df11.rows[0][2].group_name)
    coded = sum(folder.group_part(group, p)[1] for p in df11._capi.DEVICE_PARTS)
    assert coded < 2 * vocab * hidden
    assert sum(s.coded.numel() for s in model.df11.devices.values()) >= coded
    if family == "llama":
        assert isinstance(emb.weight, df11.modules.CodedWeight)  # no values at all
    with torch.no_grad():
        for shape in ((1,), (2, 7), (1, 1), (3, 33)):
            ids = torch.randint(0, vocab, shape, device="cuda")
            ids.view(-1)[0], ids.view(-1)[-1] = 0, vocab - 1
            assert_equal(emb(ids), ref_emb(ids))
        static = torch.zeros((2, 5), dtype=torch.long, device="cuda")
        emb(static)  # warm-up outside the capture
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = emb(static)
        for seed in range(3):
            g = torch.Generator(device="cuda").manual_seed(seed)
            static.copy_(torch.randint(0, vocab, (2, 5), device="cuda", generator=g))
            graph.replay()
            torch.cuda.synchronize()
            assert_equal(out, ref_emb(static))
        # Statuses are read for forward passes of the model (check_status, generate).
        assert_equal(model(input_ids=static).logits, ref(input_ids=static).logits)
        model.df11.check_status()
        model(input_ids=torch.tensor([[1, vocab]], device="cuda"))
        with pytest.raises(df11.Df11Error, match=r"ids\[1\]"):
            model.df11.check_status()
        # Reported once: the model goes on with good ids.
        assert_equal(model(input_ids=static).logits, ref(input_ids=static).logits)
        model.df11.check_status()


def test_gpu_encoded_group_decodes_bit_for_bit():
    """coded.GpuGroup.encoded: a BF16 tensor on the GPU coded there (libdf11-tools' GPU
    encoder) decodes back bit for bit, whole and in spans, with subnormals, both zeros and
    values of every magnitude; a flipped stream byte is reported naming the group; an Inf or
    NaN is refused as uncodable."""
    from df11 import _capi
    from df11.coded import GpuGroup, SpansWeight
    g = torch.Generator().manual_seed(3)
    w = (torch.randn(3001, 1037, generator=g) * 0.02).to(torch.bfloat16)
    bits = w.view(torch.int16).reshape(-1)
    bits[:6] = torch.tensor([0, -32768, 1, -32767, 0x7700, 0x0080], dtype=torch.int16)
    w = w.cuda()
    group = GpuGroup.encoded(w, "layers.0.mlp.down_proj.weight", "rank 0")
    assert group.nbytes < w.numel() * 2 * 0.8
    whole = SpansWeight(group, [(0, w.numel())], tuple(w.shape)).decode()
    group.check()
    assert torch.equal(whole.view(torch.int16), w.view(torch.int16))
    n = w.numel()
    spans = [(n // 2 + 5, 1037), (3, 1037 * 2), (n - 1037, 1037)]
    part = SpansWeight(group, spans, (4, 1037)).decode()
    group.check()
    flat = w.reshape(-1)
    want = torch.cat([flat[o:o + c] for o, c in spans]).view(4, 1037)
    assert torch.equal(part.view(torch.int16), want.view(torch.int16))

    stream = group.coded[group.parts[_capi.PART_ENCODED_EXPONENT] - group.coded.data_ptr():]
    stream[1000:1008] ^= 0x5A
    SpansWeight(group, [(0, n)], tuple(w.shape)).decode()
    with pytest.raises(df11.Df11Error, match="rank 0: group 'layers.0.mlp.down_proj.weight'"):
        group.check()

    bad = w.clone()
    bad[7, 7] = float("nan")
    with pytest.raises(df11.Df11Error, match="rank 0: group 'nan.weight': exponent 255") as e:
        GpuGroup.encoded(bad, "nan.weight", "rank 0")
    assert e.value.status == "uncodable"


def test_experts_decode_only_the_routed_experts():
    """coded.ExpertsWeight on a GPU (an MoE layer's experts coded there as one group, a row per
    expert): a routing's experts decode bit for bit into the buffer and no other row is written,
    for routings of one, some and every expert and every `expected`; without a mask every
    expert; a CUDA graph captured once decodes, at each replay, the experts of the routing the
    graph's input then holds."""
    from df11.coded import ExpertsWeight, GpuGroup
    g = torch.Generator().manual_seed(5)
    experts, rows, cols = 16, 384, 256  # about 25 stream blocks per expert
    w = (torch.randn(experts, rows, cols, generator=g) * 0.02).to(torch.bfloat16).cuda()
    group = GpuGroup.encoded(w, "layers.0.mlp.experts.w13_weight", "rank 0")
    fill = torch.full_like(w, float("nan")).view(torch.int16).fill_(0x7FC1).view(torch.bfloat16)

    def check(out, chosen):
        for e in range(experts):
            want = w[e] if e in chosen else fill[e]
            assert torch.equal(out[e].view(torch.int16), want.view(torch.int16)), e

    for expected in (1, 4, 16):
        weight = ExpertsWeight(group, tuple(w.shape), expected)
        for topk in ([[3]], [[0, 15], [7, 0], [7, 9]], [list(range(16))]):
            ids = torch.tensor(topk, dtype=torch.int32, device="cuda")
            out = fill.clone()
            weight.decode_into(out, ExpertsWeight.routed_mask(ids, experts))
            group.check()
            check(out, {e for row in topk for e in row})
        out = fill.clone()
        weight.decode_into(out)
        group.check()
        check(out, set(range(experts)))

    weight = ExpertsWeight(group, tuple(w.shape), 2)
    ids = torch.zeros(2, 2, dtype=torch.int32, device="cuda")
    out = fill.clone()
    weight.decode_into(out, ExpertsWeight.routed_mask(ids, experts))  # before the capture
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream), torch.cuda.graph(graph, stream=stream):
        weight.decode_into(out, ExpertsWeight.routed_mask(ids, experts))
    torch.cuda.current_stream().wait_stream(stream)
    for topk in ([[1, 2], [2, 3]], [[14, 14], [5, 1]], [[9, 10], [11, 12]]):
        out.copy_(fill)
        ids.copy_(torch.tensor(topk, dtype=torch.int32))
        graph.replay()
        torch.cuda.synchronize()
        check(out, {e for row in topk for e in row})
