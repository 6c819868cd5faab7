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


@pytest.fixture(autouse=True)
def _hub_online(monkeypatch):
    """Every request here goes to a Hub server the test starts on 127.0.0.1, so offline mode
    in the caller's environment (HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE, as on an air-gapped
    machine) must not refuse them: huggingface_hub reads it once, at import."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    try:
        from huggingface_hub import constants
    except ImportError:
        return
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)


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


@pytest.mark.parametrize("kind", ["df11", "official"])
def test_auto_model_loads_a_hub_id(tmp_path, kind):
    """transformers' own from_pretrained on a Hub id (after `import df11`) of a df11 folder
    and of the dfloat11 tools' folder (which names no method: quantization_config=
    df11.Df11Config()): transformers fetches the files through huggingface_hub from the local
    Hub, in a process of its own (huggingface_hub reads HF_ENDPOINT when imported), with
    `revision` and `token`; the logits equal the BF16 model's."""
    huggingface_hub = pytest.importorskip("huggingface_hub")
    server = os.path.join(models.REPO, "tests", "hub")
    if not os.path.exists(os.path.join(server, "hub_server.py")):
        pytest.skip("tests/hub/hub_server.py is not in this copy of the tests")
    sys.path.insert(0, server)
    from hub_server import LocalHub
    if kind == "df11":
        bf16_dir, folder = str(tmp_path / "bf16"), str(tmp_path / "df11")
        models.build_llm("llama").save_pretrained(bf16_dir)
        models.df11_compress(bf16_dir, folder)
        extra = ""
    else:
        fixture = os.path.join(models.FIXTURES, "llama")
        bf16_dir, folder = os.path.join(fixture, "bf16"), os.path.join(fixture, "official")
        extra = ", quantization_config=df11.Df11Config()"
    hub = LocalHub(str(tmp_path / "server"), token=TOKEN)
    out = str(tmp_path / "logits.pt")
    try:
        api = huggingface_hub.HfApi(endpoint=hub.url, token=TOKEN)
        api.create_repo("org/tiny-df11")
        commit = api.upload_folder(repo_id="org/tiny-df11", folder_path=folder).oid
        code = f"""
import torch, df11
from transformers import AutoModelForCausalLM
model = AutoModelForCausalLM.from_pretrained("org/tiny-df11", revision={commit!r},
                                             token={TOKEN!r}, device_map="cpu"{extra})
assert model.hf_quantizer.quantization_config.quant_method == "df11"
assert model.df11.units
ids = torch.load({str(tmp_path / 'ids.pt')!r})
with torch.no_grad():
    torch.save(model(input_ids=ids).logits, {out!r})
"""
        from transformers import AutoConfig
        vocab = AutoConfig.from_pretrained(bf16_dir).vocab_size
        torch.save(models.llm_inputs(vocab, 2), str(tmp_path / "ids.pt"))
        env = dict(os.environ, HF_ENDPOINT=hub.url, HF_HOME=str(tmp_path / "home"),
                   HF_HUB_DISABLE_XET="1", HF_HUB_OFFLINE="0")
        env.pop("HF_HUB_CACHE", None)
        env.pop("HF_TOKEN", None)
        done = subprocess.run([sys.executable, "-c", code], env=env, cwd=str(tmp_path),
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        assert hub.state.violations == []
        gets = [(r[0], r[2]) for r in hub.state.log if r[1] == "GET"]
        assert any(path.endswith("/config.json") for _, path in gets), gets
        assert any(who == "cdn" for who, _ in gets), gets  # the weights, an LFS download
    finally:
        hub.close()
    ref = models.bf16_llm(bf16_dir)
    with torch.no_grad():
        want = ref(input_ids=torch.load(str(tmp_path / "ids.pt"))).logits
    assert torch.equal(torch.load(out), want)
