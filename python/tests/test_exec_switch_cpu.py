"""Where the execution modes switch from the fused GEMM to decode + F.linear
(exec_mode.fused_max_tokens), on the CPU: the GPU's measured switch (FUSED_MAX_TOKENS_BY_GPU,
by the name torch gives the device), the default for a GPU not measured, a value set in
FUSED_MAX_TOKENS over both, and never past what the mode's C API takes. The GPU's name is
stubbed here; python/tests/gpu/test_exec_weight.py runs both sides of the switch on a GPU."""
import pytest

from df11 import _capi, exec_mode


@pytest.fixture
def gpus(monkeypatch):
    """GPU index -> name, as the stubbed torch.cuda.get_device_name answers; the names asked."""
    names = {0: "NVIDIA H100 80GB HBM3", 1: "NVIDIA H200", 2: "Some Future GPU"}
    asked = []

    def name(index):
        asked.append(index)
        return names[index]
    monkeypatch.setattr(exec_mode, "_gpu_name", name)
    monkeypatch.setattr(exec_mode.torch.cuda, "current_device", lambda: 1)
    for mode in exec_mode.FUSED_MAX_TOKENS:
        monkeypatch.setitem(exec_mode.FUSED_MAX_TOKENS, mode, None)
    return asked


def test_measured_switch_per_gpu(gpus):
    assert exec_mode.fused_max_tokens("exec", 0) == 128  # measured on an H100 80GB HBM3
    assert exec_mode.fused_max_tokens("exec", 1) == 64  # H200: the default
    assert exec_mode.fused_max_tokens("exec", 2) == exec_mode.DEFAULT_FUSED_MAX_TOKENS["exec"]
    for index in range(3):
        assert exec_mode.fused_max_tokens("compact", index) == _capi.COMPACT_MAX_BATCH


def test_device_forms(gpus):
    torch = exec_mode.torch
    assert exec_mode.fused_max_tokens("exec", torch.device("cuda", 0)) == 128
    assert exec_mode.fused_max_tokens("exec", torch.device("cuda")) == 64  # current: 1
    assert exec_mode.fused_max_tokens("exec") == 64
    assert gpus == [0, 1, 1]


def test_set_value_wins_on_every_gpu(gpus, monkeypatch):
    monkeypatch.setitem(exec_mode.FUSED_MAX_TOKENS, "exec", 16)
    assert [exec_mode.fused_max_tokens("exec", i) for i in range(3)] == [16, 16, 16]
    assert gpus == []  # no device asked
    monkeypatch.setitem(exec_mode.FUSED_MAX_TOKENS, "exec", 0)  # decode + F.linear always
    assert exec_mode.fused_max_tokens("exec", 0) == 0
    assert exec_mode.fused_max_tokens("compact", 0) == _capi.COMPACT_MAX_BATCH


def test_table_is_held_within_the_c_api(gpus, monkeypatch):
    monkeypatch.setitem(exec_mode.FUSED_MAX_TOKENS_BY_GPU, "Some Future GPU",
                        {"exec": 4096, "compact": 4096})
    assert exec_mode.fused_max_tokens("exec", 2) == _capi.EXEC_MAX_BATCH
    assert exec_mode.fused_max_tokens("compact", 2) == _capi.COMPACT_MAX_BATCH
