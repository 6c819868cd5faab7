"""A multimodal checkpoint (Gemma 3 with its vision tower) as DF11, on the CPU: its files name
the weights as Google's checkpoints do ("language_model.model.layers.0..."), and transformers
renames them at load ("model.language_model.layers.0..."); its vision tower under the names
transformers 5 writes ("vision_tower.encoder...") or under Google's ("vision_tower.vision_model.
encoder..."). Through df11.from_pretrained and through transformers' own from_pretrained, the
logits and greedy tokens with an image equal the BF16 model's bit for bit (on a GPU too, where
there is one); save_pretrained writes the folder it came from again (every tensor under its
name, with its bytes), which both load with the same logits and which `df11 verify --against`
the BF16 checkpoint passes."""
import os
import subprocess

import pytest
import torch

import df11
import models

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(scope="module", params=["transformers", "google"])
def folders(tmp_path_factory, request):
    """The checkpoint as transformers 5 saves it, and as Google's on the Hub name it."""
    from transformers import Gemma3ForConditionalGeneration
    work = tmp_path_factory.mktemp(f"gemma3-vision-{request.param}")
    bf16_dir, df11_dir = str(work / "bf16"), str(work / "df11")
    models.save_gemma3_vision(bf16_dir, request.param)
    models.df11_compress(bf16_dir, df11_dir)
    ref = Gemma3ForConditionalGeneration.from_pretrained(bf16_dir, dtype=torch.bfloat16).eval()
    with torch.no_grad():
        want = ref(**models.gemma3_vision_inputs()).logits
    return work, bf16_dir, df11_dir, ref, want


def load(how, path, device="cpu"):
    if how == "df11":
        return df11.from_pretrained(path, device=device)
    from transformers import AutoModelForImageTextToText
    return AutoModelForImageTextToText.from_pretrained(path, device_map=device)


def inputs(device="cpu"):
    return {k: v.to(device) for k, v in models.gemma3_vision_inputs().items()}


def tensors(folder):
    """{name: the tensor's bytes} of the folder's safetensors files."""
    from safetensors.torch import load_file
    out = {}
    for f in sorted(os.listdir(folder)):
        if f.endswith(".safetensors"):
            out.update({k: v.reshape(-1).view(torch.uint8)
                        for k, v in load_file(os.path.join(folder, f)).items()})
    return out


def logits(model, device="cpu"):
    with torch.no_grad():
        return model(**inputs(device)).logits


def test_checkpoint_names_are_not_the_models(folders, request):
    from safetensors import safe_open
    _, bf16_dir, _, ref, _ = folders
    with safe_open(f"{bf16_dir}/model.safetensors", "pt") as f:
        stored = set(f.keys())
    assert "language_model.model.layers.0.self_attn.q_proj.weight" in stored
    tower = "vision_tower.vision_model." if request.node.callspec.params["folders"] == "google" \
        else "vision_tower."
    assert f"{tower}encoder.layers.0.self_attn.q_proj.weight" in stored
    names = dict(ref.named_parameters())
    assert "model.language_model.layers.0.self_attn.q_proj.weight" in names
    assert "model.vision_tower.encoder.layers.0.self_attn.q_proj.weight" in names


@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize("how", ["df11", "transformers"])
def test_logits_and_tokens_equal_bf16(folders, how, device):
    _, bf16_dir, df11_dir, ref, want = folders
    if device == "cuda":
        if not torch.cuda.is_available():
            pytest.skip("no CUDA GPU")
        from transformers import Gemma3ForConditionalGeneration
        ref = Gemma3ForConditionalGeneration.from_pretrained(
            bf16_dir, dtype=torch.bfloat16, device_map="cuda").eval()
        want = logits(ref, device)
    model = load(how, df11_dir, device)
    got = logits(model, device)
    assert torch.equal(got.view(torch.int16), want.view(torch.int16))
    # Every coded weight is served from the folder: the blocks of both towers and the
    # attention-pooling head's out_proj (read by nn.MultiheadAttention itself).
    assert len(model.df11.runtimes) >= 4
    kw = dict(**inputs(device), do_sample=False, max_new_tokens=6, min_new_tokens=6)
    with torch.no_grad():
        assert torch.equal(model.generate(**kw), ref.generate(**kw))


@pytest.mark.parametrize("how", ["df11", "transformers"])
def test_save_pretrained_round_trip(folders, how):
    work, bf16_dir, df11_dir, _, want = folders
    out = str(work / f"saved-{how}")
    load(how, df11_dir).save_pretrained(out)
    for again in ("df11", "transformers"):
        got = logits(load(again, out))
        assert torch.equal(got.view(torch.int16), want.view(torch.int16)), again
    # Nothing changed: the folder it came from, every tensor under its name with its bytes.
    saved, source = tensors(out), tensors(df11_dir)
    assert sorted(saved) == sorted(source)
    assert all(torch.equal(saved[k], source[k]) for k in source)
    proc = subprocess.run([models.df11_cli(), "verify", out, "--against", bf16_dir],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_save_pretrained_without_the_load_record(folders):
    """A model whose load transformers did not record (`_weight_conversions`, as a model
    loaded by another path has none) saves under transformers' own names: a group it renames
    (Google's "vision_tower.vision_model.encoder.layers.<n>" becomes "vision_tower.encoder.
    layers.<n>") gets a pattern_dict key that all of its blocks match, and the folder loads
    again through both doors with the same logits."""
    work, _, df11_dir, _, want = folders
    model = load("df11", df11_dir)
    model._weight_conversions = None
    out = str(work / "saved-unrecorded")
    model.save_pretrained(out)
    for again in ("df11", "transformers"):
        got = logits(load(again, out))
        assert torch.equal(got.view(torch.int16), want.view(torch.int16)), again


def test_renamed_pattern_dict_key():
    from df11.hf_quantizer import _renamed_key
    key = r"vision_tower\.vision_model\.encoder\.layers\.\d+"
    assert _renamed_key(key, "vision_tower.vision_model.encoder.layers.1",
                        "vision_tower.encoder.layers.1") == r"vision_tower\.encoder\.layers\.\d+"
    assert _renamed_key(r"language_model\.model\.layers\.\d+", "language_model.model.layers.3",
                        "model.language_model.layers.3") == r"model\.language_model\.layers\.\d+"
    # A key that does not spell the old name's prefix out: the new name alone.
    assert _renamed_key(r"a\.(?:b)\.x", "a.b.x", "c.x") == r"c\.x"


OFFICIAL = os.path.join(models.FIXTURES, "gemma3-vision")  # tests/interop/fixtures/README.md


@pytest.fixture(scope="module")
def official_want():
    from transformers import Gemma3ForConditionalGeneration
    ref = Gemma3ForConditionalGeneration.from_pretrained(os.path.join(OFFICIAL, "bf16"),
                                                         dtype=torch.bfloat16).eval()
    return logits(ref)


@pytest.mark.parametrize("how", ["df11", "transformers"])
def test_official_encoders_module_files(official_want, how, tmp_path):
    """The dfloat11 encoder's save_single_file=False output of Gemma 3 with its vision tower,
    under transformers 5's module names (a file per coded module, no index): both doors give
    BF16's logits with an image, and what save_pretrained writes loads again with them."""
    folder = os.path.join(OFFICIAL, "official-modules")
    model = load(how, folder)
    assert torch.equal(logits(model).view(torch.int16), official_want.view(torch.int16))
    model.save_pretrained(str(tmp_path / "saved"))
    for again in ("df11", "transformers"):
        got = logits(load(again, str(tmp_path / "saved")))
        assert torch.equal(got.view(torch.int16), official_want.view(torch.int16)), again


@pytest.mark.parametrize("how", ["df11", "transformers"])
def test_official_encoders_single_file(official_want, how):
    """Its default output (config.json holding dfloat11_config alone): the model's config comes
    from the caller, as bfloat16_model= (df11) or config= (transformers)."""
    model = load_with_config(how, os.path.join(OFFICIAL, "official-single"))
    assert torch.equal(logits(model).view(torch.int16), official_want.view(torch.int16))


def load_with_config(how, folder):
    """A folder whose config.json holds dfloat11_config alone, given the model's config."""
    from transformers import AutoConfig, AutoModelForImageTextToText
    config = AutoConfig.from_pretrained(os.path.join(OFFICIAL, "bf16"))
    if how == "df11":
        # Built as transformers builds it (dtype=): its rotary tables stay float32.
        skeleton = AutoModelForImageTextToText.from_config(config, dtype=torch.bfloat16)
        return df11.from_pretrained(folder, bfloat16_model=skeleton, device="cpu")
    return AutoModelForImageTextToText.from_pretrained(
        folder, config=config, quantization_config=df11.Df11Config())


# Gemma 3's module names under transformers before 4.52 (Gemma3ForConditionalGeneration held a
# Gemma3ForCausalLM as `language_model`, and SigLIP's `vision_model` under `vision_tower`):
# the names the dfloat11 encoder wrote for the coded groups and their pattern_dict then.
_OLD_NAMES = (("model.language_model.", "language_model.model."),
              ("lm_head.", "language_model.lm_head."),
              ("model.vision_tower.", "vision_tower.vision_model."),
              ("model.multi_modal_projector.", "multi_modal_projector."))


def _old_name(name, pairs):
    for new, old in pairs:
        if name.startswith(new):
            return old + name[len(new):]
    raise AssertionError(f"no earlier name for {name}")


@pytest.mark.parametrize("how", ["df11", "transformers"])
def test_official_encoders_single_file_earlier_names(official_want, how, tmp_path):
    """The encoder's default output of the same model under the earlier module names (every
    tensor and pattern_dict key renamed, the bytes unchanged): both doors map them onto
    transformers 5's model, with BF16's logits."""
    import json
    from safetensors.torch import load_file, save_file
    source = os.path.join(OFFICIAL, "official-single")
    folder = str(tmp_path / "earlier")
    os.makedirs(folder)
    stored = load_file(os.path.join(source, "model.safetensors"))
    save_file({_old_name(k, _OLD_NAMES): v for k, v in stored.items()},
              os.path.join(folder, "model.safetensors"), metadata={"format": "pt"})
    with open(os.path.join(source, "config.json"), encoding="utf-8") as f:
        config_json = json.load(f)
    escaped = tuple((new.replace(".", r"\."), old.replace(".", r"\."))
                    for new, old in _OLD_NAMES)
    patterns = config_json["dfloat11_config"]["pattern_dict"]
    config_json["dfloat11_config"]["pattern_dict"] = {
        _old_name(k + r"\." if k == "lm_head" else k, escaped).removesuffix(r"\."): v
        for k, v in patterns.items()}
    assert r"language_model\.model\.layers\.\d+" in config_json["dfloat11_config"]["pattern_dict"]
    with open(os.path.join(folder, "config.json"), "w", encoding="utf-8") as f:
        json.dump(config_json, f)
    model = load_with_config(how, folder)
    assert torch.equal(logits(model).view(torch.int16), official_want.view(torch.int16))
