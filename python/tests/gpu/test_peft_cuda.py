"""LoRA (PEFT) over a DF11 model's frozen coded weights on CUDA (skipped without a GPU), the
default mode, through both loaders (df11.from_pretrained and transformers' own
from_pretrained): with the same adapter, one training step's logits and the LoRA parameters'
gradients are torch.equal to the BF16 model's on the same GPU, with and without gradient
checkpointing. Both models use transformers' eager attention: the comparison is of df11's
weights, so every kernel on both sides must give the same bits run to run (checked on BF16
itself first)."""
import pytest
import torch

import df11
import models

pytestmark = [pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU"),
              pytest.mark.filterwarnings("ignore::UserWarning")]
peft = pytest.importorskip("peft")

from test_peft import lora, loss_and_grads  # noqa: E402 (after the skip)

EAGER = dict(attn_implementation="eager")


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("peft-cuda")


def step(model, ids):
    logits, grads = loss_and_grads(model, ids)
    torch.cuda.synchronize()
    return logits, grads


def assert_equal_steps(want, got):
    (want_logits, want_grads), (logits, grads) = want, got
    assert torch.equal(logits, want_logits), \
        f"max |diff| {(logits.float() - want_logits.float()).abs().max().item()}"
    assert grads.keys() == want_grads.keys() and grads
    for name in grads:
        assert torch.equal(grads[name], want_grads[name]), name


def bf16(bf16_dir):
    from transformers import AutoModelForCausalLM
    return AutoModelForCausalLM.from_pretrained(bf16_dir, dtype=torch.bfloat16,
                                                device_map="cuda", **EAGER)


def df11_models(df11_dir):
    from transformers import AutoModelForCausalLM
    yield df11.from_pretrained(df11_dir, device="cuda", **EAGER)
    yield AutoModelForCausalLM.from_pretrained(df11_dir, device_map="cuda", **EAGER)


@pytest.mark.parametrize("family", ["llama", "qwen3", "gemma3", "phi3"])
def test_lora_logits_and_gradients_equal_bf16_on_cuda(work, family):
    bf16_dir, df11_dir = models.llm_folders(work, family)
    ref = lora(bf16(bf16_dir), 5)
    ids = models.llm_inputs(ref.config.vocab_size, 2).cuda()
    want = step(ref, ids)
    assert_equal_steps(want, step(ref, ids))  # BF16 itself gives the same bits again
    for base in df11_models(df11_dir):
        got = lora(base, 5)
        assert got.base_model.model.df11.mode == "decode"
        assert_equal_steps(want, step(got, ids))
        del got, base


@pytest.mark.parametrize("reentrant", [False, True])
def test_lora_with_gradient_checkpointing_on_cuda(work, reentrant):
    """Each block's forward runs again inside the backward pass, its weights decoded again."""
    bf16_dir, df11_dir = models.llm_folders(work, "llama")
    bases = [bf16(bf16_dir), next(df11_models(df11_dir))]
    for base in bases:
        base.gradient_checkpointing_enable(
            gradient_checkpointing_kwargs={"use_reentrant": reentrant})
        base.train()
    ref, got = (lora(base, 5) for base in bases)
    ids = models.llm_inputs(ref.config.vocab_size, 2).cuda()
    assert_equal_steps(step(ref, ids), step(got, ids))
