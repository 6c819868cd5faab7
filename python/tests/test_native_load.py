"""transformers' own from_pretrained loads DF11 folders after `import df11` (the "df11"
quantization method): logits torch.equal to the BF16 model's for every family of the interop
suite, from folders `df11 compress` writes (config.json names the method) and from the dfloat11
tools' folders (quantization_config=df11.Df11Config()); pipeline(), transformers' arguments,
save_pretrained; and what plain transformers, without df11, does with a df11 folder."""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import torch

import df11
import models

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("native")


def assert_logits_equal(model, ref):
    """model's logits equal BF16's on the device the DF11 model was placed on (device_map
    "auto" places it on a GPU where there is one)."""
    ref = ref.to(model.device)
    ids = models.llm_inputs(ref.config.vocab_size, 2).to(model.device)
    with torch.no_grad():
        a, b = model(input_ids=ids).logits, ref(input_ids=ids).logits
    assert torch.equal(a, b), f"max |diff| {(a.float() - b.float()).abs().max().item()}"


def copy_with_config(df11_dir, bad, drop=(), **changes):
    """A copy of the folder at `bad` whose config.json has `changes` set and `drop` removed."""
    shutil.copytree(df11_dir, bad)
    path = os.path.join(bad, "config.json")
    with open(path) as f:
        config = json.load(f)
    config.update(changes)
    for key in drop:
        config.pop(key, None)
    with open(path, "w") as f:
        json.dump(config, f)
    return bad


@pytest.mark.parametrize("family", models.FAMILIES)
def test_auto_model_loads_df11_folders(work, family):
    from transformers import AutoModelForCausalLM
    bf16_dir, df11_dir = models.llm_folders(work, family)
    with open(os.path.join(df11_dir, "config.json")) as f:
        config = json.load(f)
    assert config["quantization_config"] == {"quant_method": "df11"}
    assert "pattern_dict" in config["dfloat11_config"]  # what the dfloat11 loader reads
    model = AutoModelForCausalLM.from_pretrained(df11_dir)
    assert model.hf_quantizer.quantization_config.quant_method == "df11"
    assert model.config.quantization_config.quant_method == "df11"
    assert model.df11.runtimes  # coded weights decoded per block, not loaded as BF16
    assert not any(p.device.type == "meta" for p in model.parameters())
    assert_logits_equal(model, models.bf16_llm(bf16_dir))
    if family in ("qwen3", "gemma3"):  # tied: the head is the embedding, as in BF16
        assert model.lm_head.weight is model.get_input_embeddings().weight


@pytest.mark.parametrize("family", models.FAMILIES)
def test_state_dict_names_what_bf16_names(work, family):
    """Either loader's model lists in state_dict() every name the BF16 model lists: the head
    decoded at load as a frozen parameter (a tie stays one parameter), the other coded weights
    (Linear weights, an embedding served by rows decodes, fused MoE experts and their router)
    as placeholders whose values raise. Both loaders give the same parameters."""
    from transformers import AutoModelForCausalLM
    bf16_dir, df11_dir = models.llm_folders(work, family)
    want = set(models.bf16_llm(bf16_dir).state_dict())
    native = AutoModelForCausalLM.from_pretrained(df11_dir)
    direct = df11.from_pretrained(df11_dir, device="cpu")
    for model in (native, direct):
        state = model.state_dict()
        assert set(state) == want
        for name, t in state.items():
            if isinstance(t, df11.modules.CodedWeight):
                with pytest.raises(RuntimeError, match=f"df11: {re.escape(name)} is a DF11-coded"):
                    t.sum()
        head = model.get_output_embeddings().weight
        assert isinstance(head, torch.nn.Parameter) and not head.requires_grad
        emb = model.get_input_embeddings().weight
        if model.config.tie_word_embeddings:
            assert emb is head
        else:
            assert isinstance(emb, df11.modules.CodedWeight)
    assert ([n for n, _ in native.named_parameters()] ==
            [n for n, _ in direct.named_parameters()])


@pytest.mark.parametrize("family", ["llama", "qwen3moe"])
def test_load_state_dict_takes_its_own_and_refuses_values(work, family):
    """load_state_dict(model.state_dict()) loads, as on the BF16 model. A tensor for a coded
    weight (BF16's state dict), or another DF11 model's placeholder, is refused, naming the
    weight; the tensors stored raw load alone, and the logits stay BF16's."""
    bf16_dir, df11_dir = models.llm_folders(work, family)
    ref = models.bf16_llm(bf16_dir)
    model = df11.from_pretrained(df11_dir, device="cpu")
    assert not any(model.load_state_dict(model.state_dict()))  # no missing, no unexpected
    coded = {k for k, t in model.state_dict().items()
             if isinstance(t, df11.modules.CodedWeight)}
    for other in (ref.state_dict(), df11.from_pretrained(df11_dir, device="cpu").state_dict()):
        with pytest.raises(RuntimeError) as e:
            model.load_state_dict(other)
        for name in coded:
            assert f"df11: {name} is a DF11-coded weight: load_state_dict cannot" in str(e.value)
    raw = {k: t for k, t in ref.state_dict().items() if k not in coded}
    assert not any(model.load_state_dict(raw, strict=False))
    assert_logits_equal(model, ref)


def official_folders():
    out = []
    for family in sorted(os.listdir(models.FIXTURES)):
        fixture = os.path.join(models.FIXTURES, family)
        if family in models.OTHER_FIXTURES or not os.path.isdir(fixture):  # language models
            continue
        out += [(family, kind) for kind in ("official", "official-single", "official-modules")
                if os.path.isdir(os.path.join(fixture, kind))]
    return out


@pytest.mark.parametrize("family,kind", official_folders())
def test_auto_model_loads_official_folders_with_df11_config(family, kind):
    """The dfloat11 tools' folders name no quantization method: Df11Config says it. The
    encoder's single-file output has no model config: config= gives it."""
    from transformers import AutoConfig, AutoModelForCausalLM
    fixture = os.path.join(models.FIXTURES, family)
    extra = {}
    if kind == "official-single":
        extra["config"] = AutoConfig.from_pretrained(os.path.join(fixture, "bf16"))
    model = AutoModelForCausalLM.from_pretrained(os.path.join(fixture, kind),
                                                 quantization_config=df11.Df11Config(), **extra)
    assert_logits_equal(model, models.bf16_llm(os.path.join(fixture, "bf16")))


@pytest.mark.parametrize("family,kind", [(f, kind) for f, kind in official_folders()
                                         if kind != "official-single"])
def test_auto_model_loads_official_folders_by_itself(family, kind):
    """After `import df11`, transformers' config reader names the df11 method for a folder the
    dfloat11 tools published (dfloat11_config, no quantization_config): from_pretrained loads
    it as it loads df11's folders, never as a plain model with random weights. Also the
    encoder's save_single_file=False output (official-modules: each coded module with its other
    tensors, a block's norms, in a file of its own, no index), whose files beside
    model.safetensors transformers does not read: their raw tensors are df11's, not tensors
    transformers initializes as missing, and its load report lists none as missing."""
    from transformers import AutoConfig, AutoModelForCausalLM
    fixture = os.path.join(models.FIXTURES, family)
    config = AutoConfig.from_pretrained(os.path.join(fixture, kind))
    assert config.quantization_config["quant_method"] == "df11"
    model, info = AutoModelForCausalLM.from_pretrained(os.path.join(fixture, kind),
                                                       output_loading_info=True)
    assert getattr(model, "df11", None) is not None
    assert not info["missing_keys"], info["missing_keys"]
    assert_logits_equal(model, models.bf16_llm(os.path.join(fixture, "bf16")))


def test_a_passed_config_sets_the_mode(work):
    """Df11Config(mode=...) passed to from_pretrained sets the mode over the folder's own
    quantization config, for df11's and the dfloat11 tools' folders: on the CPU the execution
    mode is refused, naming it (the folder's own config would load the decode mode)."""
    from transformers import AutoModelForCausalLM
    _, df11_dir = models.llm_folders(work, "llama")
    official = os.path.join(models.FIXTURES, "llama", "official")
    for folder in (df11_dir, official):
        with pytest.raises(ValueError, match="mode='exec' runs on CUDA"):
            AutoModelForCausalLM.from_pretrained(
                folder, device_map="cpu", quantization_config=df11.Df11Config(mode="exec"))
        model = AutoModelForCausalLM.from_pretrained(
            folder, device_map="cpu", quantization_config=df11.Df11Config())
        assert model.df11.mode == "decode"


def test_a_malformed_dfloat11_config_is_refused(tmp_path):
    """A config.json whose dfloat11_config is not an object, or that names another method
    beside it, is refused by transformers' config reader, naming the folder."""
    from transformers import AutoModelForCausalLM
    fixture = os.path.join(models.FIXTURES, "llama", "official")
    for name, edit, message in (
            ("string", lambda c: c.update(dfloat11_config="0.5.0"), "not an object"),
            ("other-method", lambda c: c.update(quantization_config={"quant_method": "bnb"}),
             "quant_method 'bnb'")):
        bad = str(tmp_path / name)
        shutil.copytree(fixture, bad)
        path = os.path.join(bad, "config.json")
        with open(path) as f:
            config = json.load(f)
        edit(config)
        with open(path, "w") as f:
            json.dump(config, f)
        with pytest.raises(ValueError, match=message) as e:
            AutoModelForCausalLM.from_pretrained(bad)
        assert bad in str(e.value)


def save_tokenizer(folder, vocab):
    """A word-level tokenizer over the tiny vocabulary ("t0" .. "t<vocab-1>")."""
    from tokenizers import Tokenizer, models as tmodels, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    tok = Tokenizer(tmodels.WordLevel({f"t{i}": i for i in range(vocab)}, unk_token="t0"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="t0", pad_token="t0",
                            eos_token="t1").save_pretrained(folder)


def test_pipeline_generates_as_bf16(work):
    from transformers import pipeline
    bf16_dir, df11_dir = models.llm_folders(work, "llama")
    for folder in (bf16_dir, df11_dir):
        save_tokenizer(folder, 512)
    prompt = " ".join(f"t{i}" for i in (5, 77, 300, 12))
    kw = dict(max_new_tokens=6, do_sample=False)
    # device= as well: without it a pipeline moves a model loaded on the CPU to the first GPU
    # (model.to), which a DF11 model refuses (test_moved_model_refuses_to_run).
    want = pipeline("text-generation", model=bf16_dir, dtype=torch.bfloat16,
                    device="cpu")(prompt, **kw)
    got = pipeline("text-generation", model=df11_dir, device="cpu")(prompt, **kw)
    assert got == want and len(got[0]["generated_text"]) > len(prompt)


def test_moved_model_refuses_to_run(work):
    """model.to(device) moves the raw tensors only: the next forward raises, naming the move
    and the folder."""
    from transformers import AutoModelForCausalLM
    _, df11_dir = models.llm_folders(work, "llama")
    model = AutoModelForCausalLM.from_pretrained(df11_dir, device_map="cpu")
    model.to("meta")
    with pytest.raises(RuntimeError) as e:
        model(input_ids=models.llm_inputs(model.config.vocab_size, 1))
    assert "moved to meta" in str(e.value) and df11_dir in str(e.value)


@pytest.mark.parametrize("kwargs", [
    dict(dtype=torch.bfloat16), dict(dtype="auto"), dict(torch_dtype=torch.bfloat16),
    dict(device_map="cpu"), dict(device_map={"": "cpu"}), dict(device_map="auto"),
    dict(device_map="auto", max_memory={"cpu": "2GB"}), dict(local_files_only=True),
    dict(revision="main", trust_remote_code=False),
    # `bnb_config if quantize else None`: the Auto classes hand a None on to the config, which
    # would lose the folder's method and load the coded weights at random.
    dict(quantization_config=None),
])
def test_transformers_arguments(work, kwargs):
    from transformers import AutoModelForCausalLM
    bf16_dir, df11_dir = models.llm_folders(work, "llama")
    model = AutoModelForCausalLM.from_pretrained(df11_dir, **kwargs)
    assert model.df11.runtimes
    assert_logits_equal(model, models.bf16_llm(bf16_dir))


def test_an_official_folder_with_quantization_config_none(work):
    from transformers import AutoModelForCausalLM
    fixture = os.path.join(models.FIXTURES, "llama")
    model = AutoModelForCausalLM.from_pretrained(os.path.join(fixture, "official"),
                                                 quantization_config=None)
    assert model.df11.runtimes
    assert_logits_equal(model, models.bf16_llm(os.path.join(fixture, "bf16")))


@pytest.mark.parametrize("family", ["llama", "qwen3"])
def test_auto_model_loads_the_base_model(work, tmp_path, family):
    """AutoModel (the base class) on a causal LM's folder: the names under the base model's
    prefix, as transformers loads the BF16 folder; hidden states torch.equal to BF16's. Saving
    it is refused (the folder's groups hold the head too)."""
    from transformers import AutoModel
    bf16_dir, df11_dir = models.llm_folders(work, family)
    ref, model = AutoModel.from_pretrained(bf16_dir, dtype=torch.bfloat16), \
        AutoModel.from_pretrained(df11_dir)
    assert type(model) is type(ref) and model.df11.runtimes
    assert not any(p.device.type == "meta" for p in model.parameters())
    ids = models.llm_inputs(ref.config.vocab_size, 2)
    with torch.no_grad():
        a = model(input_ids=ids).last_hidden_state
        b = ref(input_ids=ids).last_hidden_state
    assert torch.equal(a, b), f"max |diff| {(a.float() - b.float()).abs().max().item()}"
    with pytest.raises(ValueError, match=r"base model .* was loaded from the folder of a model "
                       r"with a head .*AutoModelForCausalLM"):
        model.save_pretrained(str(tmp_path / "out"))


def test_a_dtype_other_than_bfloat16_is_refused(work):
    from transformers import AutoModelForCausalLM
    _, df11_dir = models.llm_folders(work, "llama")
    with pytest.raises(ValueError, match="DF11 weights decode to bfloat16"):
        AutoModelForCausalLM.from_pretrained(df11_dir, dtype=torch.float32)
    # transformers' default dtype 'auto' takes the config's: the message says so.
    bad = copy_with_config(df11_dir, os.path.join(work, "float32-config"), drop=("torch_dtype",),
                           dtype="float32")
    with pytest.raises(ValueError, match="the config's dtype"):
        AutoModelForCausalLM.from_pretrained(bad)


def test_disk_offload_is_refused(work):
    from transformers import AutoModelForCausalLM
    _, df11_dir = models.llm_folders(work, "llama")
    with pytest.raises(ValueError, match="'disk'"):
        AutoModelForCausalLM.from_pretrained(df11_dir, device_map={"": "disk"})


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error without a GPU")
@pytest.mark.parametrize("device_map", ["cuda", 0, {"": 0}, {"": "cuda:0"},
                                        {"model": "cpu", "lm_head": "cuda:0"}])
def test_cuda_without_a_gpu_says_so(work, device_map):
    """transformers' own from_pretrained with a GPU in the device map on a machine without
    one: df11's error, naming the device, before torch's about a missing driver."""
    from transformers import AutoModelForCausalLM
    _, df11_dir = models.llm_folders(work, "llama")
    with pytest.raises(RuntimeError, match="df11: device 'cuda:0' was asked for, but torch sees "
                                           "no CUDA GPU"):
        AutoModelForCausalLM.from_pretrained(df11_dir, device_map=device_map)


def test_unmatched_coded_weights_name_the_folder(work, tmp_path):
    """A folder whose groups code weights the model does not have is refused, naming it."""
    from transformers import AutoModelForCausalLM
    _, df11_dir = models.llm_folders(work, "llama")
    # a block the folder has no weights for
    bad = copy_with_config(df11_dir, str(tmp_path / "bad"), num_hidden_layers=3)
    with pytest.raises(df11.Df11Error) as e:
        AutoModelForCausalLM.from_pretrained(bad)
    assert bad in str(e.value) and "model.layers.2" in str(e.value)


def _sequence_classifiers(df11_dir, bf16_dir):
    from transformers import AutoModelForSequenceClassification
    model = AutoModelForSequenceClassification.from_pretrained(df11_dir, num_labels=3,
                                                               pad_token_id=0)
    ref = AutoModelForSequenceClassification.from_pretrained(bf16_dir, num_labels=3,
                                                             pad_token_id=0, dtype=torch.bfloat16)
    return model, ref


@pytest.mark.parametrize("kind", ["df11", "official"])
def test_a_new_head_is_initialized_as_from_bf16(work, tmp_path, kind):
    """AutoModelForSequenceClassification on a causal LM's folder (df11's, or the dfloat11
    tools'): transformers initializes the head the folder's model lacks (`score`), as from the
    BF16 checkpoint; with the BF16 model's head weights the logits are BF16's, and
    save_pretrained round trips."""
    from transformers import AutoModelForSequenceClassification
    bf16_dir, df11_dir = models.llm_folders(work, "llama")
    if kind == "official":  # the dfloat11 encoder's folder of the fixture's BF16 model
        bf16_dir, df11_dir = (os.path.join(models.FIXTURES, "llama", k) for k in ("bf16", kind))
    model, ref = _sequence_classifiers(df11_dir, bf16_dir)
    assert model.score.weight.device.type == "cpu" and model.score.weight.dtype == torch.bfloat16
    with torch.no_grad():
        model.score.weight.copy_(ref.score.weight)
    ids = models.llm_inputs(ref.config.vocab_size, 2)
    with torch.no_grad():
        assert torch.equal(model(input_ids=ids).logits, ref(input_ids=ids).logits)
    out = str(tmp_path / "classifier")
    model.save_pretrained(out)
    again = AutoModelForSequenceClassification.from_pretrained(out)
    with torch.no_grad():
        assert torch.equal(again(input_ids=ids).logits, ref(input_ids=ids).logits)


def test_lora_on_a_new_head_trains_as_bf16(work):
    """PEFT's sequence classification (LoRA on q/v, the new head trained) over the DF11 base:
    loss and every trained parameter's gradient equal the BF16 model's."""
    from peft import LoraConfig, get_peft_model
    bf16_dir, df11_dir = models.llm_folders(work, "llama")
    model, ref = _sequence_classifiers(df11_dir, bf16_dir)

    def lora():
        return LoraConfig(r=4, target_modules=["q_proj", "v_proj"], task_type="SEQ_CLS",
                          init_lora_weights=False)
    model, ref = get_peft_model(model, lora()), get_peft_model(ref, lora())
    trained = {k: v for k, v in model.state_dict().items() if "lora_" in k or "score" in k}
    assert not ref.load_state_dict(trained, strict=False).unexpected_keys
    ids, labels = models.llm_inputs(ref.config.vocab_size, 1), torch.tensor([1])
    a, b = model(input_ids=ids, labels=labels).loss, ref(input_ids=ids, labels=labels).loss
    a.backward()
    b.backward()
    assert torch.equal(a, b)
    grads = {k: p.grad for k, p in model.named_parameters() if p.requires_grad}
    ref_grads = {k: p.grad for k, p in ref.named_parameters() if p.requires_grad}
    assert grads.keys() == ref_grads.keys() and any("score" in k for k in grads)
    assert all(torch.equal(grads[k], ref_grads[k]) for k in grads)


def test_the_folders_own_class_lacking_a_weight_is_refused(work, tmp_path):
    """Where config.json names the class being loaded, a parameter the folder lacks is an
    error naming it, not a newly initialized head."""
    from transformers import AutoModelForSequenceClassification
    _, df11_dir = models.llm_folders(work, "llama")
    bad = copy_with_config(df11_dir, str(tmp_path / "bad"),
                           architectures=["LlamaForSequenceClassification"])
    with pytest.raises(df11.Df11Error, match="score.weight") as e:
        AutoModelForSequenceClassification.from_pretrained(bad, num_labels=3)
    assert bad in str(e.value)


def test_save_pretrained_round_trip(work, tmp_path):
    """A natively loaded model saves a DF11 folder that loads natively again, equal."""
    from transformers import AutoModelForCausalLM
    bf16_dir, df11_dir = models.llm_folders(work, "qwen3")
    model = AutoModelForCausalLM.from_pretrained(df11_dir)
    out = str(tmp_path / "saved")
    model.save_pretrained(out)
    with open(os.path.join(out, "config.json")) as f:
        config = json.load(f)
    assert config["quantization_config"]["quant_method"] == "df11"
    assert "df11" not in config["dfloat11_config"]  # transformers' shards carry no df11 metadata
    assert_logits_equal(AutoModelForCausalLM.from_pretrained(out), models.bf16_llm(bf16_dir))
    assert_logits_equal(df11.from_pretrained(out, device="cpu"), models.bf16_llm(bf16_dir))


def test_vllm_keeps_the_folders_method(work):
    from df11 import vllm_config
    _, df11_dir = models.llm_folders(work, "llama")
    with open(os.path.join(df11_dir, "config.json")) as f:
        config = json.load(f)
    assert vllm_config.is_df11_config(config)
    assert vllm_config.quantization_config(config) is None  # the folder's own is df11's


PLAIN = """
import sys, transformers
from transformers import AutoModelForCausalLM
transformers.logging.set_verbosity_warning()
try:
    AutoModelForCausalLM.from_pretrained(sys.argv[1])
except Exception as e:
    print("REFUSED", type(e).__name__, e)
else:
    print("LOADED")
print("df11 imported" if "df11" in sys.modules else "df11 not imported")
"""


@pytest.mark.parametrize("writer", ["compress", "save_pretrained"])
def test_plain_transformers_refuses_a_df11_folder(work, tmp_path, writer):
    """What docs/running/transformers.md says plain transformers does with a folder df11
    compress or df11's save_pretrained wrote: it does not know the method and skips it, then
    meets each group's guard (spec/DF11.md 6.5), an empty tensor under a coded weight's name,
    and raises on its size instead of initializing the coded weights at random."""
    bf16_dir, df11_dir = models.llm_folders(work, "llama")
    if writer == "save_pretrained":
        from transformers import AutoModelForCausalLM
        AutoModelForCausalLM.from_pretrained(df11_dir).save_pretrained(tmp_path / "saved")
        df11_dir = str(tmp_path / "saved")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-c", PLAIN, df11_dir], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "df11 not imported" in proc.stdout
    assert "REFUSED RuntimeError" in proc.stdout, proc.stdout + proc.stderr
    assert "Unknown quantization type, got df11" in proc.stderr
    assert "MISMATCH" in proc.stderr and "q_proj.weight" in proc.stderr
    assert "ignore_mismatched_sizes" in proc.stdout
