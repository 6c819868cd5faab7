import os
import sys

import pytest

# models.py (the tiny models) for the tests here and under gpu/.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# The Hub test uploads to a local server: huggingface_hub must not try Xet storage (read at
# its import, which transformers triggers).
os.environ.setdefault("HF_HUB_DISABLE_XET", "1")


@pytest.fixture(scope="module")
def llama_folders(tmp_path_factory):
    """(work folder, BF16 folder, df11 folder) of the tiny Llama, made once per test module."""
    import models
    work = tmp_path_factory.mktemp("llama")
    bf16_dir, df11_dir = str(work / "bf16"), str(work / "df11")
    models.build_llm("llama").save_pretrained(bf16_dir)
    models.df11_compress(bf16_dir, df11_dir)
    return work, bf16_dir, df11_dir


@pytest.fixture(autouse=True)
def _own_switch_file(tmp_path_factory, monkeypatch):
    """df11's modes read the switch file `python -m df11.tune` writes (df11.switches): each test
    reads one of its own (absent unless the test writes it), never the user's."""
    monkeypatch.setenv("DF11_SWITCH_FILE", str(tmp_path_factory.mktemp("switches") / "s.json"))
