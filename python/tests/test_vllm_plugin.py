"""The vLLM plugin's parts that run without a GPU: detection of DF11 folders, the rows under
which a layer's members decode (coded.row_elements / span_rows), the CPU decode by original
name that vLLM's loader is fed, and the errors. Where vLLM is installed, also its registration,
vLLM's own detection (ModelConfig), and vLLM's model classes of the interop suite's families
built on the CPU and loaded from DF11 folders (vllm_cpu_models.py), with the plugin's plans.
gpu/vllm_check.sh runs the GPU side against vLLM serving BF16."""
import importlib.util
import json
import os
import subprocess
import sys

import pytest
import torch

import df11
import models
from df11 import _capi, coded
from df11 import vllm as df11_vllm

HAVE_VLLM = importlib.util.find_spec("vllm") is not None
if not HAVE_VLLM and os.environ.get("DF11_REQUIRE_VLLM"):
    # CI's vLLM step (.ci/run) sets it: a missing vLLM fails there instead of skipping.
    raise ImportError("DF11_REQUIRE_VLLM is set but vLLM is not importable")
# vLLM's Gemma 3 (multimodal) imports transformers' Gemma 3 image processor, which needs
# torchvision: the multimodal jobs run where it is installed (and must, in CI's vLLM step).
HAVE_TORCHVISION = importlib.util.find_spec("torchvision") is not None
if not HAVE_TORCHVISION and os.environ.get("DF11_REQUIRE_VLLM"):
    raise ImportError("DF11_REQUIRE_VLLM is set but torchvision is not importable")
MULTIMODAL = "gemma3-vision"  # models.save_gemma3_vision, in the layout of Google's checkpoints
# models.save_vision_language's families that vLLM 0.24 builds from such a tiny checkpoint.
VISION_LANGUAGE = ("qwen2_5_vl", "qwen3_vl", "idefics3")
# models.ARCHITECTURES' MoE models that vLLM 0.24 builds on the CPU from such a checkpoint
# (Nemotron-H's experts without a gate are built on CUDA and ROCm only).
MOE_ARCHITECTURES = ("mixtral", "olmoe", "granitemoe", "qwen3_next")
# models.ARCHITECTURES' other models that vLLM 0.24 builds on the CPU from such a checkpoint:
# GPT-2 (Conv1D weights, which vLLM's loader transposes), GPT-NeoX (its fused query_key_value
# regrouped by vLLM's loader), Phi, StarCoder 2, Cohere, Falcon-H1 (Mamba mixers beside
# attention) and Llama 4 (q and k permuted by vLLM's loader; MoE).
OTHER_ARCHITECTURES = ("gpt2", "gpt_neox", "phi", "starcoder2", "cohere", "falcon_h1",
                       "llama4_text")
ARCHITECTURE_MODELS = MOE_ARCHITECTURES + OTHER_ARCHITECTURES


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    work = tmp_path_factory.mktemp("vllm")
    bf16_dir, df11_dir = str(work / "bf16"), str(work / "df11")
    model = models.build_llm("llama")
    model.save_pretrained(bf16_dir)
    df11.compress(model, df11_dir)
    return bf16_dir, df11_dir


def config(folder):
    with open(os.path.join(folder, "config.json")) as f:
        return json.load(f)


def check_embeddings(got, bf16_dir):
    """A report's embedding entries (vllm_cpu_models.py): the input embedding has df11's method
    and is coded, with the BF16 lookup's bits, unless the model's head is tied to it."""
    from transformers import AutoConfig
    tied = AutoConfig.from_pretrained(bf16_dir).get_text_config().tie_word_embeddings
    assert got["embedding_methods"] == ["DF11EmbeddingMethod"], got["embedding_methods"]
    assert got["embeddings_coded"] == (0 if tied else 1), (tied, got["embeddings_coded"])
    assert got["embeddings_differ"] == [], got["embeddings_differ"]


def test_detects_df11_and_official_folders(llama):
    bf16_dir, df11_dir = llama
    official = os.path.join(models.FIXTURES, "llama", "official")
    for folder in (df11_dir, official):
        assert df11_vllm.is_df11_config(config(folder))
    # df11's config.json names the method itself (left as it is); the official one does not.
    assert config(df11_dir)["quantization_config"] == {"quant_method": "df11"}
    assert df11_vllm.quantization_config(config(df11_dir)) is None
    assert df11_vllm.quantization_config(config(official)) == {"quant_method": "df11"}
    assert not df11_vllm.is_df11_config(config(bf16_dir))
    assert df11_vllm.quantization_config(config(bf16_dir)) is None


def test_quantization_config_keeps_df11_and_refuses_another_method():
    base = {"dfloat11_config": {"version": "0.5.0"}}
    assert df11_vllm.quantization_config(dict(base, quantization_config={"quant_method": "DF11"})) \
        is None  # already says df11: left as it is
    with pytest.raises(ValueError, match="quant_method 'gptq'"):
        df11_vllm.quantization_config(dict(base, quantization_config={"quant_method": "gptq"}))
    assert df11_vllm.quantization_config({"quantization_config": {"quant_method": "gptq"}}) is None


def test_package_imports_without_vllm():
    """df11 and df11.vllm import where vLLM is missing; register() then says what is missing."""
    code = ("import sys; sys.modules['vllm'] = None\n"
            "import df11, df11.vllm\n"
            "try:\n    df11.vllm.register()\n"
            "except ImportError as e:\n    print('ImportError:', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    assert "vLLM is not installed" in out.stdout


def _spans_of(whole, spans):
    return torch.cat([whole[o:o + n] for o, n in spans])


def test_decoded_tensors_equal_the_bf16_checkpoint(llama):
    from safetensors.torch import load_file
    bf16_dir, df11_dir = llama
    want = load_file(os.path.join(bf16_dir, "model.safetensors"))
    with _capi.Model(df11_dir) as folder:
        got = dict(coded.decoded_tensors(folder))
    assert set(got) == set(want)
    for name, t in want.items():
        assert got[name].dtype == t.dtype and torch.equal(got[name], t), name


def test_decoded_tensors_of_an_official_sharded_folder():
    from safetensors.torch import load_file
    fixture = os.path.join(models.FIXTURES, "llama")
    want = load_file(os.path.join(fixture, "bf16", "model.safetensors"))
    with _capi.Model(os.path.join(fixture, "official")) as folder:
        got = dict(coded.decoded_tensors(folder))
    assert set(want) <= set(got)
    for name, t in want.items():
        assert torch.equal(got[name], t), name


@pytest.mark.parametrize("tensor, how, status", [
    ("model.layers.1.output_positions", models.bump_last_output_position, None),
    ("model.layers.1.sign_mantissa", lambda d: d.__setitem__(len(d) // 2, d[len(d) // 2] ^ 0x40),
     "corrupt_data"),
])
def test_corrupt_folder_is_refused_naming_file_and_group(llama, tmp_path, tensor, how, status):
    _, df11_dir = llama
    bad = models.corrupt_copy(df11_dir, str(tmp_path / "bad"), tensor, how)
    with pytest.raises(df11.Df11Error) as e:
        with _capi.Model(bad) as folder:
            for _ in coded.decoded_tensors(folder):
                pass
    assert "model.safetensors" in str(e.value) and "'model.layers.1'" in str(e.value)
    if status:
        assert e.value.status == status


def test_weight_key_is_stable_and_distinct():
    a = coded.weight_key("/m", "model.layers.0.self_attn.qkv_proj")
    assert a == coded.weight_key("/m", "model.layers.0.self_attn.qkv_proj")
    assert a != coded.weight_key("/m", "model.layers.0.self_attn.o_proj")
    assert a != coded.weight_key("/n", "model.layers.0.self_attn.qkv_proj")
    assert 0 <= a < 1 << 56


def test_decode_weight_op_is_registered_with_a_fake():
    from torch._subclasses.fake_tensor import FakeTensorMode
    key = coded.weight_key("test", "fake")
    coded.register_weight(key, coded.SpansWeight(None, [(0, 15)], (3, 5)))
    try:
        with FakeTensorMode() as mode:
            x = mode.from_tensor(torch.empty(2, 5, dtype=torch.bfloat16))
            w = torch.ops.df11.decode_weight(x, key)
        assert w.shape == (3, 5) and w.dtype == torch.bfloat16
    finally:
        coded.unregister_weight(key)


class HostGroup:
    """A GpuGroup stand-in on the CPU: decode_spans copies the spans of `weights` (a BF16
    tensor) into `out`, and counts its calls (one per launch on a GPU)."""

    def __init__(self, weights: torch.Tensor):
        self.weights = weights.reshape(-1)
        self.device = torch.device("cpu")
        self.launches = 0

    def decode_spans(self, offsets, counts, n, out):
        self.launches += 1
        parts = [self.weights[offsets[i]:offsets[i] + counts[i]] for i in range(n)]
        out.view(-1).copy_(torch.cat(parts))


def chained_block(seed=0):
    """A group coding o (8 x 16), gate and up (24 x 16 each, stored apart) and down (16 x 24),
    the SpansWeights of o, gate_up and down over it, and what each must decode to."""
    g = torch.Generator().manual_seed(seed)
    sizes = {"down": 16 * 24, "gate": 24 * 16, "o": 8 * 16, "other": 128, "up": 24 * 16}
    w = (torch.randn(sum(sizes.values()), generator=g) * 0.02).to(torch.bfloat16)
    at, spans = 0, {}
    for name, n in sizes.items():
        spans[name] = (at, n)
        at += n
    group = HostGroup(w)
    weights = [coded.SpansWeight(group, [spans["o"]], (8, 16)),
               coded.SpansWeight(group, [spans["gate"], spans["up"]], (48, 16)),
               coded.SpansWeight(group, [spans["down"]], (16, 24))]
    want = [torch.cat([w[a:a + n] for a, n in sw.spans]).view(sw.shape) for sw in weights]
    return group, weights, want


def same(a, b):
    return a.shape == b.shape and torch.equal(a.view(torch.int16), b.view(torch.int16))


def test_spans_chain_decodes_its_weights_in_one_launch():
    group, weights, want = chained_block()
    assert coded.SpansChain.eligible(weights) is None
    chain = coded.SpansChain(weights)
    for step in range(3):
        got = [w.decode() for w in weights]
        assert all(same(a, b) for a, b in zip(got, want))
        assert group.launches == step + 1  # one launch per pass, not three
        # each weight starts 256-byte aligned within the one tensor, as a fresh tensor does
        assert all((t.data_ptr() - got[0].data_ptr()) % 256 == 0 for t in got)
    assert chain.enabled and chain._held == [None, None, None]  # nothing held between passes


def test_spans_chain_out_of_order_decodes_alone_and_stops_chaining():
    group, weights, want = chained_block(1)
    chain = coded.SpansChain(weights)
    assert same(weights[1].decode(), want[1])  # before its head: decoded alone
    assert not chain.enabled and group.launches == 1
    got = [w.decode() for w in weights]  # from now on each decodes alone
    assert all(same(a, b) for a, b in zip(got, want)) and group.launches == 4

    # Another coded weight decoded between two of the chain's: the held part is not used.
    group, weights, want = chained_block(2)
    chain = coded.SpansChain(weights)
    other = coded.SpansWeight(group, [(0, 16)], (1, 16))
    assert same(weights[0].decode(), want[0])
    other.decode()
    assert same(weights[1].decode(), want[1]) and not chain.enabled
    assert same(weights[2].decode(), want[2]) and group.launches == 4


def test_spans_chain_eligibility():
    _, weights, _ = chained_block()
    assert "fewer than two" in coded.SpansChain.eligible(weights[:1])
    other_group, others, _ = chained_block(3)
    assert "several groups" in coded.SpansChain.eligible([weights[0], others[1]])
    g = weights[0].group
    odd = coded.SpansWeight(g, [(0, 9)], (3, 3))  # 18 bytes: the next weight would be misaligned
    assert "256 bytes" in coded.SpansChain.eligible([odd, weights[2]])
    assert coded.SpansChain.eligible([weights[2], odd]) is None  # the last may be any size
    many = [coded.SpansWeight(g, [(0, 128)] * 3, (3, 128)) for _ in range(3)]
    assert "more than 8 spans" in coded.SpansChain.eligible(many)
    coded.SpansChain(weights)
    assert "another chain" in coded.SpansChain.eligible(weights)


class HostExperts(HostGroup):
    """HostGroup with the selected-rows decode: rows of `row_elements` whose mask is non-zero
    are copied into `out`, the others left as they are (what the GPU's launch does)."""

    def decode_selected_rows(self, mask, row_elements, expected, out):
        self.launches += 1
        self.expected = expected
        rows = self.weights.view(-1, row_elements)
        flat = out.view(-1, row_elements)
        for r in torch.nonzero(mask).reshape(-1).tolist():
            flat[r].copy_(rows[r])


def experts_block(experts=6, rows=4, cols=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    w = (torch.randn(experts, rows, cols, generator=g) * 0.02).to(torch.bfloat16)
    return w, HostExperts(w)


def test_experts_decode_the_routed_experts_and_leave_the_others():
    w, group = experts_block()
    experts = coded.ExpertsWeight(group, tuple(w.shape), expected=2)
    assert experts.experts == 6 and experts.row_elements == 32 and experts.expected == 2
    topk_ids = torch.tensor([[4, 1], [1, 5], [4, 4]], dtype=torch.int32)  # tokens' top 2
    mask = coded.ExpertsWeight.routed_mask(topk_ids, 6)
    assert mask.dtype == torch.int32 and mask.tolist() == [0, 1, 0, 0, 1, 1]
    nan = torch.full_like(w, float("nan"))
    out = nan.clone()
    experts.decode_into(out, mask)
    assert group.launches == 1 and group.expected == 2
    for e in range(6):
        assert same(out[e], w[e] if e in (1, 4, 5) else nan[e]), e
    experts.decode_into(out)  # no mask: every expert, in one launch
    assert same(out, w) and group.launches == 2
    experts.decode_into(out, mask, picks=100)  # many tokens: a launch sized for more rows
    assert group.launches == 3 and group.expected == 3 and same(out, w)
    assert coded.ExpertsWeight(group, tuple(w.shape), expected=99).expected == 6
    with pytest.raises(ValueError, match="experts"):
        coded.ExpertsWeight(group, (_capi.CUDA_MAX_SELECTED_ROWS + 1, 1), 1)


def test_experts_launch_sized_for_half_the_uniform_routings_experts():
    # 128 experts, top 8 (Qwen3-30B-A3B): T tokens' 8T choices name 128 (1 - (127/128)^8T)
    # distinct experts on average; the launch is sized for half of that, at least the top k.
    experts = coded.ExpertsWeight(object(), (128, 4), expected=8)
    sized = {t: experts.launch_rows(8 * t) for t in (1, 2, 4, 8, 16, 32, 512)}
    assert sized == {1: 8, 2: 8, 4: 14, 8: 25, 16: 41, 32: 55, 512: 64}
    assert experts.launch_rows(None) == 8 and experts.launch_rows(0) == 8
    one = coded.ExpertsWeight(object(), (1, 4), expected=1)
    assert one.launch_rows(1000) == 1


needs_vllm = pytest.mark.skipif(not HAVE_VLLM, reason="vLLM is not installed")


@needs_vllm
def test_layers_of_a_mostly_unused_group_are_coded_apart(monkeypatch):
    """attach's last step (vllm_plugin._code_sparse_groups_apart): the layers served from spans
    of a group they use less than half of (an MoE block's, mostly experts coded apart) are each
    coded again alone, checked bit for bit, and the group is no longer held; the layers of a
    group they use most of keep it; a group whose layers cannot all be coded again is kept."""
    from df11 import _tools, vllm_plugin
    encoded = []

    def encode(weight, name, what):
        if "nan" in name:
            raise _capi.Df11Error.named("uncodable", f"{what}: group '{name}': exponent 255")
        group = HostGroup(weight.clone())
        group.n_elements = weight.numel()
        encoded.append(name)
        return group

    monkeypatch.setattr(coded.GpuGroup, "encoded", staticmethod(encode))
    HostGroup.check = lambda self: None
    monkeypatch.setattr(_tools, "has_cuda_encoder", lambda: True)
    g = torch.Generator().manual_seed(9)
    root, keys, state = torch.nn.Module(), [], vllm_plugin._Attach("f", "decode",
                                                                   torch.device("cpu"))
    groups = {}
    # "moe": 2 layers using 96 of 1000 weights; "dense": 2 layers using 896 of 1000; "stuck":
    # sparse too, but one of its layers cannot be coded again.
    for gname, used in (("moe", (32, 64)), ("dense", (400, 496)), ("stuck", (32, 64))):
        w = (torch.randn(1000, generator=g) * 0.02).to(torch.bfloat16)
        group = HostGroup(w)
        group.n_elements = 1000
        groups[gname] = group
        state.groups[id(group)] = group
        at = 100
        for i, n in enumerate(used):
            layer = torch.nn.Module()
            name = f"{gname}{i}" + ("nan" if gname == "stuck" and i else "")
            layer.df11_key = coded.weight_key("sparse-test", name)
            coded.register_weight(layer.df11_key, coded.SpansWeight(group, [(at, n)], (n // 8, 8)))
            layer.want = w[at:at + n].view(n // 8, 8)
            root.add_module(name, layer)
            keys.append(layer.df11_key)
            at += n
    try:
        assert vllm_plugin._code_sparse_groups_apart(root, state) == 2
        assert sorted(encoded) == ["moe0.weight", "moe1.weight", "stuck0.weight"]
        assert id(groups["moe"]) not in state.groups
        assert id(groups["dense"]) in state.groups and id(groups["stuck"]) in state.groups
        for name, layer in root.named_children():
            weight = coded.registered_weight(layer.df11_key)
            apart = name.startswith("moe")
            assert (weight.group is not groups[name.rstrip("01nan")]) == apart, name
            assert same(weight.decode(), layer.want), name
            if apart:
                assert id(weight.group) in state.groups
    finally:
        del HostGroup.check
        for k in keys:
            coded.unregister_weight(k)


@needs_vllm
def test_moe_layers_decode_their_routed_experts_into_shared_buffers():
    """df11.vllm_moe: each MoE layer's weights are views of one buffer per weight kind, which a
    larger layer grows (the layers attached before it then view the new one); a step decodes the
    experts its routing names (all of them without a routing, or with an expert map) into them."""
    from df11 import vllm_moe
    buffers = vllm_moe.ExpertBuffers()
    device = torch.device("cpu")
    layers = []
    for shape in ((4, 6, 8), (6, 6, 8)):
        layer = torch.nn.Module()
        w, group = experts_block(*shape, seed=len(layers))
        layer.w13_weight = torch.nn.Parameter(w.clone(), requires_grad=False)
        out = buffers.view(layer, "w13_weight", tuple(w.shape), device)
        vllm_moe._set(layer, "w13_weight", out)
        assert "w13_weight" not in dict(layer.named_parameters())
        layer.df11_experts = {"w13_weight": coded.ExpertsWeight(group, tuple(w.shape), 2)}
        layer.df11_num_experts = shape[0]
        layer.want, layer.group = w, group
        layers.append(layer)
    small, large = layers
    assert buffers.nbytes() == 2 * 6 * 6 * 8
    assert small.w13_weight.shape == (4, 6, 8) and large.w13_weight.shape == (6, 6, 8)
    assert small.w13_weight.data_ptr() == large.w13_weight.data_ptr()  # one buffer, re-pointed
    vllm_moe.decode_experts(small, torch.tensor([[3, 0]]))
    assert same(small.w13_weight[3], small.want[3]) and same(small.w13_weight[0], small.want[0])
    assert small.group.expected == 2
    vllm_moe.decode_experts(small, torch.zeros(50, 2, dtype=torch.int64))  # 100 choices
    assert small.group.expected == small.df11_experts["w13_weight"].launch_rows(100) == 2
    vllm_moe.decode_experts(large, None)  # every expert
    assert same(large.w13_weight, large.want) and large.group.launches == 1
    large.expert_map = torch.arange(6)  # expert parallelism: every expert, not the routing
    vllm_moe.decode_experts(large, torch.tensor([[1, 2]]))
    assert same(large.w13_weight, large.want) and large.group.launches == 2
    assert buffers.layers(device, "w13_weight") == [small, large]
    buffers.forget(small)
    assert buffers.layers(device, "w13_weight") == [large]
    del layers, large, layer  # a dropped model is not kept alive by the buffers
    import gc
    gc.collect()
    assert buffers.layers(device, "w13_weight") == []
    # Expert load balancing would move coded experts between ranks: refused by vLLM.
    assert vllm_moe.DF11MoEMethod.supports_eplb.fget(None) is False


class HostRows:
    """A RowsDecoder stand-in on the CPU over a HostGroup: a lookup copies the rows its ids
    name (its group's `flip` rows come out with their first weight's low bit flipped)."""

    def __init__(self, group, name, row_elements, device, lock):
        self.weights = group.weights.view(-1, row_elements)
        self.row_elements = row_elements
        self.flip = group.flip

    def lookup(self, ids):
        out = self.weights[ids.reshape(-1)].clone()
        for i, row in enumerate(ids.reshape(-1).tolist()):
            if row in self.flip:
                out[i, 0] = (out[i, 0].view(torch.int16) ^ 1).view(torch.bfloat16)
        return out

    def check(self):
        pass


@needs_vllm
def test_input_embedding_is_df11s_and_the_head_vllms():
    """DF11Config gives vLLM's input embedding (VocabParallelEmbedding) df11's method, which
    implements the lookup as vLLM requires of an embedding's method, and leaves the head
    (ParallelLMHead, a subclass) to vLLM's own."""
    from vllm.model_executor.layers.vocab_parallel_embedding import (ParallelLMHead,
                                                                     VocabParallelEmbedding)
    from vllm.model_executor.layers.quantization.base_config import (
        method_has_implemented_embedding)
    from df11 import vllm_plugin
    config = vllm_plugin.DF11Config()
    emb = VocabParallelEmbedding.__new__(VocabParallelEmbedding)
    method = config.get_quant_method(emb, "model.embed_tokens")
    assert isinstance(method, vllm_plugin.DF11EmbeddingMethod)
    assert method_has_implemented_embedding(type(method))
    assert config.get_quant_method(ParallelLMHead.__new__(ParallelLMHead), "lm_head") is None


@needs_vllm
def test_input_embeddings_coded_where_no_head_reads_them(monkeypatch):
    """attach's _code_embeddings: an input embedding whose weight no head holds is coded, every
    row decoded and compared, its BF16 weight dropped, and its lookups (through
    torch.ops.df11.embed_rows) give the BF16 lookup's bits, as does its use as a head (apply);
    one a ParallelLMHead shares, or any when the config ties the head, keeps its weight; one
    whose rows decode to other values keeps its weight, with a warning. Its lookups are
    registered under a key stable across processes (coded.weight_key), as a Linear layer's."""
    from vllm.model_executor.layers.vocab_parallel_embedding import ParallelLMHead
    from df11 import _ops, _tools, vllm_plugin

    def encode(weight, name, what):
        group = HostGroup(weight.clone())
        group.plan = group
        group.nbytes = weight.numel()
        group.flip = {3} if "bad" in name else set()
        return group

    monkeypatch.setattr(coded.GpuGroup, "encoded", staticmethod(encode))
    monkeypatch.setattr(vllm_plugin, "RowsDecoder", HostRows)
    monkeypatch.setattr(_tools, "has_cuda_encoder", lambda: True)
    g = torch.Generator().manual_seed(5)

    def embedding(rows=40, hidden=16):
        layer = torch.nn.Module()
        layer.quant_method = vllm_plugin.DF11EmbeddingMethod()
        layer.num_embeddings_per_partition = rows
        layer.cpu_linear = torch.nn.functional.linear  # vLLM's CPU platform's GEMM
        w = (torch.randn(rows, hidden, generator=g) * 0.02).to(torch.bfloat16)
        layer.weight = torch.nn.Parameter(w, requires_grad=False)
        return layer, w.clone()

    def model():
        root = torch.nn.Module()
        (root.emb, want), (root.shared, _), (root.bad, _) = embedding(), embedding(), embedding()
        head = ParallelLMHead.__new__(ParallelLMHead)
        torch.nn.Module.__init__(head)
        head.weight = root.shared.weight
        root.head = head
        return root, want

    root, want = model()
    state = vllm_plugin._Attach("f", "decode", torch.device("cpu"))
    try:
        assert vllm_plugin._code_embeddings(root, state, tied=False) == 1
        assert "weight" not in root.emb._parameters
        # The key a compiled graph keeps: the same in every process that loads the folder.
        assert root.emb.df11_rows_key == coded.weight_key("f", "emb", "rows")
        assert root.shared.weight is root.head.weight and root.bad.weight is not None
        assert getattr(root.shared, "df11_rows_key", None) is None
        assert getattr(root.bad, "df11_rows_key", None) is None
        assert state.rows_bf16 == 2 * want.numel()
        ids = torch.tensor([[0, 39, 7], [7, 3, 12]])
        got = root.emb.quant_method.embedding(root.emb, ids)
        assert same(got, torch.nn.functional.embedding(ids, want))
        x = (torch.randn(2, 16, generator=g)).to(torch.bfloat16)
        assert same(root.emb.quant_method.apply(root.emb, x),
                    torch.nn.functional.linear(x, want))
    finally:
        _ops.unregister(getattr(root.emb, "df11_rows_key", -1))
    root, _ = model()
    assert vllm_plugin._code_embeddings(root, state, tied=True) == 0
    assert all(getattr(m, "df11_rows_key", None) is None for m in (root.emb, root.bad))
    # An engine serving LoRA adapters: vLLM's LoRA layer of each input embedding reads its
    # weight, so none is coded.
    root, _ = model()
    assert vllm_plugin._code_embeddings(root, state, tied=False, lora=True) == 0
    assert all(getattr(m, "df11_rows_key", None) is None and m.weight is not None
               for m in (root.emb, root.bad))


@needs_vllm
def test_chain_layers_chains_each_decoder_layers_output_and_mlp(monkeypatch):
    """With DF11_VLLM_DECODE_CHAINS=3, chain_layers finds o_proj, gate_up_proj and down_proj of
    each decoder layer (decode mode, one group) and chains them; by default (and with =2) only
    o_proj and gate_up_proj; with =0 it leaves every layer alone."""
    from df11 import vllm_plugin

    def model(seed):
        root = torch.nn.Module()
        keys = []
        for i in range(2):
            _, weights, _ = chained_block(seed + i)
            layer = torch.nn.Module()
            layer.self_attn, layer.mlp = torch.nn.Module(), torch.nn.Module()
            mods = [torch.nn.Module() for _ in weights]
            layer.self_attn.o_proj, layer.mlp.gate_up_proj, layer.mlp.down_proj = mods
            for m, w in zip(mods, weights):
                m.df11_key = coded.weight_key("chain-test", str(seed), str(i), str(id(m)))
                coded.register_weight(m.df11_key, w)
                keys.append(m.df11_key)
            root.add_module(f"l{i}", layer)
        return root, keys

    root, keys = model(10)
    try:
        monkeypatch.setenv(vllm_plugin.CHAINS_ENV, "0")
        assert vllm_plugin.chain_layers(root) == 0
        assert all(coded.registered_weight(k).chain is None for k in keys)
        monkeypatch.setenv(vllm_plugin.CHAINS_ENV, "3")
        assert vllm_plugin.chain_layers(root) == 2
        assert all(coded.registered_weight(k).chain is not None for k in keys)
        for via in (None, "2"):
            two, two_keys = model(30 if via is None else 40)
            keys += two_keys
            if via is None:
                monkeypatch.delenv(vllm_plugin.CHAINS_ENV, raising=False)
            else:
                monkeypatch.setenv(vllm_plugin.CHAINS_ENV, via)
            assert vllm_plugin.chain_layers(two) == 2
            chained = [coded.registered_weight(k).chain is not None for k in two_keys]
            assert chained == [True, True, False] * 2
            assert len(coded.registered_weight(two_keys[0]).chain.weights) == 2
        off, off_keys = model(20)
        keys += off_keys
        monkeypatch.setenv(vllm_plugin.CHAINS_ENV, "1")
        with pytest.raises(ValueError, match="DF11_VLLM_DECODE_CHAINS"):
            vllm_plugin.chain_layers(off)
    finally:
        for k in keys:
            coded.unregister_weight(k)


@needs_vllm
def test_chain_sets_codes_each_decoder_layers_chain_together(monkeypatch):
    """chain_sets names, per decoder layer, the weights that decode mode chains, where a load
    codes them itself (a tensor-parallel rank's slices): complete sets in CHAIN's order only, BF16
    on one device, each but the last a whole number of the group's aligned parts."""
    from df11 import vllm_plugin

    def plan(prefix, rows, cols, dtype=torch.bfloat16):
        layer = torch.nn.Module()
        layer.weight = torch.nn.Parameter(torch.zeros(rows, cols, dtype=dtype),
                                          requires_grad=False)
        return vllm_plugin.LayerPlan(prefix, layer, None, [], "coded on the GPU")

    names = {}
    for i, (o_rows, gu_dtype, with_gate_up) in enumerate([
            (64, torch.bfloat16, True),     # a full set
            (64, torch.bfloat16, False),    # no gate_up_proj: nothing to chain
            (63, torch.bfloat16, True),     # o_proj of 63 x 64 (8064 bytes): not aligned
            (64, torch.float16, True)]):    # gate_up_proj not BF16
        base = f"model.layers.{i}."
        names[base + "self_attn.o_proj.weight"] = plan(base + "self_attn.o_proj", o_rows, 64)
        if with_gate_up:
            names[base + "mlp.gate_up_proj.weight"] = plan(base + "mlp.gate_up_proj", 256, 64,
                                                           gu_dtype)
        names[base + "mlp.down_proj.weight"] = plan(base + "mlp.down_proj", 64, 128)
        names[base + "self_attn.qkv_proj.weight"] = plan(base + "self_attn.qkv_proj", 192, 64)
    monkeypatch.delenv(vllm_plugin.CHAINS_ENV, raising=False)
    assert vllm_plugin.chain_sets(names) == [
        ["model.layers.0.self_attn.o_proj.weight", "model.layers.0.mlp.gate_up_proj.weight"]]
    monkeypatch.setenv(vllm_plugin.CHAINS_ENV, "3")
    assert vllm_plugin.chain_sets(names) == [
        ["model.layers.0.self_attn.o_proj.weight", "model.layers.0.mlp.gate_up_proj.weight",
         "model.layers.0.mlp.down_proj.weight"]]
    monkeypatch.setenv(vllm_plugin.CHAINS_ENV, "0")
    assert vllm_plugin.chain_sets(names) == []


@needs_vllm
def test_vllm_detects_folders_without_flags(llama):
    """vLLM's ModelConfig, with the plugin registered, takes DF11 folders as quantized with
    df11 and BF16 folders as they are."""
    from vllm.engine.arg_utils import EngineArgs
    df11_vllm.register()
    bf16_dir, df11_dir = llama
    official = os.path.join(models.FIXTURES, "llama", "official")
    for folder, want in ((df11_dir, "df11"), (official, "df11"), (bf16_dir, None)):
        model_config = EngineArgs(model=folder, skip_tokenizer_init=True).create_model_config()
        assert model_config.quantization == want, folder


@needs_vllm
@pytest.mark.parametrize("family", models.FAMILIES)
def test_vllm_detects_every_familys_official_folder(family):
    """The official encoder's folder of each family of the interop suite is taken as quantized
    with df11 by vLLM's own config code (its architecture among vLLM's models), its BF16 model
    as it is: what gpu/vllm_check.sh's "families" case serves on a GPU."""
    from vllm.engine.arg_utils import EngineArgs
    df11_vllm.register()
    fixture = os.path.join(models.FIXTURES, family)
    for kind, want in (("official", "df11"), ("bf16", None)):
        model_config = EngineArgs(model=os.path.join(fixture, kind),
                                  skip_tokenizer_init=True).create_model_config()
        assert model_config.quantization == want, (family, kind)
        assert model_config.architectures, (family, kind)


class _CpuRuns:
    """vllm_cpu_models.py's reports for every job of this file, run in two processes (all the
    one-rank jobs in one, the tensor-parallel ones in a pair of ranks) at first use: vLLM's
    import and set-up take longer than a job."""

    def __init__(self, work):
        self.work, self.folders, self.reports = work, {}, {}

    def folder(self, family, kind):
        """(the family's BF16 fixture, its DF11 folder): the official encoder's committed one
        (`kind` "official") or df11's, compressed once for the file."""
        if family == MULTIMODAL or family in VISION_LANGUAGE or family in ARCHITECTURE_MODELS:
            if family not in self.folders:
                bf16_dir = str(self.work / f"{family}-bf16")
                if family == MULTIMODAL:
                    models.save_gemma3_vision(bf16_dir, "google")
                elif family in ARCHITECTURE_MODELS:
                    models.save_architecture(bf16_dir, next(
                        c for c in models.ARCHITECTURES if c[0] == family))
                else:
                    models.save_vision_language(bf16_dir, family)
                self.folders[family] = (bf16_dir, models.df11_compress(
                    bf16_dir, str(self.work / f"{family}-df11")))
            return self.folders[family]
        fixture = os.path.join(models.FIXTURES, family)
        bf16_dir = os.path.join(fixture, "bf16")
        if kind != "df11":
            return bf16_dir, os.path.join(fixture, kind)
        if family not in self.folders:
            from transformers import AutoModelForCausalLM
            folder = str(self.work / f"{family}-df11")
            df11.compress(AutoModelForCausalLM.from_pretrained(bf16_dir, dtype=torch.bfloat16),
                          folder)
            self.folders[family] = folder
        return bf16_dir, self.folders[family]

    def jobs(self, tp):
        if tp == 2:
            return [("tp", f, "df11", False) for f in models.FAMILIES]
        multimodal = ([("load", MULTIMODAL, "df11", False), ("layerwise", MULTIMODAL, "df11", True)]
                      + [("load", f, "df11", False) for f in VISION_LANGUAGE]
                      if HAVE_TORCHVISION else [])
        return ([("load", f, k, False) for f in models.FAMILIES for k in ("df11", "official")]
                + [("load", "llama", "official-modules", False)]
                + [("load", f, "df11", False) for f in ARCHITECTURE_MODELS]
                + [("layerwise", f, k, True) for f, k in LAYERWISE_CASES] + multimodal)

    def report(self, tp, what, family, kind):
        """The job's lines, one per rank (a list of dicts), running the batch if need be."""
        if tp not in self.reports:
            jobs = []
            for w, f, k, layerwise in self.jobs(tp):
                bf16_dir, folder = self.folder(f, k)
                jobs.append({"job": f"{w}/{f}/{k}", "df11": folder, "bf16": bf16_dir,
                             "layerwise": layerwise})
            path = self.work / f"jobs-tp{tp}.json"
            path.write_text(json.dumps(jobs))
            out = subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__),
                                                               "vllm_cpu_models.py"),
                                  str(path), str(tp)], capture_output=True, text=True,
                                 timeout=1800, env=dict(os.environ, HF_HUB_OFFLINE="1"))
            lines = {}
            for line in out.stdout.splitlines():
                if line.startswith("{"):
                    got = json.loads(line)
                    lines.setdefault(got["job"], []).append(got)
            self.reports[tp] = (out, lines)
        out, lines = self.reports[tp]
        got = sorted(lines.get(f"{what}/{family}/{kind}", []), key=lambda g: g["rank"])
        assert len(got) == tp, (out.returncode, out.stdout[-2000:], out.stderr[-3000:])
        for rank in got:
            assert "error" not in rank, rank["error"]
        return got


LAYERWISE_CASES = [(f, "df11") for f in models.FAMILIES] + [("llama", "official"),
                                                           ("qwen3moe", "official")]


@pytest.fixture(scope="module")
def cpu_runs(tmp_path_factory):
    return _CpuRuns(tmp_path_factory.mktemp("vllm-cpu"))


@needs_vllm
@pytest.mark.parametrize("kind", ["df11", "official"])
@pytest.mark.parametrize("family", models.FAMILIES)
def test_vllms_model_loads_the_folder_as_its_bf16_checkpoint(family, kind, cpu_runs):
    """vLLM's own model class for each family of the interop suite, built on the CPU with the
    plugin (vllm_cpu_models.py): fed the DF11 folder's tensors decoded on the CPU, every
    parameter equals, bit for bit, that of vLLM's model fed the BF16 checkpoint; every DF11
    Linear layer decodes from spans of one of the folder's groups to exactly its weight (what
    the GPU step compares), except a layer whose tensor the folder does not code (Qwen3-MoE's
    router in the official folder), which that step codes again; the input embedding, unless the
    head is tied to it, is coded (by a CPU stand-in for the GPU encoder) and looked up through
    df11's method with the BF16 lookup's bits."""
    bf16_dir, folder = cpu_runs.folder(family, kind)
    got, = cpu_runs.report(1, "load", family, kind)
    assert got["params"] > 0 and got["differ"] == [] and got["missing"] == [], got
    if got["moe_layers"]:  # fused MoE layers: df11's method, their experts filled layer-wise
        assert got["moe_methods"] == ["DF11MoEMethod"], got["moe_methods"]
        assert got["moe_meta_before"] == got["moe_layers"], got
    assert got["moe_layers"] == (2 if family == "qwen3moe" else 0), got["moe_layers"]
    assert got["spans_differ"] == [], got
    assert got["linear"] > 0 and got["from_groups"] + len(got["again"]) == got["linear"], got
    check_embeddings(got, bf16_dir)
    with _capi.Model(folder) as f:
        for prefix, why in got["again"]:
            t = f.find_tensor(prefix + ".weight")
            assert t is not None and f.tensor_group(t) is None, (prefix, why)


@needs_vllm
def test_vllms_model_loads_the_encoders_module_files(cpu_runs):
    """The official encoder's save_single_file=False output (each coded module with its other
    tensors in a file of its own, no index; tests/interop/fixtures/llama/official-modules):
    vLLM's loader reads every file of the folder, and its model holds BF16's parameters bit for
    bit, every Linear layer decoding from spans of the folder's groups."""
    got, = cpu_runs.report(1, "load", "llama", "official-modules")
    assert got["params"] > 0 and got["differ"] == [] and got["missing"] == [], got
    assert got["spans_differ"] == [] and got["again"] == [], got
    assert got["linear"] == got["from_groups"] > 0, got


@needs_vllm
@pytest.mark.skipif(not HAVE_TORCHVISION, reason="vLLM's Gemma 3 needs torchvision")
@pytest.mark.parametrize("how", ["load", "layerwise"])
def test_vllms_multimodal_model_loads_the_folder_as_its_bf16_checkpoint(how, cpu_runs):
    """vLLM's Gemma3ForConditionalGeneration, built on the CPU with the plugin, from a DF11
    folder of a Gemma 3 with its SigLIP vision tower named as Google's checkpoints name them
    (vLLM's mapper renames "model.language_model." and reads "language_model.model." as it is):
    every parameter equals that of vLLM's model fed the BF16 checkpoint, bit for bit, and every
    DF11 Linear layer of both towers decodes from spans of the folder's groups to exactly its
    weight, the vision tower's attention among them ("load": after vLLM's load_weights;
    "layerwise": each coded as vLLM's layer-wise loading fills it). The SigLIP MLPs, whose
    sizes vLLM quantizes with no method but bitsandbytes' and torchao's (not multiples of 64),
    are vLLM's own BF16 layers."""
    got, = cpu_runs.report(1, how, MULTIMODAL, "df11")
    assert got["params"] > 0 and got["differ"] == [] and got["missing"] == [], got
    assert got["spans_differ"] == [] and got["again"] == [], got
    if how == "load":
        assert got["linear"] == got["from_groups"] == 12, got  # 2 x (qkv, o, gate_up, down) + 2 x 2
        return
    coded_layers = {prefix for prefix, _ in got["coded_at_load"]}
    assert len(coded_layers) == 12 and got["left_at_load"] == [], got
    assert {f"vision_tower.vision_model.encoder.layers.{i}.self_attn.{m}"
            for i in (0, 1) for m in ("qkv_proj", "out_proj")} <= coded_layers


@needs_vllm
@pytest.mark.skipif(not HAVE_TORCHVISION, reason="vLLM's multimodal models need torchvision")
@pytest.mark.parametrize("family", VISION_LANGUAGE)
def test_vllms_vision_language_models_load_the_folder_as_their_bf16_checkpoint(family,
                                                                               cpu_runs):
    """vLLM's Qwen2.5-VL, Qwen3-VL and Idefics3, built on the CPU with the plugin from `df11
    compress`'s folder of a tiny model of each (models.save_vision_language): every parameter
    equals that of vLLM's model fed the BF16 checkpoint, bit for bit, and every DF11 Linear
    layer, the vision tower's too, decodes from spans of the folder's groups to exactly its
    weight."""
    got, = cpu_runs.report(1, "load", family, "df11")
    assert got["params"] > 0 and got["differ"] == [] and got["missing"] == [], got
    assert got["spans_differ"] == [] and got["again"] == [], got
    assert got["linear"] == got["from_groups"] > 8, got  # the text model's 8 and the tower's


@needs_vllm
@pytest.mark.parametrize("family", MOE_ARCHITECTURES)
def test_vllms_moe_models_load_the_folder_as_their_bf16_checkpoint(family, cpu_runs):
    """vLLM's Mixtral, OLMoE, GraniteMoE and Qwen3-Next (linear attention with MoE), built on
    the CPU with the plugin from `df11 compress`'s folder of a tiny model of each
    (models.ARCHITECTURES): every parameter equals that of vLLM's model fed the BF16
    checkpoint, bit for bit; every DF11 Linear layer decodes from spans of the folder's groups
    to exactly its weight; the experts of both MoE layers go through df11's MoE method, filled
    layer by layer from meta tensors (coded on the GPU at load there)."""
    got, = cpu_runs.report(1, "load", family, "df11")
    assert got["params"] > 0 and got["differ"] == [] and got["missing"] == [], got
    assert got["spans_differ"] == [] and got["again"] == [] and got["linear"] > 0, got
    assert got["moe_methods"] == ["DF11MoEMethod"], got["moe_methods"]
    assert got["moe_meta_before"] == got["moe_layers"] == 2, got


@needs_vllm
@pytest.mark.parametrize("family", OTHER_ARCHITECTURES)
def test_vllms_other_models_load_the_folder_as_their_bf16_checkpoint(family, cpu_runs):
    """vLLM's GPT-2, GPT-NeoX, Phi, StarCoder 2, Cohere, Falcon-H1 and Llama 4, built on the
    CPU with the plugin from `df11 compress`'s folder of a tiny model of each
    (models.ARCHITECTURES): every parameter equals that of vLLM's model fed the BF16
    checkpoint, bit for bit. Each DF11 Linear layer either decodes from spans of the folder's
    groups to exactly its weight, or is coded again from the weight vLLM's loader made (a
    weight it transposed, regrouped or permuted, or one whose members the folder holds apart)
    and decodes back to exactly that weight, as the GPU step codes it; the MoE layers' experts
    go through df11's MoE method."""
    got, = cpu_runs.report(1, "load", family, "df11")
    assert got["params"] > 0 and got["differ"] == [] and got["missing"] == [], got
    assert got["linear"] > 0, got
    assert got["encoded"] == len(got["again"]) + len(got["spans_differ"]), got
    assert got["encoded_differ"] == [], got
    if family == "gpt2":  # every Linear weight is a transposed Conv1D weight
        assert len(got["spans_differ"]) == got["linear"], got
    if family in ("cohere", "phi"):  # the checkpoint's layout: every layer from the groups
        assert got["spans_differ"] == [] and got["again"] == [], got
    want_moe = ["DF11MoEMethod"] if family == "llama4_text" else []
    assert got["moe_methods"] == want_moe, got["moe_methods"]


@needs_vllm
@pytest.mark.parametrize("family", models.FAMILIES)
def test_tensor_parallel_ranks_code_their_own_slices(family, cpu_runs):
    """vLLM's model class of each family at tensor parallel 2, its two ranks built on the CPU
    (vllm_cpu_models.py TP=2, gloo): fed df11's folder decoded on the CPU, each rank holds the
    slices vLLM's model fed the BF16 checkpoint holds, bit for bit; no Linear layer is whole
    members of the folder's groups, so each is coded again from the rank's slice
    (coded.encode, as the GPU step codes it) and decodes back to exactly that slice."""
    bf16_dir, _ = cpu_runs.folder(family, "df11")
    ranks = {got["rank"]: got for got in cpu_runs.report(2, "tp", family, "df11")}
    assert sorted(ranks) == [0, 1], ranks.keys()
    cfg = config(bf16_dir)
    attention = cfg["num_attention_heads"] * (cfg.get("head_dim")
                                              or cfg["hidden_size"] // cfg["num_attention_heads"])
    for got in ranks.values():
        assert got["differ"] == [] and got["missing"] == [] and got["spans_differ"] == [], got
        assert got["linear"] > 0 and got["encoded"] == len(got["again"]), got
        assert got["from_groups"] + got["encoded"] == got["linear"], got
        assert got["encoded_differ"] == [], got
        check_embeddings(got, bf16_dir)  # each rank's slice of the vocabulary
        # A row-parallel layer's slice: half of the attention's columns.
        o_proj = got["shapes"]["model.layers.0.self_attn.o_proj.weight"]
        assert o_proj == [cfg["hidden_size"], attention // 2], o_proj


@needs_vllm
def test_vllm_without_the_plugin_refuses_a_df11_folder(llama):
    """A vLLM that has not loaded df11's plugin meets config.json's quant_method "df11" in its
    own config check and stops there, before any weight is read: it never serves the folder's
    tensors as something else."""
    bf16_dir, df11_dir = llama
    code = ("import sys\n"
            "from vllm.engine.arg_utils import EngineArgs\n"
            "for folder in sys.argv[1:]:\n"
            "    try:\n"
            "        c = EngineArgs(model=folder, skip_tokenizer_init=True).create_model_config()\n"
            "        print('LOADED', folder, c.quantization)\n"
            "    except Exception as e:\n"
            "        why = str(e)[:300].replace('\\n', ' ')\n"
            "        print('REFUSED', folder, type(e).__name__, why)\n")
    # VLLM_PLUGINS names no plugin, so vLLM loads none of its general plugins (df11's among them
    # where the package is installed).
    env = dict(os.environ, VLLM_PLUGINS="no_such_plugin")
    out = subprocess.run([sys.executable, "-c", code, df11_dir, bf16_dir], capture_output=True,
                         text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = [line for line in out.stdout.splitlines() if line.startswith(("LOADED", "REFUSED"))]
    assert lines[0].startswith(f"REFUSED {df11_dir}") and "df11" in lines[0], lines
    assert lines[1] == f"LOADED {bf16_dir} None", lines


@needs_vllm
def test_engines_that_would_serve_wrong_weights_are_refused(llama):
    """vLLM's own config, loader choice and load_model, the model built on the CPU
    (vllm_cpu_models.py --refusals): `--quantization df11` on a BF16 folder stops at df11's
    loader opening it, naming the folder; vLLM's own loader (`--load-format safetensors`) on a
    DF11 folder stops at the first coded tensor's name; and on a BF16 folder with
    `--quantization df11` it fills the layers and then stops where df11's Linear method is
    finalized, naming the layer and the load formats that serve DF11. None loads."""
    bf16_dir, df11_dir = llama
    out = subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__),
                                                       "vllm_cpu_models.py"),
                          "--refusals", bf16_dir, df11_dir], capture_output=True, text=True,
                         timeout=900, env=dict(os.environ, HF_HUB_OFFLINE="1"))
    assert out.returncode == 0, (out.stdout[-2000:], out.stderr[-3000:])
    got = {c["case"]: c for c in map(json.loads, (line for line in out.stdout.splitlines()
                                                   if line.startswith("{")))}
    assert sorted(got) == sorted(["quantization-on-bf16", "vllm-loader-on-df11",
                                  "vllm-loader-quantization-on-bf16"]), out.stdout[-2000:]
    for case in got.values():
        assert "loaded" not in case and case["quantization"] == "DF11Config", case
    kind, why = got["quantization-on-bf16"]["refused"]
    assert got["quantization-on-bf16"]["loader"] == "DF11ModelLoader"
    assert kind == "Df11Error" and bf16_dir in why and "[bad_metadata]" in why, why
    kind, why = got["vllm-loader-on-df11"]["refused"]
    assert got["vllm-loader-on-df11"]["loader"] == "DefaultModelLoader"
    assert "encoded_exponent" in why, why
    kind, why = got["vllm-loader-quantization-on-bf16"]["refused"]
    assert got["vllm-loader-quantization-on-bf16"]["loader"] == "DefaultModelLoader"
    assert kind == "RuntimeError" and "was not loaded by df11's model loader" in why, why
    assert "--load-format auto (the default) or df11" in why, why


def test_encode_codes_an_engines_own_tensors(tmp_path):
    """coded.encode: a tensor-parallel rank's slices (or any weights an engine built) as a DF11
    folder of one group per tensor, each decoding from its span to exactly the tensor."""
    g = torch.Generator().manual_seed(3)
    shapes = {"model.layers.0.self_attn.qkv_proj.weight": (96, 64),
              "model.layers.0.mlp.down_proj.weight": (64, 80)}
    weights = {name: (torch.randn(shape, generator=g) * 0.02).to(torch.bfloat16)
               for name, shape in shapes.items()}
    with coded.encode(weights, str(tmp_path / "layers")) as folder:
        got = dict(coded.decoded_tensors(folder))
        for name, want in weights.items():
            assert torch.equal(got[name], want), name
            group, spans = coded.tensor_spans(folder, folder.find_tensor(name))
            assert folder.group_members(group) == [folder.find_tensor(name)]
            mine = _spans_of(coded._decode_group(folder, group), spans)
            assert torch.equal(mine.view(want.shape), want), name


def test_weight_batches_cut_in_order_under_the_cap():
    """coded.weight_batches: consecutive names, each run at most the cap, a name larger than
    the cap alone."""
    sizes = {"a": 40, "b": 50, "c": 20, "d": 200, "e": 10, "f": 90}
    assert coded.weight_batches(sizes, 100) == [["a", "b"], ["c"], ["d"], ["e", "f"]]
    assert coded.weight_batches(sizes, 1000) == [list(sizes)]
    assert coded.weight_batches({}, 100) == []


@pytest.mark.parametrize("shard_bytes", [None, 1])
def test_encode_batches_codes_every_weight_once(tmp_path, shard_bytes):
    """coded.encode_batches: a folder per batch of the cap (in one shard, or in shards of
    `shard_bytes`: here a shard a weight), each weight in one of them under its name, decoding
    from its span to exactly the weight (host tensors, coded in place; the GPU's staged
    copies: gpu/test_gpu.py)."""
    g = torch.Generator().manual_seed(4)
    weights = {f"model.layers.{i}.mlp.down_proj.weight":
               (torch.randn(64, 48 + 16 * i, generator=g) * 0.02).to(torch.bfloat16)
               for i in range(5)}
    sizes = [t.numel() * 2 for t in weights.values()]
    folders = coded.encode_batches(weights, str(tmp_path / "batches"),
                                   batch_bytes=sizes[0] + sizes[1], shard_bytes=shard_bytes)
    try:
        assert [names for _, names in folders] == [list(weights)[:2], [list(weights)[2]],
                                                   [list(weights)[3]], [list(weights)[4]]]
        shards = [sorted(f for f in os.listdir(tmp_path / "batches" / str(k))
                         if f.endswith(".safetensors")) for k in range(len(folders))]
        assert [len(s) for s in shards] == ([1, 1, 1, 1] if shard_bytes is None
                                            else [2, 1, 1, 1]), shards
        for folder, names in folders:
            assert sorted(folder.tensor_name(t) for t in range(folder.tensor_count())) == \
                sorted(names)
            for name in names:
                group, spans = coded.tensor_spans(folder, folder.find_tensor(name))
                got = _spans_of(coded._decode_group(folder, group), spans)
                assert torch.equal(got.view(weights[name].shape), weights[name]), name
    finally:
        for folder, _ in folders:
            folder.close()


@needs_vllm
@pytest.mark.parametrize("world, nodes, cores, want", [(1, 1, 32, 0), (2, 1, 32, 16),
                                                       (4, 1, 30, 7), (4, 2, 32, 16),
                                                       (8, 1, 4, 1)])
def test_encoder_threads_are_the_ranks_share_of_the_host(monkeypatch, world, nodes, cores,
                                                          want):
    """A rank codes its slices with its share of the cores it may use, where vLLM runs
    several ranks on one host (they code at the same time): vLLM's world over its nodes; all
    cores (0) at one rank a host, and outside vLLM's workers."""
    from vllm.distributed import parallel_state
    from df11 import vllm_plugin
    assert vllm_plugin._encoder_threads() == 0  # no process group here
    monkeypatch.setattr(parallel_state, "get_world_group",
                        lambda: type("Group", (), {"world_size": world})())
    monkeypatch.setattr(parallel_state, "get_node_count", lambda: nodes)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)))
    assert vllm_plugin._encoder_threads() == want


def test_scratch_dir_is_shared_memory_where_it_has_room(tmp_path, monkeypatch):
    """coded.scratch_dir: the temporary folder of a rank's coded slices goes to a writable
    shared-memory directory with twice its size free, else to tempfile's default (None)."""
    d = tmp_path / "shm"
    d.mkdir()
    free = os.statvfs(str(d)).f_bavail * os.statvfs(str(d)).f_frsize
    assert coded.scratch_dir(1000, str(d)) == str(d)
    assert coded.scratch_dir(free, str(d)) is None  # needs twice the size
    assert coded.scratch_dir(1000, str(tmp_path / "absent")) is None
    (tmp_path / "file").write_text("x")
    assert coded.scratch_dir(1000, str(tmp_path / "file")) is None
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    assert coded.scratch_dir(1000, str(d)) is None  # not writable


LLAMA_PACKED = {"qkv_proj": ["q_proj", "k_proj", "v_proj"],
                "gate_up_proj": ["gate_proj", "up_proj"]}


def test_member_names_follow_the_packed_modules_mapping():
    assert df11_vllm.member_names("model.layers.0.self_attn.qkv_proj", LLAMA_PACKED) == [
        "model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.k_proj.weight",
        "model.layers.0.self_attn.v_proj.weight"]
    assert df11_vllm.member_names("model.layers.2.mlp.down_proj", LLAMA_PACKED) == [
        "model.layers.2.mlp.down_proj.weight"]
    assert df11_vllm.member_names("lm_head", {}) == ["lm_head.weight"]


@pytest.mark.parametrize("folder_kind", ["df11", "official"])
def test_fused_layers_decode_from_spans_of_the_folders_groups(llama, folder_kind):
    """What vLLM's Llama fuses (q, k, v; gate, up) and keeps (o, down) at tensor parallel 1 is
    spans of one block group, in the layer's order, whatever order the folder stores the
    members in (df11: by name; the official encoder: q, k, v, o, gate, up, down)."""
    from safetensors.torch import load_file
    bf16_dir, df11_dir = llama
    fixture = os.path.join(models.FIXTURES, "llama")
    if folder_kind == "official":
        bf16_dir, df11_dir = os.path.join(fixture, "bf16"), os.path.join(fixture, "official")
    want = load_file(os.path.join(bf16_dir, "model.safetensors"))
    with _capi.Model(df11_dir) as folder:
        for layer in ("self_attn.qkv_proj", "self_attn.o_proj", "mlp.gate_up_proj",
                      "mlp.down_proj"):
            names = df11_vllm.member_names(f"model.layers.1.{layer}", LLAMA_PACKED)
            weight = torch.cat([want[n] for n in names])
            members = [folder.find_tensor(n) for n in names]
            g, spans, why = coded.layer_spans(folder, members, tuple(weight.shape))
            assert g is not None, why
            got = _spans_of(coded._decode_group(folder, g), spans)
            assert torch.equal(got.view(weight.shape), weight), layer
        # A tensor-parallel rank's half of q/k/v is not the members as they are.
        members = [folder.find_tensor(n) for n in
                   df11_vllm.member_names("model.layers.1.self_attn.qkv_proj", LLAMA_PACKED)]
        shape = tuple(torch.cat([want[folder.tensor_name(t)] for t in members]).shape)
        assert coded.layer_spans(folder, members, (shape[0] // 2, shape[1]))[0] is None
        # Members in several groups, or more than one launch takes, are refused with a reason.
        other = folder.find_tensor("model.layers.0.mlp.down_proj.weight")
        g, _, why = coded.layer_spans(folder, members + [other], shape)
        assert g is None and "one coded group" in why
        many = members * 3
        g, _, why = coded.layer_spans(folder, many, (shape[0] * 3, shape[1]))
        assert g is None and "more than 8 members" in why


@needs_vllm
def test_lora_adapters_on_moe_models_are_refused_before_loading():
    """vLLM's LoRA layer for fused experts reads and replaces the experts' weights, which a DF11
    MoE layer decodes as routed: a DF11 MoE model served with --enable-lora is refused by
    df11's loader before any weight is read, naming the model and what to do instead."""
    from types import SimpleNamespace
    from df11 import vllm_plugin
    loader = vllm_plugin.DF11ModelLoader.__new__(vllm_plugin.DF11ModelLoader)
    config = SimpleNamespace(lora_config=object(), additional_config={})
    model = SimpleNamespace(quantization="df11", model="/models/x-df11", is_moe=True)
    with pytest.raises(ValueError, match=r"/models/x-df11: LoRA adapters .*mixture-of-experts"
                                         r".*Merge the adapter"):
        loader.load_model(config, model)


@needs_vllm
@pytest.mark.parametrize("mode", ["decode", "exec"])
def test_coded_layers_tell_vllms_lora_layers_their_device(mode):
    """A Linear layer served coded has no BF16 weight; vLLM's LoRA layers find the device of
    their LoRA weights from the layer's `weight_packed` (the coded bytes it runs from), as for
    compressed-tensors' packed weights, instead of failing with 'Unsupported base layer'."""
    from types import SimpleNamespace
    from vllm.lora.layers.utils import _get_lora_device
    from df11 import vllm_plugin
    layer = torch.nn.Module()
    layer.weight = torch.nn.Parameter(torch.zeros(4, 8, dtype=torch.bfloat16),
                                      requires_grad=False)
    with pytest.raises(ValueError, match="Unsupported base layer"):
        _get_lora_device(torch.nn.Module())
    packed = torch.zeros(24, dtype=torch.uint8, device="meta")  # stands for a GPU's bytes
    state = vllm_plugin._Attach("f", mode, torch.device("cpu"))
    state._accept(SimpleNamespace(layer=layer), packed)
    assert "weight" not in layer._parameters and not hasattr(layer, "weight")
    assert layer.weight_packed is packed and layer.df11_loaded
    assert _get_lora_device(layer) == torch.device("meta")


def test_serving_mode_from_additional_config():
    from df11.vllm_config import serving_mode
    assert serving_mode({}) == "decode"
    assert serving_mode(None) == "decode"
    assert serving_mode({"df11_mode": "exec"}) == "exec"
    assert serving_mode({"df11_mode": "compact"}) == "compact"
    assert serving_mode({"df11_mode": "decode", "other": 1}) == "decode"
    with pytest.raises(ValueError, match="df11_mode='fast'.*'decode', 'exec'"):
        serving_mode({"df11_mode": "fast"})


def test_member_spans_picks_whole_members_only():
    from df11.vllm_config import member_spans
    sizes = [8, 4, 4, 16]  # members at offsets 0, 8, 12, 16
    assert member_spans(sizes, [(0, 8), (8, 4), (12, 4)]) == [0, 1, 2]
    assert member_spans(sizes, [(16, 16), (0, 8)]) == [3, 0]  # any order the layer has
    assert member_spans(sizes, [(0, 12)]) is None  # two members as one span
    assert member_spans(sizes, [(8, 2)]) is None  # part of a member (a tensor-parallel slice)
    assert member_spans(sizes, []) is None


def test_single_file_config_is_told_apart():
    """The dfloat11 encoder's default output (config.json: dfloat11_config alone) names no
    model; df11's own folders and the official sharded ones do."""
    fixture = os.path.join(models.FIXTURES, "llama")
    assert df11_vllm.lacks_model_config(config(os.path.join(fixture, "official-single")))
    assert not df11_vllm.lacks_model_config(config(os.path.join(fixture, "official")))
    assert not df11_vllm.lacks_model_config(config(os.path.join(fixture, "bf16")))
    assert "--hf-config-path" in df11_vllm.single_file_hint("x")


@needs_vllm
@pytest.mark.parametrize("family", ["llama", "qwen3"])
def test_single_file_folder_needs_the_models_config_and_then_loads(family):
    """vLLM on the encoder's single-file folder: without the model's config, an error that
    says what to pass; with --hf-config-path and --quantization df11, the model vLLM builds
    gives the coded weights' shapes, and the folder decodes to the BF16 checkpoint (Qwen3's
    tied head, stored as a group of its own, included)."""
    from safetensors.torch import load_file
    from vllm.engine.arg_utils import EngineArgs
    from df11 import vllm_plugin
    df11_vllm.register()
    fixture = os.path.join(models.FIXTURES, family)
    single, bf16_dir = os.path.join(fixture, "official-single"), os.path.join(fixture, "bf16")
    with pytest.raises(Exception, match="--hf-config-path"):
        EngineArgs(model=single, skip_tokenizer_init=True).create_model_config()
    model_config = EngineArgs(model=single, hf_config_path=bf16_dir, quantization="df11",
                              skip_tokenizer_init=True).create_model_config()
    assert model_config.quantization == "df11"
    want = load_file(os.path.join(bf16_dir, "model.safetensors"))
    with vllm_plugin.open_folder(single, model_config) as folder:
        got = dict(coded.decoded_tensors(folder))
    assert set(want) <= set(got)
    for name, t in want.items():
        assert torch.equal(got[name].view(torch.int16), t.view(torch.int16)), name
    # Beyond the checkpoint: only a tied head, equal to the embedding it is tied to.
    for name in set(got) - set(want):
        assert name == "lm_head.weight", name
        assert torch.equal(got[name].view(torch.int16),
                           want["model.embed_tokens.weight"].view(torch.int16))


@needs_vllm
def test_load_via_names_where_the_linear_weights_go_at_load(llama, monkeypatch):
    """DF11_VLLM_LOAD_VIA=host puts the Linear weights vLLM's loader fills in host memory (the
    choice needs no GPU then); another value is refused naming the variable."""
    from df11 import vllm_plugin
    _, df11_dir = llama
    with _capi.Model(df11_dir) as folder:
        monkeypatch.setenv("DF11_VLLM_LOAD_VIA", "host")
        assert vllm_plugin.load_device(folder, 1, True) == torch.device("cpu")
        assert vllm_plugin.DF11LinearMethod(torch.device("cpu")).device.type == "cpu"
        monkeypatch.setenv("DF11_VLLM_LOAD_VIA", "cuda:0")
        with pytest.raises(ValueError, match="DF11_VLLM_LOAD_VIA"):
            vllm_plugin.load_device(folder, 1, True)


@needs_vllm
@pytest.mark.parametrize("family, kind", LAYERWISE_CASES)
def test_layerwise_load_codes_each_layer_as_vllms_loader_fills_it(family, kind, cpu_runs):
    """The layer-wise load (decode mode's default at one rank): vLLM's model class of each
    family, built with its DF11 Linear weights on the meta device and loaded through vLLM's
    layer-wise processing (vllm_cpu_models.py, a "layerwise" job): each layer is coded (its
    spans compared with the filled weight, on the CPU here) while vLLM's loader runs, as soon
    as it has filled the layer, so
    that one Linear weight at a time exists in BF16; every other parameter equals vLLM's model
    fed the BF16 checkpoint bit for bit. A layer the folder does not code (the official
    Qwen3-MoE router) is left for the load's last step, which codes it again."""
    _, folder = cpu_runs.folder(family, kind)
    got, = cpu_runs.report(1, "layerwise", family, kind)
    coded_now = [prefix for prefix, phase in got["coded_at_load"]]
    assert got["meta_before"] == len(coded_now) + len(got["again"]) > 0, got
    assert all(phase == "load" for _, phase in got["coded_at_load"]), got
    assert got["left_at_load"] == [] and got["offered_unfilled"] == [], got
    # The layer being coded, and those left for the last step (which stay in BF16 until then).
    assert got["most_filled"] <= 1 + len(got["again"]), got
    assert sorted(coded_now) == sorted(n[:-len(".weight")] for n in got["gone"]), got
    assert got["params"] > 0 and got["differ"] == [] and got["missing"] == [], got
    assert got["encoded_differ"] == [], got
    with _capi.Model(folder) as f:
        for prefix, why in got["again"]:
            t = f.find_tensor(prefix + ".weight")
            assert t is not None and f.tensor_group(t) is None, (prefix, why)


@needs_vllm
def test_layerwise_load_is_decode_modes_default_at_one_rank(monkeypatch):
    """The layer-wise load codes from the folder's groups kept on the GPU: the default in decode
    mode at tensor and pipeline parallel 1; elsewhere the load through BF16 weights, and
    DF11_VLLM_LOAD_VIA=layer refused, naming the variable, where parallelism splits the layers.
    DF11_VLLM_LOAD_VIA=gpu or host turns it off; another value is refused."""
    from df11 import vllm_plugin
    monkeypatch.delenv("DF11_VLLM_LOAD_VIA", raising=False)
    assert vllm_plugin.layerwise_load(True, "decode")
    assert not vllm_plugin.layerwise_load(True, "exec")
    assert not vllm_plugin.layerwise_load(False, "decode")
    for via in ("gpu", "host"):
        monkeypatch.setenv("DF11_VLLM_LOAD_VIA", via)
        assert not vllm_plugin.layerwise_load(True, "decode")
        assert not vllm_plugin.layerwise_load(False, "exec")
    monkeypatch.setenv("DF11_VLLM_LOAD_VIA", "layer")
    assert vllm_plugin.layerwise_load(True, "decode")
    assert vllm_plugin.layerwise_load(True, "exec")
    with pytest.raises(ValueError, match="DF11_VLLM_LOAD_VIA=layer"):
        vllm_plugin.layerwise_load(False)
    monkeypatch.setenv("DF11_VLLM_LOAD_VIA", "cuda")
    with pytest.raises(ValueError, match="expected 'gpu', 'host' or 'layer'"):
        vllm_plugin.layerwise_load(True)
    assert vllm_plugin.DF11LinearMethod(layerwise=True).uses_meta_device
    assert not vllm_plugin.DF11LinearMethod().uses_meta_device


def _check_tool():
    """python/tests/gpu/vllm_check.py, the GPU check's driver (it imports vLLM only inside the
    steps that run an engine)."""
    path = os.path.join(os.path.dirname(__file__), "gpu", "vllm_check.py")
    spec = importlib.util.spec_from_file_location("vllm_check", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_check_groups_and_compare_engines_outputs(tmp_path, capsys):
    tool = _check_tool()
    request = {"prompt": [5, 6], "tokens": [7, 8], "logprobs": [[[7, -1.5]], [[8, -2.0]]],
               "prompt_logprobs": [None, [[6, -3.25]]]}
    other = dict(request, prompt_logprobs=[None, [[6, -3.2500004]]])
    paths = []
    for name, req in (("bf16-a", request), ("bf16-b", other), ("df11", other),
                      ("official", request)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"model": name, "single_repeats": True,
                                    "outputs": {"single": [req], "batch": [req]}}))
        paths.append(str(path))
    assert tool.groups(paths) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"class 0: {paths[0]} {paths[3]}", f"class 1: {paths[1]} {paths[2]}"]
    assert tool.compare(paths[0], paths[3]) == 0
    assert tool.compare(paths[0], paths[2]) == 1
    out = capsys.readouterr().out
    assert "DIFFERENT (single)" in out and "prompt_logprobs at 1" in out
