"""transformers' own from_pretrained on CUDA for a folder the dfloat11 tools published (skipped
without a GPU): after `import df11` it loads by itself (transformers' config reader names the
df11 method), its logits torch.equal to BF16's; a passed Df11Config(mode="exec") gives the
execution mode, whose logits equal df11.from_pretrained(mode="exec")'s. Its state dict names
what BF16's names, and save_pretrained round trips."""
import os

import pytest
import torch

import df11
import models

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")


def test_official_folder_loads_by_itself_on_cuda():
    from transformers import AutoModelForCausalLM
    fixture = os.path.join(models.FIXTURES, "llama")
    official = os.path.join(fixture, "official")
    ref = models.bf16_llm(os.path.join(fixture, "bf16"), "cuda")
    ids = models.llm_inputs(ref.config.vocab_size, 2).cuda()
    model = AutoModelForCausalLM.from_pretrained(official, device_map="cuda")
    assert model.df11.mode == "decode"
    with torch.no_grad():
        assert torch.equal(model(input_ids=ids).logits, ref(input_ids=ids).logits)
    exec_model = AutoModelForCausalLM.from_pretrained(
        official, device_map="cuda", quantization_config=df11.Df11Config(mode="exec"))
    assert exec_model.df11.mode == "exec"
    direct = df11.from_pretrained(official, device="cuda", mode="exec")
    with torch.no_grad():
        assert torch.equal(exec_model(input_ids=ids).logits, direct(input_ids=ids).logits)


def test_state_dict_and_save_on_cuda(tmp_path):
    """On CUDA too the natively loaded model lists every name of BF16's state dict (the head
    decoded at load as a parameter), and save_pretrained writes a folder that loads again with
    BF16's logits."""
    from transformers import AutoModelForCausalLM
    fixture = os.path.join(models.FIXTURES, "llama")
    ref = models.bf16_llm(os.path.join(fixture, "bf16"), "cuda")
    ids = models.llm_inputs(ref.config.vocab_size, 2).cuda()
    model = AutoModelForCausalLM.from_pretrained(os.path.join(fixture, "official"),
                                                 device_map="cuda")
    assert set(model.state_dict()) == set(ref.state_dict())
    head = model.get_output_embeddings().weight
    assert isinstance(head, torch.nn.Parameter) and head.device.type == "cuda"
    model.save_pretrained(str(tmp_path / "saved"))
    again = AutoModelForCausalLM.from_pretrained(str(tmp_path / "saved"), device_map="cuda")
    with torch.no_grad():
        want = ref(input_ids=ids).logits
        assert torch.equal(model(input_ids=ids).logits, want)
        assert torch.equal(again(input_ids=ids).logits, want)


def test_a_new_head_on_cuda(tmp_path):
    """AutoModelForSequenceClassification on a causal LM's folder, on CUDA: transformers
    initializes the head the folder lacks (`score`) on the GPU, as from the BF16 checkpoint;
    with BF16's head weights the logits are BF16's, for df11's folder and the official one."""
    from transformers import AutoModelForSequenceClassification
    fixture = os.path.join(models.FIXTURES, "llama")
    ref = AutoModelForSequenceClassification.from_pretrained(
        os.path.join(fixture, "bf16"), num_labels=3, pad_token_id=0, dtype=torch.bfloat16,
        device_map="cuda")
    ids = models.llm_inputs(ref.config.vocab_size, 2).cuda()
    df11_dir = str(tmp_path / "df11")
    models.df11_compress(os.path.join(fixture, "bf16"), df11_dir)
    for folder in (df11_dir, os.path.join(fixture, "official")):
        model = AutoModelForSequenceClassification.from_pretrained(
            folder, num_labels=3, pad_token_id=0, device_map="cuda")
        assert model.score.weight.device.type == "cuda"
        with torch.no_grad():
            model.score.weight.copy_(ref.score.weight)
            assert torch.equal(model(input_ids=ids).logits, ref(input_ids=ids).logits), folder
