"""transformers architectures beyond the interop suite's decoder-only families, each a tiny
model with random weights saved in BF16, compressed by `df11 compress` and loaded through both
doors (df11.from_pretrained, which builds the class config.json's `architectures` names, and
the class's own from_pretrained): the output is torch.equal to the BF16 model's, its
parameters have BF16's dtypes, and what save_pretrained writes holds the folder's coded tensors
byte for byte and loads again with the same output.

- encoder-decoder and encoder models: T5 and UMT5 encoders (the text encoders of FLUX, SD3 and
  Wan), T5, BART and Whisper, whose encoder and decoder embeddings share one weight
  (`shared`, tied by transformers beside the head); BERT, XLM-R, ModernBERT and CLIP's text
  model; a base model (Qwen3Model) and a classifier (LlamaForSequenceClassification);
- models whose config ties the head where the model has none (BERT, ModernBERT: `df11
  compress` writes the tied head's copy, spec/DF11.md 7.4, which such a model ignores);
- decoder-only families of other shapes: MoE (Mixtral, OLMoE, GraniteMoE, PhiMoE, gpt-oss,
  MiniMax, Llama 4, DeepSeek-V4), hybrids (Falcon-H1, LFM2, Nemotron-H, whose experts have no
  gate; Qwen3-Next and Qwen3.5, linear attention with MoE), GPT-2's Conv1D, GPT-NeoX, Phi,
  Starcoder2, Cohere."""
import os

import pytest
import torch

import df11
import models

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

SMALL = dict(vocab_size=512, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
             head_dim=16, pad_token_id=0, bos_token_id=1, eos_token_id=2)
SEQ2SEQ = dict(d_model=64, d_ff=96, d_kv=16, num_layers=2, num_decoder_layers=2, num_heads=4,
               encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
               decoder_attention_heads=4, encoder_ffn_dim=96, decoder_ffn_dim=96,
               decoder_start_token_id=0, num_mel_bins=16, max_source_positions=64,
               max_target_positions=64, projection_dim=32, global_attn_every_n_layers=1)
MOE = dict(num_local_experts=8, num_experts=8, num_experts_per_tok=2,
           shared_expert_intermediate_size=32, tie_word_embeddings=False)

# (model_type, class, config arguments beside SMALL)
CASES = [
    ("t5", "T5EncoderModel", SEQ2SEQ), ("t5", "T5EncoderModel", dict(SEQ2SEQ, tie_word_embeddings=False)),
    ("umt5", "UMT5EncoderModel", dict(SEQ2SEQ, tie_word_embeddings=False)),
    ("t5", "T5ForConditionalGeneration", SEQ2SEQ),
    ("bart", "BartForConditionalGeneration", SEQ2SEQ),
    ("whisper", "WhisperForConditionalGeneration", SEQ2SEQ),
    ("bert", "BertModel", {}), ("xlm-roberta", "XLMRobertaModel", {}),
    ("modernbert", "ModernBertModel", SEQ2SEQ), ("clip_text_model", "CLIPTextModel", SEQ2SEQ),
    ("qwen3", "Qwen3Model", dict(tie_word_embeddings=True)),
    ("llama", "LlamaForSequenceClassification", {}),
    ("mixtral", "MixtralForCausalLM", MOE), ("olmoe", "OlmoeForCausalLM", MOE),
    ("granitemoe", "GraniteMoeForCausalLM", MOE), ("phimoe", "PhimoeForCausalLM", MOE),
    ("gpt_oss", "GptOssForCausalLM", dict(MOE, layer_types=["sliding_attention",
                                                            "full_attention"])),
    ("minimax", "MiniMaxForCausalLM", MOE), ("falcon_h1", "FalconH1ForCausalLM", {}),
    ("lfm2", "Lfm2ForCausalLM", {}), ("gpt2", "GPT2LMHeadModel", dict(n_embd=64, n_layer=2, n_head=4)),
    ("gpt_neox", "GPTNeoXForCausalLM", {}), ("phi", "PhiForCausalLM", {}),
    ("starcoder2", "Starcoder2ForCausalLM", {}), ("cohere", "CohereForCausalLM", {}),
    # experts without a gate (a fused up_proj [E, I, H] beside down_proj), Mamba mixers
    ("nemotron_h", "NemotronHForCausalLM", dict(MOE, n_routed_experts=8, n_shared_experts=1,
                                                moe_intermediate_size=32)),
    # linear-attention hybrids with MoE (Qwen3-Next, Qwen3.5), Llama 4's MoE
    ("qwen3_next", "Qwen3NextForCausalLM", dict(
        MOE, layer_types=["linear_attention", "full_attention"], linear_num_key_heads=2,
        linear_num_value_heads=4, linear_key_head_dim=16, linear_value_head_dim=16,
        moe_intermediate_size=32, decoder_sparse_step=1)),
    ("qwen3_5_moe_text", "Qwen3_5MoeForCausalLM", dict(
        MOE, layer_types=["linear_attention", "full_attention"], linear_num_key_heads=2,
        linear_num_value_heads=4, linear_key_head_dim=16, linear_value_head_dim=16,
        moe_intermediate_size=32)),
    ("llama4_text", "Llama4ForCausalLM", dict(MOE, intermediate_size_mlp=96)),
    # a conversion rule for attention names (".norm." -> ".kv_norm.") that the final norm's
    # name also matches: transformers keeps that name, as df11 must
    ("deepseek_v4", "DeepseekV4ForCausalLM", dict(MOE, n_routed_experts=8, n_shared_experts=1,
                                                  moe_intermediate_size=32)),
]


def case_id(case):
    model_type, cls_name, extra = case
    return cls_name + ("-untied" if extra.get("tie_word_embeddings") is False and
                       model_type in ("t5", "umt5") else "")


def run(model, cls_name, device="cpu"):
    ids = models.llm_inputs(500, 1, 12).to(device)
    with torch.no_grad():
        if cls_name.startswith("Whisper"):
            g = torch.Generator().manual_seed(2)
            features = torch.randn(1, 16, 128, generator=g).to(device, torch.bfloat16)
            out = model(input_features=features, decoder_input_ids=ids[:, :4])
        elif cls_name.endswith("ForConditionalGeneration"):
            out = model(input_ids=ids, decoder_input_ids=ids[:, :5])
        else:
            out = model(input_ids=ids)
    for key in ("logits", "last_hidden_state"):
        if getattr(out, key, None) is not None:
            return getattr(out, key)
    raise AssertionError(f"{cls_name}: no output to compare")


def check_bits(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    assert torch.equal(got.view(torch.int16), want.view(torch.int16)), \
        f"max |diff| {(got.float() - want.float()).abs().max().item()}"


@pytest.fixture(scope="module", params=CASES, ids=[case_id(c) for c in CASES])
def case(request, tmp_path_factory):
    import transformers
    from transformers import AutoConfig
    model_type, cls_name, extra = request.param
    cls = getattr(transformers, cls_name, None)
    if cls is None:
        pytest.skip(f"this transformers has no {cls_name}")
    config = AutoConfig.for_model(model_type, **{**SMALL, **extra})
    work = tmp_path_factory.mktemp(case_id(request.param))
    bf16_dir, df11_dir = str(work / "bf16"), str(work / "df11")
    torch.manual_seed(0)
    models.save_random_bf16(cls._from_config(config, dtype=torch.bfloat16), bf16_dir)
    models.df11_compress(bf16_dir, df11_dir)
    ref = cls.from_pretrained(bf16_dir, dtype=torch.bfloat16).eval()
    dtypes = {n: p.dtype for n, p in ref.named_parameters()}
    try:
        want = run(ref, cls_name)
    except RuntimeError as e:  # transformers 5.17's DeepSeek-V4 mixes float32 into a BF16 matmul
        pytest.skip(f"this transformers' {cls_name} does not run in BF16 itself: {e}")
    return cls, cls_name, work, df11_dir, want, dtypes


@pytest.mark.parametrize("how", ["df11", "transformers"])
def test_output_equals_bf16_and_save_round_trips(case, how):
    cls, cls_name, work, df11_dir, want, dtypes = case
    model = (df11.from_pretrained(df11_dir, device="cpu") if how == "df11"
             else cls.from_pretrained(df11_dir, device_map="cpu"))
    assert type(model) is cls and model.dtype == torch.bfloat16  # what save_pretrained writes
    # Its parameters (coded Linear weights are not) have BF16's dtypes.
    assert {n: p.dtype for n, p in model.named_parameters()}.items() <= dtypes.items()
    check_bits(run(model, cls_name), want)
    out = str(work / f"saved-{how}")
    model.save_pretrained(out)
    before, after = models.saved_tensors(df11_dir), models.saved_tensors(out)
    coded = [k for k in before if k.endswith(".encoded_exponent")]
    assert coded
    for key in before:
        group, _, part = key.rpartition(".")
        if part in models.CODED_PARTS and group + ".encoded_exponent" in before:
            assert torch.equal(after[key].view(torch.uint8), before[key].view(torch.uint8)), key
        else:  # what the model holds in float32 (DeepSeek-V4's), saved so, as transformers does
            assert torch.equal(after[key].to(before[key].dtype), before[key]), key
    for again in (df11.from_pretrained(out, device="cpu"),
                  cls.from_pretrained(out, device_map="cpu")):
        check_bits(run(again, cls_name), want)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("how", ["df11", "transformers"])
def test_output_equals_bf16_on_cuda(case, how):
    """On CUDA, against the BF16 model on the same GPU: the shared embeddings' sources held
    decoded there, the rest decoded before use."""
    cls, cls_name, work, df11_dir, _, _ = case
    ref = cls.from_pretrained(str(work / "bf16"), dtype=torch.bfloat16, device_map="cuda").eval()
    model = (df11.from_pretrained(df11_dir, device="cuda") if how == "df11"
             else cls.from_pretrained(df11_dir, device_map="cuda"))
    check_bits(run(model, cls_name, "cuda"), run(ref, cls_name, "cuda"))


def test_a_class_transformers_lacks_is_named(tmp_path):
    """config.json naming a model_type transformers knows but an architecture it has not, and
    a config AutoModelForCausalLM does not map: df11 says which and what to pass."""
    import json
    folder = str(tmp_path / "df11")
    bf16_dir = str(tmp_path / "bf16")
    models.build_llm("llama").save_pretrained(bf16_dir)
    models.df11_compress(bf16_dir, folder)
    path = os.path.join(folder, "config.json")
    with open(path, encoding="utf-8") as f:
        config = json.load(f)
    config.update(model_type="clip_vision_model", architectures=["NoSuchModel"])
    with open(path, "w", encoding="utf-8") as f:
        json.dump(config, f)
    with pytest.raises(ValueError, match=r"config\.json: no transformers class for "
                                         r"model_type 'clip_vision_model'.*bfloat16_model="):
        df11.from_pretrained(folder, device="cpu")
