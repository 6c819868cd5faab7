"""df11.compress of a model on a CUDA GPU (skipped without CUDA): its tensors reach the tools
library through reader calls (device-to-host copies of at most 64 MiB, as groups are coded),
and the folder is byte for byte the one made from the same model on the CPU."""
import pytest
import torch

import df11
import models

pytestmark = [pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU"),
              pytest.mark.filterwarnings("ignore::UserWarning")]


@pytest.mark.parametrize("family", ["llama", "qwen3", "qwen3moe"])
def test_cuda_model_equals_cpu_model(tmp_path, family):
    model = models.build_llm(family)
    df11.compress(model, str(tmp_path / "cpu"))
    df11.compress(model.cuda(), str(tmp_path / "cuda"))
    assert models.tree_sha256(tmp_path / "cpu") == models.tree_sha256(tmp_path / "cuda")
