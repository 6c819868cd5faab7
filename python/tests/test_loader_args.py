"""df11.from_pretrained takes transformers' own arguments (dtype, device_map as one device,
revision, cache_dir, token, local_files_only, trust_remote_code), and every user-facing error
names the file and what is wrong."""
import os
import shutil

import pytest
import torch

import df11
import models
from df11 import loader

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(scope="module")
def llama(llama_folders):
    work, bf16_dir, df11_dir = llama_folders
    from transformers import AutoModelForCausalLM
    ref = AutoModelForCausalLM.from_pretrained(bf16_dir, dtype=torch.bfloat16).eval()
    return work, ref, df11_dir


def logits_equal(model, ref):
    ids = models.llm_inputs(ref.config.vocab_size, 2)
    with torch.no_grad():
        return torch.equal(model(input_ids=ids).logits, ref(input_ids=ids).logits)


@pytest.mark.parametrize("kwargs", [
    dict(dtype=torch.bfloat16), dict(torch_dtype=torch.bfloat16), dict(dtype="auto"),
    dict(device_map="cpu"), dict(device_map={"": "cpu"}), dict(device="cpu", revision="main"),
    dict(device="cpu", cache_dir="/nonexistent", token="hf_x", local_files_only=True,
         trust_remote_code=False),
])
def test_transformers_arguments(llama, kwargs):
    _, ref, df11_dir = llama
    if "device" not in kwargs and "device_map" not in kwargs:
        kwargs = dict(kwargs, device="cpu")
    model = df11.from_pretrained(df11_dir, **kwargs)
    assert logits_equal(model, ref)


def test_a_dtype_other_than_bfloat16_is_refused(llama):
    _, _, df11_dir = llama
    with pytest.raises(ValueError) as e:
        df11.from_pretrained(df11_dir, device="cpu", dtype=torch.float32)
    assert df11_dir in str(e.value) and "bfloat16" in str(e.value)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error without a GPU")
@pytest.mark.parametrize("kwargs", [dict(device="cuda"), dict(device="cuda:1"),
                                    dict(device_map=0), dict(device_map="cuda"),
                                    dict(device_map={"": 0}), dict(device_map={"": "cuda:0"})])
def test_cuda_without_a_gpu_says_so(llama, kwargs):
    _, _, df11_dir = llama
    with pytest.raises(RuntimeError) as e:
        df11.from_pretrained(df11_dir, **kwargs)
    assert "torch sees no CUDA GPU" in str(e.value)


def test_an_unknown_device_is_refused(llama):
    _, _, df11_dir = llama
    with pytest.raises(ValueError, match="not a device torch knows"):
        df11.from_pretrained(df11_dir, device="tpu:0")


@pytest.mark.parametrize("device_map,message", [({"": "disk"}, "'disk'"),
                                                ({"": "meta"}, "df11 decodes on CUDA GPUs"),
                                                ({"": "tpu:0"}, "not a device torch knows")])
def test_a_device_map_to_other_devices_is_refused(llama, device_map, message):
    _, _, df11_dir = llama
    with pytest.raises(ValueError, match=message):
        df11.from_pretrained(df11_dir, device_map=device_map)


@pytest.mark.parametrize("text", [b"{not json", b"[1, 2]", b"\xff\xfe"])
def test_a_broken_config_json_names_the_file(llama, tmp_path, text):
    _, _, df11_dir = llama
    bad = str(tmp_path / "bad")
    shutil.copytree(df11_dir, bad)
    with open(os.path.join(bad, "config.json"), "wb") as f:
        f.write(text)
    with pytest.raises((ValueError, df11.Df11Error)) as e:
        df11.from_pretrained(bad, device="cpu")
    assert os.path.join(bad, "config.json") in str(e.value) or "config.json" in str(e.value)


def test_a_cast_model_says_what_was_cast(llama):
    _, ref, df11_dir = llama
    model = df11.from_pretrained(df11_dir, device="cpu")
    model.to(torch.float32)
    ids = models.llm_inputs(ref.config.vocab_size, 1)
    with pytest.raises(TypeError) as e, torch.no_grad():
        model(input_ids=ids)
    assert "cast to torch.float32" in str(e.value) and df11_dir in str(e.value)


def test_a_cast_model_is_not_saved(llama, tmp_path):
    """save_pretrained after model.to(torch.float32) raises as a forward pass does, and writes
    nothing: its raw tensors and config would no longer be the BF16 model's."""
    _, _, df11_dir = llama
    model = df11.from_pretrained(df11_dir, device="cpu")
    model.to(torch.float32)
    out = tmp_path / "saved"
    with pytest.raises(TypeError, match="cast to torch.float32"):
        model.save_pretrained(str(out))
    assert not out.exists() or not any(out.iterdir())


def test_the_embedding_matrix_is_refused_and_lookups_work(llama):
    """An untied embedding served by rows decodes holds no whole matrix: reading or changing
    its weight (a sum, resize_token_embeddings) raises, naming it and what to do, instead of
    giving values that are not the weights; its lookups give BF16's rows."""
    _, ref, df11_dir = llama
    model = df11.from_pretrained(df11_dir, device="cpu")
    emb = model.get_input_embeddings()
    assert emb.weight.shape == ref.get_input_embeddings().weight.shape
    assert emb.weight.dtype == torch.bfloat16 and emb.weight.device.type == "cpu"
    for use in (lambda: emb.weight.sum(), lambda: emb.weight[3].clone(),
                lambda: model.resize_token_embeddings(ref.config.vocab_size + 8)):
        with pytest.raises(RuntimeError) as e:
            use()
        assert "weight is a DF11-coded weight" in str(e.value) and "lookup" in str(e.value)
    ids = models.llm_inputs(ref.config.vocab_size, 2)
    with torch.no_grad():
        assert torch.equal(emb(ids), ref.get_input_embeddings()(ids))
    assert logits_equal(model, ref)


def test_copying_or_pickling_says_what_to_do_instead(llama, tmp_path):
    """A DF11 model's layers decode through its engine's handles and buffers: a deep copy (a
    reference model made with copy.deepcopy) or a pickle (torch.save of the model) would share
    or lose them, so both refuse, saying to load the folder again or to save_pretrained."""
    import copy
    _, ref, df11_dir = llama
    model = df11.from_pretrained(df11_dir, device="cpu")
    for what, use in (("deep-copied", lambda: copy.deepcopy(model)),
                      ("deep-copied", lambda: copy.deepcopy(model.model.layers[0])),
                      ("pickled", lambda: torch.save(model, str(tmp_path / "m.pt")))):
        with pytest.raises(RuntimeError) as e:
            use()
        assert f"cannot be {what}" in str(e.value), str(e.value)
    assert logits_equal(model, ref)  # the model is untouched


def test_hub_arguments_reach_the_pull(monkeypatch, tmp_path):
    """A Hub id's revision becomes "org/name@revision"; cache_dir, token and local_files_only
    are the environment df11's Hub client reads (HF_HUB_CACHE, HF_TOKEN, HF_HUB_OFFLINE), set
    for the pull alone."""
    seen = {}

    def pull(repo):
        seen.update(repo=repo, cache=os.environ.get("HF_HUB_CACHE"),
                    token=os.environ.get("HF_TOKEN"), offline=os.environ.get("HF_HUB_OFFLINE"))
        raise df11.Df11Error(19, "not_found", f"{repo}: not in the cache")

    from df11 import _tools
    monkeypatch.setattr(_tools, "pull", pull)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    with pytest.raises(df11.Df11Error, match="org/name@v1: not in the cache"):
        df11.from_pretrained("org/name", revision="v1", cache_dir=str(tmp_path), token="hf_abc",
                             local_files_only=True)
    assert seen == dict(repo="org/name@v1", cache=str(tmp_path), token="hf_abc", offline="1")
    assert "HF_TOKEN" not in os.environ and "HF_HUB_OFFLINE" not in os.environ
    with pytest.raises(TypeError, match="token must be a string"):
        loader._resolve("org/name", token=123)
