"""A Hub id in from_pretrained: df11's own client (the tools library's df11_hub_pull, the code
of `df11 pull`, in this process: no df11 tool is run) fetches the folder into the shared
Hugging Face cache from a strict local Hub (tests/hub/hub_server.py, 127.0.0.1 only)."""
import os
import subprocess
import sys

import pytest
import torch

import df11
import models

TOKEN = "hf_df11pythontesttoken"


def test_hub_id_is_pulled_and_loads(tmp_path, monkeypatch):
    huggingface_hub = pytest.importorskip("huggingface_hub")
    server = os.path.join(models.REPO, "tests", "hub")
    if not os.path.exists(os.path.join(server, "hub_server.py")):
        pytest.skip("tests/hub/hub_server.py is not in this copy of the tests")
    sys.path.insert(0, server)
    from hub_server import LocalHub
    bf16_dir, df11_dir = str(tmp_path / "bf16"), str(tmp_path / "df11")
    models.build_llm("llama").save_pretrained(bf16_dir)
    models.df11_compress(bf16_dir, df11_dir)
    hub = LocalHub(str(tmp_path / "server"), token=TOKEN)
    try:
        api = huggingface_hub.HfApi(endpoint=hub.url, token=TOKEN)
        api.create_repo("org/tiny-df11")
        api.upload_folder(repo_id="org/tiny-df11", folder_path=df11_dir)
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.setenv("HF_TOKEN", TOKEN)
        monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
        monkeypatch.delenv("HF_HUB_CACHE", raising=False)
        monkeypatch.delenv("DF11_CLI", raising=False)
        monkeypatch.chdir(tmp_path)  # "org/tiny-df11" is no folder here

        def no_process(*args, **kwargs):
            raise AssertionError(f"a process was started: {args}")
        monkeypatch.setattr(subprocess, "Popen", no_process)
        model = df11.from_pretrained("org/tiny-df11", device="cpu")
        assert str(tmp_path / "home" / "hub" / "models--org--tiny-df11") in model.df11.folder.path
        assert hub.state.violations == []
    finally:
        hub.close()
    from transformers import AutoModelForCausalLM
    ref = AutoModelForCausalLM.from_pretrained(bf16_dir, dtype=torch.bfloat16).eval()
    ids = models.llm_inputs(ref.config.vocab_size, 2)
    with torch.no_grad():
        assert torch.equal(model(input_ids=ids).logits, ref(input_ids=ids).logits)


def test_pull_errors_name_the_repo():
    """A Hub id that does not parse is refused by the library before any request."""
    from df11 import _tools
    with pytest.raises(df11.Df11Error) as e:
        _tools.pull("org/bad name")
    assert e.value.status == "invalid_argument" and "org/bad name" in e.value.message


def test_unknown_name_is_an_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError):
        df11.from_pretrained("no/such/folder", device="cpu")
