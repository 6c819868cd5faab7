"""DF11 models through df11.from_pretrained on the CPU: logits bit-identical (torch.equal) to
the BF16 model's, for a tiny model of each family, from folders written by `df11 compress`
and by the official dfloat11 encoder (the committed fixtures, tests/interop/fixtures/)."""
import os

import pytest
import torch

import df11
import models

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("models")


@torch.no_grad()
def logits(model, ids):
    return model(input_ids=ids).logits


def check_equal(a, b):
    assert a.shape == b.shape
    assert torch.equal(a, b), f"max |diff| {(a.float() - b.float()).abs().max().item()}"


@pytest.mark.parametrize("family", models.FAMILIES)
def test_df11_folder_logits_equal(work, family):
    bf16_dir, df11_dir = str(work / family / "bf16"), str(work / family / "df11")
    models.build_llm(family).save_pretrained(bf16_dir)
    models.df11_compress(bf16_dir, df11_dir)
    ref = models.bf16_llm(bf16_dir)
    model = df11.from_pretrained(df11_dir, device="cpu")
    ids = models.llm_inputs(ref.config.vocab_size, 2)
    check_equal(logits(model, ids), logits(ref, ids))
    # The blocks' weights are decoded per forward; the output head's group is held decoded
    # (it is multiplied whole), and an untied embedding's lookups decode the rows they name.
    assert len(model.df11.runtimes) >= ref.config.num_hidden_layers
    if family in ("qwen3", "gemma3"):  # tied: the head is the loaded embedding, as in BF16
        assert model.lm_head.weight is model.get_input_embeddings().weight
        assert len(model.df11.resident) == 1 and not model.df11.rows
    else:
        assert model.df11.resident == ["lm_head"] and len(model.df11.rows) == 1
    assert type(model.lm_head.weight) is torch.nn.Parameter
    check_equal(model.lm_head.weight, ref.lm_head.weight)
    # The load's phases (python -m df11.bench prints them): each timed, within the attach.
    phases = model.df11.load_seconds
    assert {"open", "model", "attach", "raw tensors", "load check"} <= set(phases)
    assert all(v >= 0 for v in phases.values())
    inner = sum(v for k, v in phases.items() if k not in ("open", "model", "attach"))
    assert inner <= phases["attach"]


@pytest.mark.parametrize("family", models.FAMILIES)
def test_df11_folder_greedy_equal(work, family):
    bf16_dir, df11_dir = str(work / family / "bf16"), str(work / family / "df11")
    if not os.path.isdir(df11_dir):
        pytest.skip("made by test_df11_folder_logits_equal")
    ref = models.bf16_llm(bf16_dir)
    model = df11.from_pretrained(df11_dir, device="cpu")
    ids = models.llm_inputs(ref.config.vocab_size, 3, length=8, seed=11)
    kw = dict(do_sample=False, max_new_tokens=8, min_new_tokens=8, eos_token_id=None,
              pad_token_id=0, attention_mask=torch.ones_like(ids))
    with torch.no_grad():
        assert torch.equal(model.generate(input_ids=ids, **kw), ref.generate(input_ids=ids, **kw))


def official_families():
    return sorted(f for f in os.listdir(models.FIXTURES)  # the language models
                  if os.path.isdir(os.path.join(models.FIXTURES, f))
                  and f not in models.OTHER_FIXTURES)


@pytest.mark.parametrize("family", official_families())
def test_official_folder_logits_equal(family):
    fixture = os.path.join(models.FIXTURES, family)
    ref = models.bf16_llm(os.path.join(fixture, "bf16"))
    try:
        model = df11.from_pretrained(os.path.join(fixture, "official"), device="cpu")
    except df11.Df11Error as e:
        if family == "qwen3moe" and "experts" in str(e):
            pytest.skip(f"transformers {__import__('transformers').__version__}: {e}")
        raise
    ids = models.llm_inputs(ref.config.vocab_size, 2)
    check_equal(logits(model, ids), logits(ref, ids))


def test_official_module_files_folder_logits_equal():
    """The encoder's save_single_file=False output (official-modules): each coded module's
    group and other tensors in a file of its own, the rest in model.safetensors."""
    fixture = os.path.join(models.FIXTURES, "llama")
    ref = models.bf16_llm(os.path.join(fixture, "bf16"))
    model = df11.from_pretrained(os.path.join(fixture, "official-modules"), device="cpu")
    ids = models.llm_inputs(ref.config.vocab_size, 2)
    check_equal(logits(model, ids), logits(ref, ids))


SINGLE_FILE_FAMILIES = ["llama", "qwen3"]


@pytest.mark.parametrize("family", SINGLE_FILE_FAMILIES)
def test_official_single_file_folder_logits_equal(family):
    """The encoder's default output (official-single: config.json holds dfloat11_config
    alone): the coded weights' shapes come from bfloat16_model="""
    fixture = os.path.join(models.FIXTURES, family)
    ref = models.bf16_llm(os.path.join(fixture, "bf16"))
    model = df11.from_pretrained(os.path.join(fixture, "official-single"), device="cpu",
                                 bfloat16_model=models.llm_skeleton(os.path.join(fixture, "bf16")))
    ids = models.llm_inputs(ref.config.vocab_size, 2)
    check_equal(logits(model, ids), logits(ref, ids))


@pytest.mark.parametrize("family", SINGLE_FILE_FAMILIES)
def test_official_single_file_folder_needs_bfloat16_model(family):
    folder = os.path.join(models.FIXTURES, family, "official-single")
    with pytest.raises(ValueError) as e:
        df11.from_pretrained(folder, device="cpu")
    assert str(e.value) == (
        f"df11: {os.path.join(folder, 'config.json')}: has no model config, only "
        "dfloat11_config (as the dfloat11 encoder writes it): pass bfloat16_model=, the model "
        "built from the original model's config (its weights are replaced)")


@pytest.fixture(scope="module")
def flux_bf16(work):
    pytest.importorskip("diffusers")
    from diffusers import FluxTransformer2DModel
    src = os.path.join(models.FIXTURES, "flux", "bf16")
    ref = FluxTransformer2DModel.from_pretrained(src, torch_dtype=torch.bfloat16).eval()
    with torch.no_grad():
        out = ref(**models.flux_inputs("cpu"), return_dict=False)[0]
    return src, out


def test_flux_df11_folder_output_equal(work, flux_bf16):
    src, ref_out = flux_bf16
    df11_dir = models.df11_compress(src, str(work / "flux-df11"))
    model = df11.from_pretrained(df11_dir, device="cpu", bfloat16_model=models.flux_skeleton())
    with torch.no_grad():
        check_equal(model(**models.flux_inputs("cpu"), return_dict=False)[0], ref_out)


def test_flux_official_folder_output_equal(flux_bf16):
    _, ref_out = flux_bf16
    model = df11.from_pretrained(os.path.join(models.FIXTURES, "flux", "official"), device="cpu",
                                 bfloat16_model=models.flux_skeleton())
    with torch.no_grad():
        check_equal(model(**models.flux_inputs("cpu"), return_dict=False)[0], ref_out)


def test_exec_mode_needs_a_gpu(tmp_path):
    bf16_dir, df11_dir = str(tmp_path / "bf16"), str(tmp_path / "df11")
    models.build_llm("llama").save_pretrained(bf16_dir)
    models.df11_compress(bf16_dir, df11_dir)
    with pytest.raises(ValueError, match="mode='exec' runs on CUDA"):
        df11.from_pretrained(df11_dir, device="cpu", mode="exec")
    with pytest.raises(ValueError, match="unknown mode"):
        df11.from_pretrained(df11_dir, device="cpu", mode="fast")


def test_auto_device_map_splits_blocks_over_two_gpus(work):
    """device_map="auto" sizes modules by their coded bytes: with GPU 0's budget at half the
    model, the embedding and the first block go to GPU 0 and the rest to GPU 1 (the map is
    computed without GPUs; gpu/test_gpu.py loads it on two)."""
    import warnings
    from transformers import AutoConfig, AutoModelForCausalLM
    from accelerate import init_empty_weights
    from df11 import _capi, loading
    bf16_dir, df11_dir = str(work / "llama" / "bf16"), str(work / "llama" / "df11")
    if not os.path.isdir(df11_dir):
        pytest.skip("made by test_df11_folder_logits_equal")
    ref = models.bf16_llm(bf16_dir)
    with init_empty_weights():
        skeleton = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(df11_dir),
                                                    dtype=torch.bfloat16)
    with _capi.Model(df11_dir) as folder, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # accelerate: "Device 0 is not available" (no GPU)
        device_map = loading.auto_device_map(skeleton, folder,
                                             {0: models.half_budget(ref), 1: "10GB"},
                                             skeleton._no_split_modules)
    assert device_map["model.embed_tokens"] == 0
    assert device_map["model.layers.0"] == 0
    assert device_map["model.layers.1"] == 1
    assert device_map["lm_head"] == 1
