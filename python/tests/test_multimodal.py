"""A multimodal checkpoint (Gemma 3 with its vision tower) as DF11, on the CPU: its files name
the weights as Google's checkpoints do ("language_model.model.layers.0..."), and transformers
renames them at load ("model.language_model.layers.0..."). Through df11.from_pretrained and
through transformers' own from_pretrained, the logits and greedy tokens with an image equal
the BF16 model's bit for bit (on a GPU too, where there is one); save_pretrained writes a folder that both load again with the
same logits and that `df11 verify --against` the BF16 checkpoint passes."""
import subprocess

import pytest
import torch

import df11
import models

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    from transformers import Gemma3ForConditionalGeneration
    work = tmp_path_factory.mktemp("gemma3-vision")
    bf16_dir, df11_dir = str(work / "bf16"), str(work / "df11")
    models.build_gemma3_vision().save_pretrained(bf16_dir)
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


def logits(model, device="cpu"):
    with torch.no_grad():
        return model(**inputs(device)).logits


def test_checkpoint_names_are_not_the_models(folders):
    from safetensors import safe_open
    _, bf16_dir, _, ref, _ = folders
    with safe_open(f"{bf16_dir}/model.safetensors", "pt") as f:
        stored = set(f.keys())
    assert "language_model.model.layers.0.self_attn.q_proj.weight" in stored
    assert "model.language_model.layers.0.self_attn.q_proj.weight" in dict(ref.named_parameters())


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
    proc = subprocess.run([models.df11_cli(), "verify", out, "--against", bf16_dir],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
