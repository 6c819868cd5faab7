"""model.dequantize(), transformers' and diffusers' call for a quantized model's original
weights, on a DF11 model: the BF16 model it codes, in place. Its state dict equals the BF16
model's tensor for tensor, bit for bit (fused MoE experts, tied heads, float32 modules
included), its outputs equal BF16's, it holds no df11 module, hook or attribute, and what
save_pretrained writes then is a BF16 checkpoint that transformers without df11 loads. A LoRA
adapter can then be merged (merge_and_unload), which a DF11 base refuses."""
import json
import os
import subprocess
import sys

import pytest
import torch

import df11
import models

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a CUDA GPU"))]


def bits(t):
    return t.view(torch.int16) if t.dtype == torch.bfloat16 else t


def assert_plain(model):
    """Nothing of df11 left: no attribute, no module of its own, no df11 forward hook."""
    assert "df11" not in model.__dict__
    for name, module in model.named_modules():
        assert type(module).__module__.split(".")[0] != "df11", (name, type(module))
        assert not [k for k in module.__dict__ if k.startswith("_df11")], name
        for hook in list(module._forward_pre_hooks.values()) + list(
                module._forward_hooks.values()):
            assert getattr(hook, "__module__", "").split(".")[0] != "df11", (name, hook)


def load(how, path, device="cpu", **kw):
    if how == "df11":
        return df11.from_pretrained(path, device=device, **kw)
    from transformers import AutoModelForCausalLM
    config = df11.Df11Config(**kw) if kw else None
    return AutoModelForCausalLM.from_pretrained(path, device_map=device,
                                                quantization_config=config)


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    made = {}

    def get(family):
        if family not in made:
            work = tmp_path_factory.mktemp(family)
            bf16_dir, df11_dir = str(work / "bf16"), str(work / "df11")
            models.build_llm(family).save_pretrained(bf16_dir)
            models.df11_compress(bf16_dir, df11_dir)
            made[family] = (work, bf16_dir, df11_dir)
        return made[family]
    return get


@pytest.mark.parametrize("family", models.FAMILIES)
@pytest.mark.parametrize("how", ["df11", "transformers"])
def test_dequantize_gives_the_bf16_model(folders, family, how):
    from transformers import AutoModelForCausalLM
    work, bf16_dir, df11_dir = folders(family)
    ref = AutoModelForCausalLM.from_pretrained(bf16_dir, dtype=torch.bfloat16).eval()
    model = load(how, df11_dir)
    assert model.dequantize() is model
    assert_plain(model)
    assert not getattr(model, "is_quantized", False)
    want, got = ref.state_dict(), model.state_dict()
    assert list(got) == list(want)
    for name in want:
        assert type(got[name]) is type(want[name]), name  # no placeholder left
        assert got[name].dtype == want[name].dtype and torch.equal(bits(got[name]),
                                                                   bits(want[name])), name
    assert ({n: p.requires_grad for n, p in model.named_parameters()} ==
            {n: p.requires_grad for n, p in ref.named_parameters()})
    ids = models.llm_inputs(ref.config.vocab_size, 2)
    with torch.no_grad():
        assert torch.equal(model(input_ids=ids).logits, ref(input_ids=ids).logits)
    out = str(work / f"bf16-again-{how}")
    model.save_pretrained(out)
    with open(os.path.join(out, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    assert "quantization_config" not in config and "dfloat11_config" not in config
    saved, original = models.saved_tensors(out), models.saved_tensors(bf16_dir)
    assert sorted(saved) == sorted(original)
    assert all(torch.equal(bits(saved[k]), bits(original[k])) for k in original)


def test_plain_transformers_loads_what_a_dequantized_model_saved(folders, tmp_path):
    """In a process that never imports df11: no quantization method to resolve, the BF16
    model's logits."""
    _, bf16_dir, df11_dir = folders("llama")
    model = load("df11", df11_dir)
    model.dequantize()
    out = str(tmp_path / "plain")
    model.save_pretrained(out)
    script = (
        "import sys, torch\n"
        "from transformers import AutoModelForCausalLM\n"
        "a = AutoModelForCausalLM.from_pretrained(sys.argv[1], dtype=torch.bfloat16)\n"
        "b = AutoModelForCausalLM.from_pretrained(sys.argv[2], dtype=torch.bfloat16)\n"
        "ids = torch.arange(1, 17).view(1, 16)\n"
        "with torch.no_grad():\n"
        "    assert torch.equal(a(input_ids=ids).logits, b(input_ids=ids).logits)\n"
        "assert 'df11' not in sys.modules\n"
        "print('EQUAL')\n")
    proc = subprocess.run([sys.executable, "-c", script, out, bf16_dir], capture_output=True,
                          text=True, env=dict(os.environ, HF_HUB_OFFLINE="1"))
    assert proc.returncode == 0 and "EQUAL" in proc.stdout, proc.stderr[-3000:]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("mode", ["decode", pytest.param("exec", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="the execution mode runs on CUDA"))])
def test_dequantize_on_each_device_and_mode(folders, device, mode):
    """The weights land on the device their modules run on; from the execution mode too, whose
    layouts go with the engine (the outputs are then BF16's, not the reference GEMM's)."""
    if mode == "exec" and device == "cpu":
        pytest.skip("the execution mode runs on CUDA")
    from transformers import AutoModelForCausalLM
    _, bf16_dir, df11_dir = folders("llama")
    ref = AutoModelForCausalLM.from_pretrained(bf16_dir, dtype=torch.bfloat16,
                                               device_map=device).eval()
    model = load("df11", df11_dir, device, mode=mode)
    model.dequantize()
    assert_plain(model)
    assert {p.device.type for p in model.parameters()} == {device}
    ids = models.llm_inputs(ref.config.vocab_size, 2).to(device)
    with torch.no_grad():
        assert torch.equal(model(input_ids=ids).logits, ref(input_ids=ids).logits)


def test_lora_merges_after_dequantize(folders):
    """merge_and_unload, refused on a DF11 base, merges once the base is dequantized: the
    merged model equals the BF16 model with the same adapter merged."""
    peft = pytest.importorskip("peft")
    from transformers import AutoModelForCausalLM
    _, bf16_dir, df11_dir = folders("llama")

    def with_adapter(model):
        config = peft.LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "down_proj"],
                                 lora_dropout=0.0, init_lora_weights=False)
        torch.manual_seed(5)
        return peft.get_peft_model(model, config)
    ref = with_adapter(AutoModelForCausalLM.from_pretrained(bf16_dir, dtype=torch.bfloat16))
    got = with_adapter(df11.from_pretrained(df11_dir, device="cpu"))
    with pytest.raises(RuntimeError, match="merge"):
        got.merge_and_unload()
    got.base_model.model.dequantize()
    assert_plain(got.base_model.model)
    ref, got = ref.merge_and_unload(), got.merge_and_unload()
    want = ref.state_dict()
    assert got.state_dict().keys() == want.keys()
    assert all(torch.equal(got.state_dict()[k], want[k]) for k in want)


def test_diffusers_model_dequantizes(tmp_path):
    diffusers = pytest.importorskip("diffusers")
    bf16_dir = os.path.join(models.FIXTURES, "flux", "bf16")
    df11_dir = models.df11_compress(bf16_dir, str(tmp_path / "df11"))
    ref = diffusers.FluxTransformer2DModel.from_pretrained(bf16_dir, torch_dtype=torch.bfloat16)
    model = df11.from_pretrained(df11_dir, device="cpu")
    model.dequantize()
    assert_plain(model)
    want, got = ref.state_dict(), model.state_dict()
    assert got.keys() == want.keys()
    assert all(torch.equal(bits(got[k]), bits(want[k])) for k in want)
    out = str(tmp_path / "bf16-again")
    model.save_pretrained(out)
    again = diffusers.FluxTransformer2DModel.from_pretrained(out, torch_dtype=torch.bfloat16)
    with torch.no_grad():
        a = again(**models.flux_inputs("cpu"), return_dict=False)[0]
        b = ref(**models.flux_inputs("cpu"), return_dict=False)[0]
    assert torch.equal(bits(a), bits(b))


def test_a_model_that_is_not_df11s_is_refused():
    from df11.dequantize import dequantize
    with pytest.raises(ValueError, match="not a DF11 model"):
        dequantize(torch.nn.Linear(2, 2))
