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

CASES = models.ARCHITECTURES


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
    _, cls_name, _ = request.param
    cls = getattr(transformers, cls_name, None)
    if cls is None:
        pytest.skip(f"this transformers has no {cls_name}")
    work = tmp_path_factory.mktemp(case_id(request.param))
    bf16_dir, df11_dir = str(work / "bf16"), str(work / "df11")
    models.save_architecture(bf16_dir, request.param)
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
