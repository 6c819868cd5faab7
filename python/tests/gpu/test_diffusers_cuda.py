"""diffusers models on CUDA (skipped without a GPU or without diffusers): the tiny FLUX
transformer built from its config.json's class (no bfloat16_model=), LoRA adapters loaded the
diffusers ways, and diffusers' own save_pretrained, each output torch.equal to the BF16 model's
on the same GPU (with the same adapter). The CPU suite (test_diffusers_cpu.py) checks the same
on the CPU, and the errors."""
import os

import pytest
import torch

import df11
import models

pytestmark = [pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU"),
              pytest.mark.filterwarnings("ignore::UserWarning")]
diffusers = pytest.importorskip("diffusers")
pytest.importorskip("peft")

from test_diffusers_cpu import (BF16_DIR, OFFICIAL_DIR, check_equal,  # noqa: E402 (after the skip)
                                check_lora_adapter, lora_state_dict, stored_groups,
                                tiny_pipeline)

CUDA = torch.device("cuda", 0)


@pytest.fixture(scope="module")
def df11_dir(tmp_path_factory):
    return models.df11_compress(BF16_DIR, str(tmp_path_factory.mktemp("flux-cuda") / "df11"))


def bf16_model():
    return diffusers.FluxTransformer2DModel.from_pretrained(
        BF16_DIR, torch_dtype=torch.bfloat16).to(CUDA).eval()


@torch.no_grad()
def output(model):
    out = model(**models.flux_inputs("cuda"), return_dict=False)[0]
    torch.cuda.synchronize()
    return out


@pytest.fixture(scope="module")
def bf16_output():
    ref = bf16_model()
    want = output(ref)
    # The comparison is of df11's weights: the BF16 model must give the same bits twice.
    assert torch.equal(output(ref), want)
    return want


@pytest.mark.parametrize("folder", ["df11", "official"])
def test_model_built_from_config_on_cuda(df11_dir, bf16_output, folder):
    path = df11_dir if folder == "df11" else OFFICIAL_DIR
    model = df11.from_pretrained(path, device="cuda")
    assert type(model) is diffusers.FluxTransformer2DModel
    assert {rt.device for rt in model.df11.runtimes} == {CUDA}
    assert not [n for n, p in model.named_parameters() if p.device != CUDA]
    check_equal(output(model), bf16_output)


def test_load_lora_adapter_on_cuda(df11_dir, bf16_output):
    check_lora_adapter(bf16_model(), df11.from_pretrained(df11_dir, device="cuda"), output,
                       bf16_output)


def test_pipeline_load_lora_weights_on_cuda(df11_dir, bf16_output):
    """FluxPipeline.load_lora_weights, which finds each target's base weight in
    transformer.state_dict() (a placeholder on the GPU) and puts the adapter on its device."""
    ref, model = bf16_model(), df11.from_pretrained(df11_dir, device="cuda")
    for m in (ref, model):
        tiny_pipeline(m).load_lora_weights(lora_state_dict(), adapter_name="style")
    lora = [p for n, p in model.named_parameters() if "lora_" in n]
    assert lora and {p.device for p in lora} == {CUDA}
    want = output(ref)
    assert not torch.equal(want, bf16_output)
    check_equal(output(model), want)


def test_save_pretrained_on_cuda(df11_dir, bf16_output, tmp_path):
    """diffusers' save_pretrained of a model loaded on the GPU writes the coded groups as stored
    (taken from the folder, not from the device); the folder loads again with the same output."""
    model = df11.from_pretrained(df11_dir, device="cuda")
    out = str(tmp_path / "saved")
    model.save_pretrained(out)
    want, got = stored_groups(df11_dir), stored_groups(out)
    assert want and sorted(got) == sorted(want)
    for name, t in want.items():
        assert torch.equal(got[name], t), name
    assert os.path.isfile(os.path.join(out, "config.json"))
    check_equal(output(df11.from_pretrained(out, device="cuda")), bf16_output)
