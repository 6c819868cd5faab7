"""Vision-language models of transformers beside Gemma 3 (test_multimodal.py), as `df11
compress` writes them: LLaVA, LLaVA-NeXT, LLaVA-OneVision, Qwen2-VL, Qwen2.5-VL, Qwen3-VL,
Qwen3-VL-MoE, Mistral 3, PaliGemma, Idefics3, SmolVLM, InternVL, Aya Vision, Llama 4, Gemma 4. AutoModelForCausalLM does not map their configs, so
df11.from_pretrained builds the class config.json's `architectures` names; Mistral 3 and
PaliGemma tie the head at the config's top level while their text config says not (transformers
5 ties by the former). Through both doors the logits of a text prompt are torch.equal to the
BF16 model's, the vision tower's coded blocks are served as the language model's, and what
save_pretrained writes loads again with the same logits."""
import pytest
import torch

import df11
import models

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(scope="module", params=sorted(models.VISION_LANGUAGE))
def family(request, tmp_path_factory):
    from transformers import AutoModelForImageTextToText
    name = request.param
    work = tmp_path_factory.mktemp(name)
    bf16_dir, df11_dir = str(work / "bf16"), str(work / "df11")
    try:
        models.save_vision_language(bf16_dir, name)
    except (KeyError, ValueError):
        pytest.skip(f"this transformers has no {name}")
    models.df11_compress(bf16_dir, df11_dir)
    ref = AutoModelForImageTextToText.from_pretrained(bf16_dir, dtype=torch.bfloat16).eval()
    ids = models.llm_inputs(400, 1, 12)
    with torch.no_grad():
        want = ref(input_ids=ids).logits
    return name, work, df11_dir, ids, want


def load(how, path, device="cpu"):
    if how == "df11":
        return df11.from_pretrained(path, device=device)
    from transformers import AutoModelForImageTextToText
    return AutoModelForImageTextToText.from_pretrained(path, device_map=device)


def check_bits(model, ids, want):
    with torch.no_grad():
        got = model(input_ids=ids.to(want.device)).logits
    assert torch.equal(got.view(torch.int16), want.view(torch.int16)), \
        f"max |diff| {(got.float() - want.float()).abs().max().item()}"


@pytest.mark.parametrize("how", ["df11", "transformers"])
def test_text_logits_equal_bf16_and_save_round_trips(family, how):
    name, work, df11_dir, ids, want = family
    model = load(how, df11_dir)
    assert type(model).__name__.endswith("ForConditionalGeneration"), type(model).__name__
    # The vision tower's blocks decode just before use, as the language model's do.
    served = {rt.group.name for rt in model.df11.runtimes}
    assert any("vision" in g or "visual" in g for g in served), sorted(served)
    check_bits(model, ids, want)
    out = str(work / f"saved-{how}")
    model.save_pretrained(out)
    for again in ("df11", "transformers"):
        check_bits(load(again, out), ids, want)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("how", ["df11", "transformers"])
def test_text_logits_equal_bf16_on_cuda(family, how):
    from transformers import AutoModelForImageTextToText
    name, work, df11_dir, ids, _ = family
    ref = AutoModelForImageTextToText.from_pretrained(str(work / "bf16"), dtype=torch.bfloat16,
                                                      device_map="cuda").eval()
    with torch.no_grad():
        want = ref(input_ids=ids.cuda()).logits
    check_bits(load(how, df11_dir, "cuda"), ids, want)
