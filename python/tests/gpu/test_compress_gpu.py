"""df11.compress of a model on a CUDA GPU (skipped without CUDA): its tensors reach the tools
library through reader calls (device-to-host copies of at most 64 MiB, one group at a time),
and the folder is byte for byte the one made from the same model on the CPU."""
import hashlib
import os

import pytest
import torch

import df11
import models

pytestmark = [pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU"),
              pytest.mark.filterwarnings("ignore::UserWarning")]


def tree(folder):
    out = {}
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                out[os.path.relpath(path, folder)] = hashlib.sha256(f.read()).hexdigest()
    return out


@pytest.mark.parametrize("family", ["llama", "qwen3", "qwen3moe"])
def test_cuda_model_equals_cpu_model(tmp_path, family):
    model = models.build_llm(family)
    df11.compress(model, str(tmp_path / "cpu"))
    df11.compress(model.cuda(), str(tmp_path / "cuda"))
    assert tree(tmp_path / "cpu") == tree(tmp_path / "cuda")
