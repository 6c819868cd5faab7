"""df11.compress through the tools library (libdf11-tools): for tiny models of several families
(untied, tied head, transformers 5's fused MoE experts, a diffusers FLUX transformer), the DF11
folder equals byte for byte what `df11 compress` writes for the model's save_pretrained folder,
`df11 verify` (the binary) passes on it against that folder, and df11.from_pretrained of it
gives logits torch.equal to the BF16 model's (CPU). Also: sharding, a plain state dict with
its config, tensors read through the library's reader calls (the path CUDA tensors take),
progress and stopping, and bad input."""
import os
import subprocess

import pytest
import torch

import df11
import df11.checkpoint
import models

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def assert_same_tree(a, b):
    ta, tb = models.tree_sha256(a), models.tree_sha256(b)
    assert ta, f"{a} is empty"
    assert sorted(ta) == sorted(tb)
    assert [k for k in ta if ta[k] != tb[k]] == []


def df11_tool(*args):
    proc = subprocess.run([models.df11_cli(), *args], capture_output=True, text=True)
    assert proc.returncode == 0, f"df11 {args[0]}: {proc.stdout}{proc.stderr}"
    return proc


@torch.no_grad()
def check_logits(df11_dir, ref):
    model = df11.from_pretrained(df11_dir, device="cpu")
    ids = models.llm_inputs(ref.config.vocab_size, 2)
    a, b = model(input_ids=ids).logits, ref(input_ids=ids).logits
    assert torch.equal(a, b), f"max |diff| {(a.float() - b.float()).abs().max().item()}"


@pytest.mark.parametrize("family", ["llama", "qwen3", "qwen3moe"])
def test_model_equals_the_tool_on_save_pretrained(tmp_path, family):
    model = models.build_llm(family)
    bf16_dir, disk_dir, mem_dir = (str(tmp_path / n) for n in ("bf16", "disk", "memory"))
    model.save_pretrained(bf16_dir)
    models.df11_compress(bf16_dir, disk_dir, "--source-sha256")
    result = df11.compress(model, mem_dir, source_sha256=True)
    assert_same_tree(disk_dir, mem_dir)
    assert result.groups_coded > 0 and 0 < result.ratio < 1
    assert result.input_bytes == sum(os.path.getsize(os.path.join(bf16_dir, f))
                                     for f in os.listdir(bf16_dir) if f.endswith(".safetensors"))
    df11_tool("verify", mem_dir, "--against", bf16_dir, "--sha256", "-q")
    check_logits(mem_dir, model)


def test_sharded_model_equals_the_tool(tmp_path):
    model = models.build_llm("llama")
    bf16_dir, disk_dir, mem_dir = (str(tmp_path / n) for n in ("bf16", "disk", "memory"))
    model.save_pretrained(bf16_dir, max_shard_size="100KB")
    models.df11_compress(bf16_dir, disk_dir)
    result = df11.compress(model, mem_dir, max_shard_size="100KB")
    assert result.shards > 1
    assert os.path.exists(os.path.join(mem_dir, "model.safetensors.index.json"))
    assert_same_tree(disk_dir, mem_dir)
    check_logits(mem_dir, model)


def test_tensors_through_the_reader_equal_the_tool(tmp_path, monkeypatch):
    """The reader path (tensors not in host memory, e.g. on a GPU: copied in chunks when the
    library asks) gives the same folder."""
    monkeypatch.setattr(df11.checkpoint, "_in_host_memory", lambda t: False)
    model = models.build_llm("qwen3")
    bf16_dir, disk_dir, mem_dir = (str(tmp_path / n) for n in ("bf16", "disk", "memory"))
    model.save_pretrained(bf16_dir)
    models.df11_compress(bf16_dir, disk_dir)
    df11.compress(model, mem_dir)
    assert_same_tree(disk_dir, mem_dir)


def test_flux_equals_the_tool_and_loads(tmp_path):
    pytest.importorskip("diffusers")
    flux = models.flux_skeleton()
    bf16_dir, disk_dir, mem_dir = (str(tmp_path / n) for n in ("bf16", "disk", "memory"))
    flux.save_pretrained(bf16_dir)
    models.df11_compress(bf16_dir, disk_dir)
    df11.compress(flux, mem_dir)
    assert_same_tree(disk_dir, mem_dir)
    assert os.path.exists(os.path.join(mem_dir, "diffusion_pytorch_model.safetensors"))
    df11_tool("verify", mem_dir, "--against", bf16_dir, "-q")
    torch.manual_seed(0)
    loaded = df11.from_pretrained(mem_dir, device="cpu", bfloat16_model=models.flux_skeleton())
    with torch.no_grad():
        a = loaded(**models.flux_inputs("cpu"), return_dict=False)[0]
        b = flux(**models.flux_inputs("cpu"), return_dict=False)[0]
    assert torch.equal(a, b)


def test_state_dict_with_config(tmp_path):
    """A plain state dict: the tied head (sharing the embedding's memory) is stored once, the
    library makes the shards, config.json comes from the config object; the result verifies
    (the shards differ from save_pretrained's: no --against) and loads."""
    model = models.build_llm("qwen3")  # tied
    mem_dir = str(tmp_path / "memory")
    result = df11.compress(model.state_dict(), mem_dir, config=model.config,
                           max_shard_size=60_000, files={"README.md": "tiny\n"},
                           source_sha256=True)
    assert result.shards > 1
    assert sorted(f for f in os.listdir(mem_dir) if f.endswith(".safetensors"))[0] == \
        "model-00001-of-{:05d}.safetensors".format(result.shards)
    with open(os.path.join(mem_dir, "README.md")) as f:
        assert f.read() == "tiny\n"
    df11_tool("verify", mem_dir, "--sha256", "-q")
    check_logits(mem_dir, model)


def test_progress_and_stop(tmp_path):
    model = models.build_llm("llama")
    seen = []
    df11.compress(model, str(tmp_path / "done"),
                  progress=lambda phase, done, total: seen.append((phase, done, total)))
    assert {p for p, _, _ in seen} == {"planning", "compressing"}
    assert all(0 <= d <= t for _, d, t in seen)

    with pytest.raises(df11.Df11Error) as e:
        df11.compress(model, str(tmp_path / "stopped"),
                      progress=lambda phase, done, total: phase == "compressing")
    assert e.value.status == "interrupted"
    assert os.listdir(tmp_path) == ["done"]

    def fails(phase, done, total):
        raise KeyError("from the callback")
    with pytest.raises(KeyError, match="from the callback"):
        df11.compress(model, str(tmp_path / "raised"), progress=fails)
    assert os.listdir(tmp_path) == ["done"]


def test_bad_input(tmp_path):
    model = models.build_llm("llama")
    out = str(tmp_path / "out")
    with pytest.raises(TypeError, match="needs config="):
        df11.compress(model.state_dict(), out)
    with pytest.raises(TypeError, match="expected a model"):
        df11.compress([1, 2], out)
    with pytest.raises(ValueError, match="dtype torch.complex128"):
        df11.compress({"w.weight": torch.zeros(2, 2, dtype=torch.complex128)}, out, config={})
    with pytest.raises(ValueError, match="meta device"):
        df11.compress({"w.weight": torch.empty(4, 4, device="meta")}, out, config={})
    with pytest.raises(df11.Df11Error) as e:  # nothing to code: refused, as `df11 compress` does
        df11.compress({"w.weight": torch.zeros(4, 4)}, out, config={})
    assert e.value.status == "bad_dtype" and "no BF16 weights" in e.value.message
    with pytest.raises(ValueError, match="written by save_pretrained"):
        df11.compress(model, out, files={"config.json": "{}"})
    assert not os.path.exists(out)
    os.makedirs(out)
    with pytest.raises(df11.Df11Error) as e:
        df11.compress(model, out)
    assert e.value.status == "exists"
    df11.compress(model, out, force=True)
    assert os.path.exists(os.path.join(out, "config.json"))


def test_missing_tools_library_is_an_honest_error(tmp_path, monkeypatch):
    from df11 import _tools
    monkeypatch.setattr(_tools, "_lib", None)
    monkeypatch.setenv("DF11_TOOLS_LIBRARY_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(OSError, match="libdf11-tools.so.0"):
        df11.compress(models.build_llm("llama"), str(tmp_path / "out"))
    assert not os.path.exists(tmp_path / "out")


def test_gpu_encoder_refuses_what_it_cannot_take():
    """The GPU encoder (coded.GpuGroup.encoded) is in libdf11-tools wherever libdf11 has CUDA;
    it takes BF16 tensors on a GPU only, and bad arguments reach Python as Df11Error."""
    from df11 import _capi, _tools
    from df11.coded import GpuGroup
    assert _tools.has_cuda_encoder() == _capi.has_cuda()
    with pytest.raises(ValueError, match="rank 1: group 'w': the GPU encoder takes a contiguous "
                                         "BF16 tensor on a GPU"):
        GpuGroup.encoded(torch.zeros(4, 4, dtype=torch.bfloat16), "w", "rank 1")
    with pytest.raises(df11.Df11Error) as e:
        _tools.CudaEncoding(0, 0, 0, 0, 0)
    assert e.value.status == ("invalid_argument" if _capi.has_cuda() else "unsupported")
