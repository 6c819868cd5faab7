"""Weights a framework keeps in float32 in a BF16 model: diffusers' _keep_in_fp32_modules (a Wan
transformer's time embedding, Kandinsky 5's modulation layers inside its blocks) and the
float32 parameters transformers' MoE models declare (GLM-4.5's router). Their checkpoints store
them in BF16, so `df11 compress` codes them; the framework's own load upcasts them and its
forward computes in float32. A DF11 model holds them decoded in float32 too (df11.engine,
_widened): outputs bit-identical to the framework's BF16 load, the same parameter dtypes, and
save_pretrained writes the coded groups back byte for byte. On the CPU, and on CUDA where
there is a GPU."""
import re

import pytest
import torch

import df11
import models

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a CUDA GPU"))]


def float32_names(model):
    """The model's float32 parameters, block indices folded ("blocks.N.norm2.weight")."""
    return {re.sub(r"\.\d+\.", ".N.", n) for n, p in model.named_parameters()
            if p.dtype == torch.float32}


def check_bits(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    assert torch.equal(got.view(torch.int16), want.view(torch.int16)), \
        f"max |diff| {(got.float() - want.float()).abs().max().item()}"


def check_saved(model, source, out):
    """save_pretrained wrote every tensor of the source folder (the coded groups byte for
    byte) and nothing the groups code in another form."""
    model.save_pretrained(out)
    before, after = models.saved_tensors(source), models.saved_tensors(out)
    assert set(after) == set(before)
    for key, value in before.items():
        if key.endswith((".encoded_exponent", ".sign_mantissa", ".luts", ".gaps",
                         ".output_positions", ".split_positions")):
            assert torch.equal(after[key].view(torch.uint8), value.view(torch.uint8)), key


DIFFUSERS = {
    # A coded group of its own per float32 Linear (time_embedder.linear_1, linear_2).
    "wan": ("WanTransformer3DModel", models.WAN_CONFIG, models.wan_inputs),
    # Float32 Linears inside each block's group, beside the block's BF16 ones.
    "kandinsky5": ("Kandinsky5Transformer3DModel",
                   dict(in_visual_dim=4, in_text_dim=16, in_text_dim2=8, time_dim=16,
                        out_visual_dim=4, patch_size=(1, 2, 2), model_dim=32, ff_dim=64,
                        num_text_blocks=1, num_visual_blocks=2, axes_dims=(4, 6, 6)),
                   lambda g: dict(hidden_states=torch.randn(1, 2, 4, 4, 4, generator=g),
                                  encoder_hidden_states=torch.randn(1, 5, 16, generator=g),
                                  timestep=torch.tensor([500.0]),
                                  pooled_projections=torch.randn(1, 8, generator=g),
                                  visual_rope_pos=[torch.arange(2)] * 3,
                                  text_rope_pos=torch.arange(5))),
}


@pytest.fixture(scope="module", params=sorted(DIFFUSERS))
def diffusers_folders(request, tmp_path_factory):
    diffusers = pytest.importorskip("diffusers")
    name, config, inputs = DIFFUSERS[request.param]
    cls = getattr(diffusers, name, None)
    if cls is None:
        pytest.skip(f"diffusers {diffusers.__version__} has no {name}")
    work = tmp_path_factory.mktemp(request.param)
    bf16_dir, df11_dir = str(work / "bf16"), str(work / "df11")
    torch.manual_seed(0)
    models.save_random_bf16(cls(**config), bf16_dir, 17)
    models.df11_compress(bf16_dir, df11_dir)
    return cls, inputs, bf16_dir, df11_dir, work


@pytest.mark.parametrize("device", DEVICES)
def test_diffusers_float32_modules(diffusers_folders, device):
    cls, inputs, bf16_dir, df11_dir, work = diffusers_folders
    ref = cls.from_pretrained(bf16_dir, torch_dtype=torch.bfloat16).to(device).eval()
    kept = float32_names(ref)
    assert kept, "the class keeps no module in float32: the test would prove nothing"
    g = torch.Generator().manual_seed(1)
    x = {k: (v.to(device, torch.bfloat16) if torch.is_tensor(v) and v.is_floating_point()
             and v.dim() > 1 else v.to(device) if torch.is_tensor(v) else v)
         for k, v in inputs(g).items()}
    with torch.no_grad():
        want = ref(**x, return_dict=False)[0]
    model = df11.from_pretrained(df11_dir, device=device)
    assert float32_names(model) == kept
    with torch.no_grad():
        check_bits(model(**x, return_dict=False)[0], want)
    if device == "cpu":
        check_saved(model, df11_dir, str(work / "saved"))
        again = df11.from_pretrained(str(work / "saved"), device=device)
        with torch.no_grad():
            check_bits(again(**x, return_dict=False)[0], want)


GLM4_MOE = dict(vocab_size=512, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                max_position_embeddings=128, tie_word_embeddings=False,
                moe_intermediate_size=32, n_routed_experts=8, num_experts_per_tok=2,
                n_shared_experts=1, first_k_dense_replace=1, n_group=1, topk_group=1)


@pytest.fixture(scope="module")
def glm4_moe_folders(tmp_path_factory):
    from transformers import AutoConfig, AutoModelForCausalLM
    try:
        config = AutoConfig.for_model("glm4_moe", **GLM4_MOE)
    except (KeyError, ValueError):
        pytest.skip("this transformers has no glm4_moe")
    work = tmp_path_factory.mktemp("glm4_moe")
    bf16_dir, df11_dir = str(work / "bf16"), str(work / "df11")
    torch.manual_seed(0)
    models.save_random_bf16(AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16),
                            bf16_dir, 23)
    models.df11_compress(bf16_dir, df11_dir)
    return bf16_dir, df11_dir, work


def load(how, path, device):
    if how == "df11":
        return df11.from_pretrained(path, device=device)
    from transformers import AutoModelForCausalLM
    return AutoModelForCausalLM.from_pretrained(path, device_map=device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("how", ["df11", "transformers"])
def test_moe_router_in_float32(glm4_moe_folders, how, device):
    """GLM-4.5's router (coded in its layer's group, with the experts) is held in the dtype
    transformers holds it in (float32); what save_pretrained writes loads again (its experts' shapes from
    the model: df11 does not know this architecture's config)."""
    from transformers import AutoModelForCausalLM
    bf16_dir, df11_dir, work = glm4_moe_folders
    ref = AutoModelForCausalLM.from_pretrained(bf16_dir, dtype=torch.bfloat16,
                                               device_map=device).eval()
    # transformers 5.25 holds the router in float32, 5.17 in BF16: df11 as the one at hand.
    ids = models.llm_inputs(GLM4_MOE["vocab_size"], 2).to(device)
    with torch.no_grad():
        want = ref(input_ids=ids).logits
    model = load(how, df11_dir, device)
    assert float32_names(model) == float32_names(ref)
    with torch.no_grad():
        check_bits(model(input_ids=ids).logits, want)
    if device == "cpu":
        out = str(work / f"saved-{how}")
        check_saved(model, df11_dir, out)
        for again in ("df11", "transformers"):
            with torch.no_grad():
                check_bits(load(again, out, device)(input_ids=ids).logits, want)
