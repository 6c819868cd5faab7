"""LoRA (PEFT) over a DF11 model's frozen coded weights, on the CPU: with the same adapter, the
logits and the LoRA parameters' gradients are torch.equal to those of the BF16 model, for every
family of the interop suite (the MoE family's fused experts included). A block's
backward needs its weights again after later blocks decoded into the shared buffer, so each unit
decodes again before its backward."""

import pytest
import torch

import df11
import models

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
peft = pytest.importorskip("peft")


def lora(model, seed):
    """A LoRA adapter on the attention's q and v (Phi-3's fused qkv_proj) and the output
    projection, and on the MLP's down_proj where it is an nn.Linear (not fused experts)."""
    names = {n.rsplit(".", 1)[-1] for n, m in model.named_modules()
             if isinstance(m, torch.nn.Linear) or type(m).__name__.endswith("Linear")}
    targets = sorted(names & {"q_proj", "v_proj", "qkv_proj", "o_proj", "down_proj"})
    config = peft.LoraConfig(r=4, lora_alpha=8, target_modules=targets,
                             lora_dropout=0.0, init_lora_weights=False)
    torch.manual_seed(seed)
    return peft.get_peft_model(model, config)


def loss_and_grads(model, ids):
    model.zero_grad(set_to_none=True)
    out = model(input_ids=ids, labels=ids)
    out.loss.backward()
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters()
             if p.requires_grad}
    return out.logits.detach(), grads


def assert_same_step(ref, got):
    """One training step's logits and LoRA gradients: torch.equal between the two models."""
    ids = models.llm_inputs(ref.config.vocab_size, 2)
    want_logits, want_grads = loss_and_grads(ref, ids)
    logits, grads = loss_and_grads(got, ids)
    assert torch.equal(logits, want_logits)
    assert grads.keys() == want_grads.keys() and grads
    for name in grads:
        assert torch.equal(grads[name], want_grads[name]), name


@pytest.mark.parametrize("family", models.FAMILIES)
def test_lora_logits_and_gradients_equal_bf16(tmp_path, family):
    bf16_dir, df11_dir = str(tmp_path / "bf16"), str(tmp_path / "df11")
    models.build_llm(family).save_pretrained(bf16_dir)
    models.df11_compress(bf16_dir, df11_dir)
    from transformers import AutoModelForCausalLM
    ref = lora(AutoModelForCausalLM.from_pretrained(bf16_dir, dtype=torch.bfloat16), 5)
    got = lora(df11.from_pretrained(df11_dir, device="cpu"), 5)
    assert_same_step(ref, got)


@pytest.mark.parametrize("family", ["llama", "qwen3moe"])
@pytest.mark.parametrize("reentrant", [False, True])
def test_lora_with_gradient_checkpointing(tmp_path, family, reentrant):
    """LoRA training as it is usually run, with transformers' gradient checkpointing: each
    block runs its forward again inside the backward pass (its weights decoded again by its
    pre-hook); logits and gradients torch.equal to BF16's, checkpointed the same way."""
    bf16_dir, df11_dir = str(tmp_path / "bf16"), str(tmp_path / "df11")
    models.build_llm(family).save_pretrained(bf16_dir)
    models.df11_compress(bf16_dir, df11_dir)
    from transformers import AutoModelForCausalLM
    bases = [AutoModelForCausalLM.from_pretrained(bf16_dir, dtype=torch.bfloat16),
             df11.from_pretrained(df11_dir, device="cpu")]
    for base in bases:
        base.gradient_checkpointing_enable(
            gradient_checkpointing_kwargs={"use_reentrant": reentrant})
        base.train()
    ref, got = (lora(base, 5) for base in bases)
    assert_same_step(ref, got)


def test_saved_adapter_loads_onto_the_df11_model(tmp_path, llama_folders):
    """An adapter trained on the BF16 model (PeftModel.from_pretrained) gives the DF11 model the
    BF16 model's logits with that adapter."""
    _, bf16_dir, df11_dir = llama_folders
    from transformers import AutoModelForCausalLM
    ref = lora(AutoModelForCausalLM.from_pretrained(bf16_dir, dtype=torch.bfloat16), 9)
    ref.save_pretrained(str(tmp_path / "adapter"))
    got = peft.PeftModel.from_pretrained(df11.from_pretrained(df11_dir, device="cpu"),
                                         str(tmp_path / "adapter"))
    ids = models.llm_inputs(ref.config.vocab_size, 2)
    with torch.no_grad():
        assert torch.equal(got(input_ids=ids).logits, ref(input_ids=ids).logits)


def test_transformers_load_adapter_equals_bf16(tmp_path, llama_folders):
    """transformers' own PEFT integration: model.load_adapter(path) on a DF11 model loaded by
    transformers' from_pretrained gives the BF16 model's logits with the same load_adapter."""
    _, bf16_dir, df11_dir = llama_folders
    from transformers import AutoModelForCausalLM
    lora(AutoModelForCausalLM.from_pretrained(bf16_dir, dtype=torch.bfloat16), 9).save_pretrained(
        str(tmp_path / "adapter"))
    ref = AutoModelForCausalLM.from_pretrained(bf16_dir, dtype=torch.bfloat16)
    got = AutoModelForCausalLM.from_pretrained(df11_dir)
    for model in (ref, got):
        model.load_adapter(str(tmp_path / "adapter"))
    ids = models.llm_inputs(ref.config.vocab_size, 2)
    base = AutoModelForCausalLM.from_pretrained(bf16_dir, dtype=torch.bfloat16)
    with torch.no_grad():
        want = ref(input_ids=ids).logits
        assert not torch.equal(want, base(input_ids=ids).logits)  # the adapter is in use
        assert torch.equal(got(input_ids=ids).logits, want)


def logits(model, ids):
    with torch.no_grad():
        return model(input_ids=ids).logits


@pytest.mark.parametrize("merge", ["merge_adapter", "merge_and_unload"])
@pytest.mark.parametrize("safe_merge", [False, True])
def test_merging_is_refused_and_changes_nothing(llama_folders, merge, safe_merge):
    """Merging would add the LoRA delta to the shared decode buffer, which the next decode
    overwrites: PEFT's merges raise before any weight is changed, saying what to do instead,
    and the model keeps the BF16 model's logits with the adapter unmerged."""
    _, bf16_dir, df11_dir = llama_folders
    from transformers import AutoModelForCausalLM
    ref = lora(AutoModelForCausalLM.from_pretrained(bf16_dir, dtype=torch.bfloat16), 3)
    got = lora(df11.from_pretrained(df11_dir, device="cpu"), 3)
    ids = models.llm_inputs(ref.config.vocab_size, 2)
    want = logits(ref, ids)
    with pytest.raises(RuntimeError, match=r"df11: model\.layers\.0\.self_attn\.q_proj\.weight "
                       r"is a DF11-coded weight .* keep a LoRA adapter unmerged .*"
                       r"model\.dequantize\(\)"):
        getattr(got, merge)(safe_merge=safe_merge)
    assert not any(getattr(m, "merged", False) for m in got.modules())
    assert torch.equal(logits(got, ids), want)
    with pytest.warns(UserWarning, match="Already unmerged"):  # nothing to undo
        got.unmerge_adapter()
    assert torch.equal(logits(got, ids), want)


def test_unload_gives_the_base_model(llama_folders):
    """unload() (no merge) takes the adapter out: the BF16 model's logits without it."""
    _, bf16_dir, df11_dir = llama_folders
    ref = models.bf16_llm(bf16_dir)
    got = lora(df11.from_pretrained(df11_dir, device="cpu"), 3).unload()
    ids = models.llm_inputs(ref.config.vocab_size, 2)
    assert torch.equal(logits(got, ids), logits(ref, ids))
