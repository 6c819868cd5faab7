"""The execution layout as a serving engine uses it (df11.exec_mode.ExecWeight, the vLLM
plugin's modes "exec" and "compact"), on CUDA (skipped without): a group transcoded once (into
each layout), layers made of its
members as the engine fuses them (q/k/v, gate/up) or alone, each checked against the BF16
weights: decoded bit for bit, and Y = X W^T (+ bias) torch.equal to df11's reference GEMM at
1-32 tokens and to F.linear above, in 2-D and 3-D inputs, eagerly and traced."""
import pytest
import torch

import models
from df11 import _capi, coded, exec_mode
from df11.vllm_config import member_spans

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")

FUSED = {"qkv": ["q_proj", "k_proj", "v_proj"], "gate_up": ["gate_proj", "up_proj"],
         "down": ["down_proj"], "o": ["o_proj"]}


@pytest.fixture(scope="module")
def qwen2(tmp_path_factory):  # qwen2: biases on q, k, v
    bf16_dir, df11_dir = models.llm_folders(tmp_path_factory.mktemp("exec"), "qwen2")
    ref = models.bf16_llm(bf16_dir, "cuda")
    return _capi.Model(df11_dir), ref


def layer_weight(folder, ref, parts, block=1, layout=exec_mode.EXEC):
    """The ExecWeight (in `layout`) of `parts` of block `block`, found as the vLLM plugin finds
    a layer's members (coded.layer_spans, member_spans), with the BF16 weight and bias it must
    equal."""
    mod = ref.model.layers[block]
    names, weights, biases = [], [], []
    for p in parts:
        sub = "self_attn" if p in ("q_proj", "k_proj", "v_proj", "o_proj") else "mlp"
        lin = getattr(getattr(mod, sub), p)
        names.append(f"model.layers.{block}.{sub}.{p}.weight")
        weights.append(lin.weight)
        biases.append(lin.bias)
    w = torch.cat(weights)
    bias = None if biases[0] is None else torch.cat(biases)
    members = [folder.find_tensor(n) for n in names]
    g, spans, why = coded.layer_spans(folder, members, tuple(w.shape))
    assert g is not None, why
    blob, mats, mat_names = exec_mode.transcode_group(folder, g, torch.device("cuda", 0),
                                                      layout=layout)
    picked = member_spans([m.rows * m.cols for m in mats], spans)
    assert [mat_names[k] for k in picked] == names
    return exec_mode.ExecWeight(blob, [mats[k] for k in picked], "test"), w, bias


@pytest.mark.parametrize("mode", list(exec_mode.LAYOUTS))
@pytest.mark.parametrize("fused", list(FUSED))
def test_exec_weight_equals_reference(qwen2, fused, mode):
    folder, ref = qwen2
    ew, w, bias = layer_weight(folder, ref, FUSED[fused], layout=exec_mode.LAYOUTS[mode])
    assert ew.layout is exec_mode.LAYOUTS[mode]
    assert ew.shape == tuple(w.shape)
    assert torch.equal(ew.decode().view(torch.int16), w.view(torch.int16))
    ew.check()
    gen = torch.Generator(device="cuda").manual_seed(3)
    limit = exec_mode.fused_max_tokens(mode)
    for tokens in list(range(1, 21)) + [24, 31, 32, 33, 64, 65, 100, 128, 129, 256, 257]:
        for lead in ((tokens,), (1, tokens)) + (((2, tokens // 2),) if tokens % 2 == 0 else ()):
            x = torch.randn(*lead, w.shape[1], device="cuda", generator=gen).to(torch.bfloat16)
            got = ew.linear(x, bias)
            want = exec_mode.reference_linear(x, w, bias, limit)
            assert got.shape == (*lead, w.shape[0])
            assert torch.equal(got.view(torch.int16), want.view(torch.int16)), (fused, lead)
            if tokens > limit:
                assert torch.equal(got, torch.nn.functional.linear(x, w, bias))
    ew.check()


def _region(blob: torch.Tensor, address: int, nbytes: int) -> torch.Tensor:
    return blob[address - blob.data_ptr():][:nbytes]


@pytest.mark.parametrize("mode", list(exec_mode.LAYOUTS))
@pytest.mark.parametrize("fused", list(FUSED))
def test_packed_from_bf16_equals_the_group_transcode(qwen2, fused, mode):
    """A layer's fused BF16 weight packed on the GPU (exec_mode.pack_bf16, as the vLLM plugin
    packs a tensor-parallel rank's slice): its blobs (and compact decode tables) byte for byte
    the group transcode's for the same members, and its products those of the transcoded
    layer."""
    folder, ref = qwen2
    layout = exec_mode.LAYOUTS[mode]
    ew, w, bias = layer_weight(folder, ref, FUSED[fused], layout=layout)
    members = list(torch.split(w.detach(), ew.row_counts))
    blob, mats = exec_mode.pack_bf16(members, "test", layout)
    packed = exec_mode.ExecWeight(blob, mats, "test")
    assert packed.shape == ew.shape and packed.layout is layout
    for mine, theirs in zip(mats, ew.mats):
        assert (mine.rows, mine.cols, mine.bytes) == (theirs.rows, theirs.cols, theirs.bytes)
        assert torch.equal(_region(blob, mine.d_blob, mine.bytes),
                           _region(ew.blob, theirs.d_blob, theirs.bytes))
        if layout is exec_mode.COMPACT:
            assert mine.stream_bits == theirs.stream_bits
            table = _capi.COMPACT_TABLE_BYTES
            assert torch.equal(_region(blob, mine.d_table, table),
                               _region(ew.blob, theirs.d_table, table))
        else:
            assert mine.n_exceptions == theirs.n_exceptions
    assert torch.equal(packed.decode().view(torch.int16), w.view(torch.int16))
    x = torch.randn(5, w.shape[1], device="cuda").to(torch.bfloat16)
    assert torch.equal(packed.linear(x, bias).view(torch.int16),
                       ew.linear(x, bias).view(torch.int16))
    packed.check()


def test_packed_from_bf16_ragged_and_exceptional():
    """Ragged shapes and exponents far outside any window (every exception path), packed from
    BF16 into each layout and decoded back bit for bit, NaN payloads, infinities, signed zeros and subnormals
    included; a CPU tensor is refused."""
    gen = torch.Generator(device="cuda").manual_seed(5)
    shapes = [(1, 1), (3, 7), (129, 257), (100, 4096 + 3)]
    weights = []
    for rows, cols in shapes:
        bits = torch.randint(-2**15, 2**15, (rows, cols), dtype=torch.int32, device="cuda",
                             generator=gen).to(torch.int16)
        normal = (torch.randn(rows, cols, device="cuda", generator=gen) * 0.02).to(torch.bfloat16)
        pick = torch.rand(rows, cols, device="cuda", generator=gen) < 0.1
        w = torch.where(pick, bits, normal.view(torch.int16))
        flat = w.view(-1)
        # NaNs with payloads, +-Inf, +-0, subnormals, as 16-bit patterns.
        patterns = [0x7fc1, 0xffc0, 0x7f80, 0xff80, 0x0000, 0x8000, 0x0001, 0x8001]
        specials = torch.tensor([p - 2**16 if p >= 2**15 else p for p in patterns],
                                dtype=torch.int16, device="cuda")
        flat[:min(flat.numel(), specials.numel())] = specials[:flat.numel()]
        weights.append(w.view(torch.bfloat16))
    for layout in exec_mode.LAYOUTS.values():
        blob, mats = exec_mode.pack_bf16(weights, "test", layout)
        assert [(m.rows, m.cols) for m in mats] == shapes
        for w, m in zip(weights, mats):
            ew = exec_mode.ExecWeight(blob, [m], "test")
            assert torch.equal(ew.decode().view(torch.int16), w.view(torch.int16)), layout.mode
            ew.check()
        with pytest.raises(ValueError, match="CUDA"):
            exec_mode.pack_bf16([weights[0].cpu()], "test", layout)


@pytest.mark.parametrize("mode", list(exec_mode.LAYOUTS))
def test_exec_weight_traced_and_captured(qwen2, mode):
    """Through the custom op under torch.compile (fullgraph) and replayed in a CUDA graph."""
    folder, ref = qwen2
    ew, w, bias = layer_weight(folder, ref, FUSED["qkv"], layout=exec_mode.LAYOUTS[mode])
    bias = bias.detach()  # inference, as in a serving engine: no autograd through the op
    key = coded.weight_key("test", "qkv", mode)
    exec_mode.register_weight(key, ew)
    try:
        # As a serving engine traces it: the key a constant, the token count symbolic.
        f = torch.compile(lambda x: torch.ops.df11.exec_weight_linear(x, bias, key) * 2,
                          fullgraph=True)
        for tokens in (1, 5, 16, 40):
            x = torch.randn(tokens, w.shape[1], device="cuda").to(torch.bfloat16)
            torch._dynamo.mark_dynamic(x, 0)
            want = exec_mode.reference_linear(x, w, bias, exec_mode.fused_max_tokens(mode)) * 2
            assert torch.equal(f(x), want), tokens
        x = torch.randn(3, w.shape[1], device="cuda").to(torch.bfloat16)
        graph, stream = torch.cuda.CUDAGraph(), torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            torch.ops.df11.exec_weight_linear(x, bias, key)  # warm-up off the capture
            with torch.cuda.graph(graph, stream=stream):
                y = torch.ops.df11.exec_weight_linear(x, bias, key)
        torch.cuda.current_stream().wait_stream(stream)
        x.copy_(torch.randn(3, w.shape[1], device="cuda").to(torch.bfloat16))
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(y, exec_mode.reference_linear(x, w, bias,
                                                         exec_mode.fused_max_tokens(mode)))
        ew.check()
    finally:
        exec_mode.unregister_weight(key)


def captured(fn):
    """(a CUDA graph of fn(), its outputs): fn run once on a side stream, then captured there."""
    graph, stream = torch.cuda.CUDAGraph(), torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        fn()
        with torch.cuda.graph(graph, stream=stream):
            out = fn()
    torch.cuda.current_stream().wait_stream(stream)
    return graph, out


def spans_weight(folder, groups, parts, shape, block):
    """The decode mode's SpansWeight of `parts` of block `block`, of a group uploaded once to
    GPU 0 (kept in `groups`, by index)."""
    members = []
    for p in parts:
        sub = "self_attn" if p in ("q_proj", "k_proj", "v_proj", "o_proj") else "mlp"
        members.append(folder.find_tensor(f"model.layers.{block}.{sub}.{p}.weight"))
    g, spans, why = coded.layer_spans(folder, members, shape)
    assert g is not None, why
    if g not in groups:
        groups[g] = coded.GpuGroup(folder, g, torch.device("cuda", 0))
    return coded.SpansWeight(groups[g], spans, shape)


def test_spans_weight_decodes_each_layer_and_captures(qwen2):
    """Decode mode's weights (coded.SpansWeight, the vLLM plugin's mode "decode"): each layer's
    members, in the layer's order, decode from the block's group bit for bit, eagerly and
    through torch.ops.df11.decode_weight replayed in a CUDA graph."""
    folder, ref = qwen2
    device = torch.device("cuda", 0)
    groups = {}
    for fused, parts in FUSED.items():
        _, w, _ = layer_weight(folder, ref, parts)
        sw = spans_weight(folder, groups, parts, tuple(w.shape), block=1)
        got = sw.decode()
        sw.group.check()
        assert torch.equal(got.view(torch.int16), w.view(torch.int16)), fused
        key = coded.weight_key("test", fused, "spans")
        coded.register_weight(key, sw)
        try:
            x = torch.zeros(2, w.shape[1], dtype=torch.bfloat16, device=device)
            graph, y = captured(lambda: torch.ops.df11.decode_weight(x, key))
            y.zero_()
            graph.replay()
            torch.cuda.synchronize()
            assert torch.equal(y.view(torch.int16), w.view(torch.int16)), fused
        finally:
            coded.unregister_weight(key)


@pytest.mark.parametrize("keep", [True, False])
def test_decoded_tensors_on_the_gpu_equal_the_cpus(qwen2, keep):
    """The vLLM loader's GPU decode (coded.decoded_tensors with GpuUploads): every tensor
    bit for bit what the CPU decoder gives, the groups kept for the layers only if asked."""
    folder, _ = qwen2
    device = torch.device("cuda", 0)
    uploads = coded.GpuUploads(device, keep)
    want = dict(coded.decoded_tensors(folder))
    got = dict(coded.decoded_tensors(folder, uploads))
    assert set(got) == set(want)
    for name, t in want.items():
        g = got[name]
        grouped = folder.tensor_group(folder.find_tensor(name)) is not None
        assert g.device.type == ("cuda" if grouped else "cpu"), name
        assert g.dtype == t.dtype and g.shape == t.shape, name
        assert torch.equal(g.cpu().view(torch.uint8), t.view(torch.uint8)), name
    assert len(uploads.groups) == (folder.group_count() if keep else 0)


def test_gpu_load_refuses_a_corrupt_folder(qwen2, tmp_path):
    """What the vLLM loader checks on the GPU path: a stream that does not decode raises as
    its group is decoded, and a flipped sign/mantissa byte (which decodes, to another weight)
    is caught by the stored checksums (decoders.StoredChecks); each names the file and group."""
    from df11.decoders import StoredChecks
    folder, _ = qwen2
    device = torch.device("cuda", 0)
    bad = models.corrupt_copy(folder.path, str(tmp_path / "gaps"),
                              "model.layers.1.output_positions",
                              models.bump_last_output_position)
    with pytest.raises(_capi.Df11Error) as e:
        with _capi.Model(bad) as f:
            for _ in coded.decoded_tensors(f, coded.GpuUploads(device, True)):
                pass
    assert "model.safetensors" in str(e.value) and "'model.layers.1'" in str(e.value)

    def flip(d):
        d[len(d) // 2] ^= 0x40
    bad = models.corrupt_copy(folder.path, str(tmp_path / "flip"),
                              "model.layers.1.sign_mantissa", flip)
    with _capi.Model(bad) as f:
        checks = StoredChecks(f, list(range(f.group_count())))
        try:
            for _ in coded.decoded_tensors(f, coded.GpuUploads(device, True)):
                pass
            with pytest.raises(_capi.Df11Error) as e:
                checks.join()
        finally:
            checks.wait()
    assert e.value.status == "corrupt_data"
    assert "model.safetensors" in str(e.value) and "model.layers.1" in str(e.value)


@pytest.mark.parametrize("family", ["gemma3", "qwen3", "llama"])
def test_spans_linear_equals_bf16_linear_in_a_cuda_graph(tmp_path_factory, family):
    """F.linear on decode mode's weight (torch.ops.df11.decode_weight) against F.linear on the
    BF16 weight, bit for bit, at 1-8 tokens, eagerly and both captured in one CUDA graph and
    replayed: every layer of the family's tiny model as vLLM fuses them."""
    work = tmp_path_factory.mktemp("graph")
    bf16_dir, df11_dir = models.llm_folders(work, family)
    folder, ref = _capi.Model(df11_dir), models.bf16_llm(bf16_dir, "cuda")
    device = torch.device("cuda", 0)
    groups, keys = {}, []
    gen = torch.Generator(device="cuda").manual_seed(1)
    try:
        for fused, parts in FUSED.items():
            _, w, _ = layer_weight(folder, ref, parts, block=0)
            key = coded.weight_key("test-graph", family, fused)
            coded.register_weight(key, spans_weight(folder, groups, parts, tuple(w.shape), 0))
            keys.append(key)
            for m in (1, 2, 3, 8):
                x = torch.randn(m, w.shape[1], generator=gen, device=device).to(torch.bfloat16)
                want = torch.nn.functional.linear(x, w)
                got = torch.nn.functional.linear(x, torch.ops.df11.decode_weight(x, key))
                assert torch.equal(got.view(torch.int16), want.view(torch.int16)), (fused, m)
                graph, (g_want, g_got) = captured(lambda: (
                    torch.nn.functional.linear(x, w),
                    torch.nn.functional.linear(x, torch.ops.df11.decode_weight(x, key))))
                g_want.zero_()
                g_got.zero_()
                graph.replay()
                torch.cuda.synchronize()
                assert torch.equal(g_want.view(torch.int16), want.view(torch.int16)), (fused, m)
                assert torch.equal(g_got.view(torch.int16), want.view(torch.int16)), (fused, m)
    finally:
        for key in keys:
            coded.unregister_weight(key)
