"""diffusers models through df11.from_pretrained on the CPU, for the tiny FLUX transformer:
the model built from config.json's _class_name (no bfloat16_model=), the error for a folder
whose config.json cannot name its class, and LoRA adapters loaded the diffusers way. Every
output is torch.equal to the BF16 model's under the same adapter."""
import json
import os
import shutil

import pytest
import torch

import df11
import models

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
diffusers = pytest.importorskip("diffusers")
pytest.importorskip("peft")

BF16_DIR = os.path.join(models.FIXTURES, "flux", "bf16")
OFFICIAL_DIR = os.path.join(models.FIXTURES, "flux", "official")

# Attention and MLP Linear layers of both block kinds, in diffusers' key format.
LORA_TARGETS = [
    "transformer_blocks.0.attn.to_q", "transformer_blocks.0.attn.add_k_proj",
    "transformer_blocks.0.attn.to_out.0", "transformer_blocks.0.ff.net.0.proj",
    "transformer_blocks.0.ff_context.net.2", "single_transformer_blocks.0.attn.to_v",
    "single_transformer_blocks.1.proj_mlp", "single_transformer_blocks.1.proj_out"]


@pytest.fixture(scope="module")
def df11_dir(tmp_path_factory):
    return models.df11_compress(BF16_DIR, str(tmp_path_factory.mktemp("flux") / "df11"))


def bf16_model():
    return diffusers.FluxTransformer2DModel.from_pretrained(
        BF16_DIR, torch_dtype=torch.bfloat16).eval()


@torch.no_grad()
def output(model):
    return model(**models.flux_inputs("cpu"), return_dict=False)[0]


@pytest.fixture(scope="module")
def bf16_output():
    return output(bf16_model())


def check_equal(a, b):
    assert a.shape == b.shape
    assert torch.equal(a, b), f"max |diff| {(a.float() - b.float()).abs().max().item()}"


def lora_state_dict(seed=11, rank=4):
    """Random non-zero lora_A / lora_B for LORA_TARGETS, keyed as diffusers saves a FLUX
    LoRA ("transformer.<module>.lora_A.weight")."""
    g = torch.Generator().manual_seed(seed)
    modules = dict(models.flux_skeleton().named_modules())
    sd = {}
    for name in LORA_TARGETS:
        linear = modules[name]
        a = torch.randn(rank, linear.in_features, generator=g) * 0.1
        b = torch.randn(linear.out_features, rank, generator=g) * 0.1
        sd[f"transformer.{name}.lora_A.weight"] = a.to(torch.bfloat16)
        sd[f"transformer.{name}.lora_B.weight"] = b.to(torch.bfloat16)
    return sd


def test_df11_compress_writes_a_method_plain_diffusers_refuses(df11_dir):
    """df11 registers no diffusers quantizer (diffusers has no way to register one): its
    from_pretrained refuses the folder by the quant_method df11 writes (spec 7.2), rather than
    loading random weights."""
    with open(os.path.join(df11_dir, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    assert config["_class_name"] == "FluxTransformer2DModel"
    assert config["quantization_config"] == {"quant_method": "df11"}
    with pytest.raises(ValueError, match="Unknown quantization type, got df11"):
        diffusers.FluxTransformer2DModel.from_pretrained(df11_dir, torch_dtype=torch.bfloat16)


@pytest.mark.parametrize("folder", ["df11", "official"])
def test_model_built_from_config_output_equal(df11_dir, bf16_output, folder):
    path = df11_dir if folder == "df11" else OFFICIAL_DIR
    model = df11.from_pretrained(path, device="cpu")
    assert type(model) is diffusers.FluxTransformer2DModel
    assert not [n for n, p in model.named_parameters() if p.device.type != "cpu"]
    assert {p.dtype for p in model.parameters()} == {torch.bfloat16}
    assert model.config.num_single_layers == 2 and model.config._name_or_path == path
    # As a DF11 folder's config.json has them (save_pretrained writes them again).
    assert model.config.quantization_config == {"quant_method": "df11"}
    assert "df11" not in model.config.dfloat11_config
    check_equal(output(model), bf16_output)


def test_config_without_class_names_what_to_pass(tmp_path, bf16_output):
    """A folder whose config.json holds dfloat11_config alone (as the dfloat11 tools publish
    diffusers models) cannot say its class: the error says how to build bfloat16_model=, and
    the model built so loads."""
    folder = tmp_path / "official"
    shutil.copytree(OFFICIAL_DIR, folder)
    with open(folder / "config.json", encoding="utf-8") as f:
        config = json.load(f)
    with open(folder / "config.json", "w", encoding="utf-8") as f:
        json.dump({"dfloat11_config": config["dfloat11_config"]}, f)
    with pytest.raises(ValueError) as e:
        df11.from_pretrained(str(folder), device="cpu")
    assert str(e.value) == (
        f"df11: {folder / 'config.json'}: has no model config, only dfloat11_config (as the "
        "dfloat11 encoder writes it), so the diffusers model's class is unknown: pass "
        "bfloat16_model=, the model built from the original model's config without its "
        "weights: with accelerate.init_empty_weights(): bfloat16_model = "
        "FluxTransformer2DModel.from_config(FluxTransformer2DModel.load_config("
        "\"black-forest-labs/FLUX.1-dev\", subfolder=\"transformer\")).to(torch.bfloat16) "
        "(the model's diffusers class and its BF16 repo)")

    import accelerate
    from diffusers import FluxTransformer2DModel
    with accelerate.init_empty_weights():  # the BF16 folder stands for the BF16 repo here
        skeleton = FluxTransformer2DModel.from_config(
            FluxTransformer2DModel.load_config(BF16_DIR)).to(torch.bfloat16)
    model = df11.from_pretrained(str(folder), device="cpu", bfloat16_model=skeleton)
    check_equal(output(model), bf16_output)


@pytest.mark.parametrize("name", ["flux", "wan"])
def test_official_module_files_load_with_a_skeleton(name, tmp_path):
    """The encoder's save_single_file=False output (the default of the dfloat11 project's FLUX
    example: a file per coded block, the other tensors in diffusion_pytorch_model.safetensors,
    config.json holding dfloat11_config alone; tests/interop/fixtures): loaded into the model
    built from the config in bfloat16, as the dfloat11 examples build it, its output equals the
    BF16 model's built the same way (Wan's folder holds the float32 modules diffusers loaded,
    F32 in the folder; that skeleton holds them in BF16, as the official loader's does), and
    save_pretrained writes a folder that loads by itself as diffusers loads the BF16 model."""
    cls = getattr(diffusers, "FluxTransformer2DModel" if name == "flux" else
                  "WanTransformer3DModel")
    fixture = os.path.join(models.FIXTURES, name)
    bf16_dir = os.path.join(fixture, "bf16")

    def built():
        return cls.from_config(cls.load_config(bf16_dir)).to(torch.bfloat16).eval()
    ref = built()
    ref.load_state_dict(cls.from_pretrained(bf16_dir, torch_dtype=torch.bfloat16).state_dict())
    model = df11.from_pretrained(os.path.join(fixture, "official-modules"), device="cpu",
                                 bfloat16_model=built())

    def run(m):
        with torch.no_grad():
            if name == "flux":
                return m(**models.flux_inputs("cpu"), return_dict=False)[0]
            x = {k: v.to(torch.bfloat16) if v.is_floating_point() and v.dim() > 1 else v
                 for k, v in models.wan_inputs(torch.Generator().manual_seed(1)).items()}
            return m(**x, return_dict=False)[0]
    check_equal(run(model), run(ref))
    # What it saves names its class: loaded by itself, as diffusers loads the BF16 model.
    model.save_pretrained(str(tmp_path / "saved"))
    check_equal(run(df11.from_pretrained(str(tmp_path / "saved"), device="cpu")),
                run(cls.from_pretrained(bf16_dir, torch_dtype=torch.bfloat16)))


def test_unknown_class_name(tmp_path):
    folder = tmp_path / "df11"
    shutil.copytree(OFFICIAL_DIR, folder)
    with open(folder / "config.json", encoding="utf-8") as f:
        config = json.load(f)
    config["_class_name"] = "NoSuchTransformer"
    with open(folder / "config.json", "w", encoding="utf-8") as f:
        json.dump(config, f)
    with pytest.raises(ValueError, match=r"config.json: _class_name 'NoSuchTransformer' is not "
                       r"a model class of diffusers .*: pass bfloat16_model="):
        df11.from_pretrained(str(folder), device="cpu")


def check_lora_adapter(ref, model, output, base_output):
    """The same adapter through load_lora_adapter on the BF16 model `ref` and the DF11 `model`:
    equal outputs, with its scale 1 and 0.5 (`output(m)`: the model's output)."""
    for m in (ref, model):
        m.load_lora_adapter(lora_state_dict(), adapter_name="style")
    want = output(ref)
    assert not torch.equal(want, base_output)  # the adapter changes the output
    check_equal(output(model), want)
    for m in (ref, model):  # a scale applies to the unfused adapter
        m.set_adapters(["style"], weights=[0.5])
    check_equal(output(model), output(ref))


def test_load_lora_adapter_output_equal(df11_dir, bf16_output):
    check_lora_adapter(bf16_model(), df11.from_pretrained(df11_dir, device="cpu"), output,
                       bf16_output)


def test_pipeline_lora_loader_into_transformer_output_equal(df11_dir):
    """FluxPipeline's LoRA loader: its key conversion (lora_state_dict) and
    load_lora_into_transformer, the steps of load_lora_weights that need no state_dict()."""
    from diffusers import FluxPipeline
    ref, model = bf16_model(), df11.from_pretrained(df11_dir, device="cpu")
    for m in (ref, model):
        state_dict, alphas = FluxPipeline.lora_state_dict(lora_state_dict(), return_alphas=True)
        FluxPipeline.load_lora_into_transformer(state_dict, network_alphas=alphas,
                                                transformer=m, adapter_name="style")
    check_equal(output(model), output(ref))


def tiny_pipeline(transformer):
    """A FluxPipeline around the transformer alone: enough for its LoRA loader, offline."""
    from diffusers import FlowMatchEulerDiscreteScheduler, FluxPipeline
    return FluxPipeline(scheduler=FlowMatchEulerDiscreteScheduler(), vae=None,
                        text_encoder=None, tokenizer=None, text_encoder_2=None,
                        tokenizer_2=None, transformer=transformer)


def test_pipeline_load_lora_weights_output_equal(df11_dir):
    """FluxPipeline.load_lora_weights, which looks each LoRA target's base weight up in
    transformer.state_dict() (there a placeholder with the weight's shape, dtype and device)."""
    ref, model = bf16_model(), df11.from_pretrained(df11_dir, device="cpu")
    for m in (ref, model):
        tiny_pipeline(m).load_lora_weights(lora_state_dict(), adapter_name="style")
    check_equal(output(model), output(ref))


@pytest.mark.parametrize("safe_fusing", [False, True])
def test_fuse_lora_is_refused_and_changes_nothing(df11_dir, safe_fusing):
    """fuse_lora would add the LoRA delta to the decode buffer, which the next decode
    overwrites: it raises before any weight is changed, saying what to do, and the model keeps
    the BF16 model's outputs with the adapter unfused."""
    ref, model = bf16_model(), df11.from_pretrained(df11_dir, device="cpu")
    for m in (ref, model):
        m.load_lora_adapter(lora_state_dict(), adapter_name="style")
    with pytest.raises(RuntimeError, match=r"df11: transformer_blocks\.0\.attn\.to_q\.weight "
                       r"is a DF11-coded weight .* keep a LoRA adapter unmerged .*"
                       r"model\.dequantize\(\)"):
        model.fuse_lora(lora_scale=1.0, safe_fusing=safe_fusing)
    check_equal(output(model), output(ref))
    model.unfuse_lora()  # nothing was fused: nothing to undo
    check_equal(output(model), output(ref))


def test_coded_weight_values_are_refused(df11_dir):
    """A coded Linear's weight outside its forward has the BF16 weight's shape, dtype and
    device, and no values: reading them (which would give the last decoded layer's) raises."""
    model = df11.from_pretrained(df11_dir, device="cpu")
    ref = dict(bf16_model().named_parameters())
    linear = model.get_submodule("single_transformer_blocks.1.proj_out")
    w = linear.weight
    want = ref["single_transformer_blocks.1.proj_out.weight"]
    assert (w.shape, w.dtype, w.device) == (want.shape, want.dtype, want.device)
    assert model.state_dict()["single_transformer_blocks.1.proj_out.weight"] is w
    for read in (lambda: w.clone(), lambda: w.data.sum(), lambda: w.float(),
                 lambda: w.data.add_(1)):
        with pytest.raises(RuntimeError, match="proj_out.weight is a DF11-coded weight"):
            read()


def test_keep_in_fp32_modules_as_diffusers_loads_them(tmp_path):
    """A class with _keep_in_fp32_modules (Wan): those parameters are float32 in the BF16
    model diffusers loads (and in its folder, stored raw), and in the model df11 builds."""
    from diffusers import WanTransformer3DModel
    torch.manual_seed(0)
    WanTransformer3DModel(
        patch_size=(1, 2, 2), num_attention_heads=2, attention_head_dim=16, in_channels=4,
        out_channels=4, text_dim=32, freq_dim=16, ffn_dim=64, num_layers=2,
        rope_max_seq_len=32).save_pretrained(str(tmp_path / "f32"))
    ref = WanTransformer3DModel.from_pretrained(str(tmp_path / "f32"),
                                                torch_dtype=torch.bfloat16).eval()
    ref.save_pretrained(str(tmp_path / "bf16"))
    model = df11.from_pretrained(
        models.df11_compress(str(tmp_path / "bf16"), str(tmp_path / "df11")), device="cpu")
    float32 = {n for n, p in ref.named_parameters() if p.dtype == torch.float32}
    # The coded weights (BF16) are no parameters of the DF11 model; the rest are.
    dtypes = {n: p.dtype for n, p in model.named_parameters()}
    assert float32 and {n for n, d in dtypes.items() if d == torch.float32} == float32
    assert set(dtypes.values()) == {torch.float32, torch.bfloat16}
    assert ({n: b.dtype for n, b in model.named_buffers()} ==
            {n: b.dtype for n, b in ref.named_buffers()})
    g = torch.Generator().manual_seed(1)
    inputs = dict(hidden_states=torch.randn(1, 4, 2, 8, 8, generator=g).to(torch.bfloat16),
                  timestep=torch.tensor([500]),
                  encoder_hidden_states=torch.randn(1, 6, 32, generator=g).to(torch.bfloat16))
    with torch.no_grad():
        check_equal(model(**inputs, return_dict=False)[0], ref(**inputs, return_dict=False)[0])


def stored_groups(folder):
    """Every coded group's stored tensors of a folder, by name."""
    parts = ("luts", "encoded_exponent", "sign_mantissa", "output_positions", "gaps",
             "split_positions")
    return {name: t for name, t in models.saved_tensors(folder).items()
            if name.rsplit(".", 1)[-1] in parts}


@pytest.mark.parametrize("folder", ["df11", "official"])
def test_save_pretrained_writes_a_df11_folder(df11_dir, bf16_output, tmp_path, folder):
    """diffusers' own save_pretrained on a DF11 model writes the coded groups as stored (not
    only the raw tensors) and config.json's DF11 keys; the folder loads again with the BF16
    model's outputs."""
    src = df11_dir if folder == "df11" else OFFICIAL_DIR
    kwargs = {} if folder == "df11" else dict(bfloat16_model=models.flux_skeleton())
    model = df11.from_pretrained(src, device="cpu", **kwargs)
    out = str(tmp_path / "saved")
    model.save_pretrained(out)
    with open(os.path.join(out, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    assert config["_class_name"] == "FluxTransformer2DModel"
    assert config["quantization_config"] == {"quant_method": "df11"}
    assert "pattern_dict" in config["dfloat11_config"] and "df11" not in config["dfloat11_config"]
    want, got = stored_groups(src), stored_groups(out)
    assert want and sorted(got) == sorted(want)
    for name, t in want.items():
        assert torch.equal(got[name], t), name
    check_equal(output(df11.from_pretrained(out, device="cpu")), bf16_output)


def test_a_save_that_splits_groups_between_shards_loads(df11_dir, tmp_path, bf16_output):
    """diffusers' save_pretrained shards tensor by tensor (at 10GB by default, which a FLUX
    transformer's DF11 folder exceeds): at a small max_shard_size a coded group's stored
    tensors land in two shards, which DF11 readers accept in this layout (spec/DF11.md 7.8);
    df11.from_pretrained loads the folder with the same output."""
    out = str(tmp_path / "saved")
    df11.from_pretrained(df11_dir, device="cpu").save_pretrained(out, max_shard_size="4KB")
    assert models.split_groups(out)
    check_equal(output(df11.from_pretrained(out, device="cpu")), bf16_output)
