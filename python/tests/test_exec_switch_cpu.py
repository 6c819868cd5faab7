"""Where the execution modes switch from the fused GEMM to decode + F.linear
(exec_mode.fused_max_tokens), on the CPU: the GPU's measured switch (FUSED_MAX_TOKENS_BY_GPU,
by the name torch gives the device), the default for a GPU not measured, a value set in
FUSED_MAX_TOKENS over both, and never past what the mode's C API takes. The GPU's name is
stubbed here; python/tests/gpu/test_exec_weight.py runs both sides of the switch on a GPU.
bench/exec_switch.py, which finds a GPU's switch from bench/exec_step.py's runs, is tested on
given documents and on the committed H100 runs behind the table's entry."""
import importlib.util
import json
import os

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


def load_exec_switch():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench",
                        "exec_switch.py")
    spec = importlib.util.spec_from_file_location("exec_switch", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def step_doc(gpu, times):
    rows = []
    for t, ms in times.items():
        rows.append({"tokens": t, "layer": "qkv", "cublas_ms": 1.0, "exec_ms": ms / 4})
        rows.append({"tokens": t, "layer": "step", "cublas_ms": 1.0, "exec_ms": ms})
    return {"gpu": gpu, "rows": rows}


def test_exec_switch_from_exec_step_runs(tmp_path, capsys):
    """bench/exec_switch.py on exec_step.py documents: the largest count up to which every
    fused run beats every decode run (the H100 runs of bench/results/exec-threshold-h100
    give 128), a count where one fused run loses ends the switch, and runs of two GPUs are
    refused."""
    script = load_exec_switch()
    here = tmp_path
    runs = {"f1": {64: 2.0, 96: 3.2, 128: 3.37, 160: 4.66},
            "f2": {64: 2.03, 96: 3.16, 128: 3.38, 160: 4.66},
            "d": {64: 3.59, 96: 3.65, 128: 3.72, 160: 3.76}}
    for name, times in runs.items():
        (here / f"{name}.json").write_text(json.dumps(step_doc("GPU A", times)))
    assert script.main(["--fused", str(here / "f1.json"), str(here / "f2.json"),
                        "--decode", str(here / "d.json")]) == 0
    out = capsys.readouterr().out
    assert "switch: 128 tokens" in out
    assert "FUSED_MAX_TOKENS_BY_GPU['GPU A'] = {'exec': 128}" in out
    # One fused run slower than decoding at 96: the switch stops at 64.
    best, rows = script.switch([runs["f1"], {**runs["f2"], 96: 3.7}], [runs["d"]])
    assert best == 64 and rows[1] == (96, 3.7, 3.65)
    assert script.switch([{64: 5.0}], [{64: 4.0}])[0] == 0
    (here / "slow.json").write_text(json.dumps(step_doc("GPU A", {64: 5.0, 96: 6.0})))
    assert script.main(["--fused", str(here / "slow.json"), "--decode", str(here / "d.json")]) == 1
    assert "measure lower counts" in capsys.readouterr().out
    (here / "other.json").write_text(json.dumps(step_doc("GPU B", runs["d"])))
    with pytest.raises(SystemExit, match="different GPUs"):
        script.main(["--fused", str(here / "f1.json"), "--decode", str(here / "other.json")])


def test_exec_switch_on_the_committed_h100_runs(capsys):
    script = load_exec_switch()
    results = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench",
                           "results", "exec-threshold-h100")
    assert script.main(["--fused", os.path.join(results, "step_fused_1.json"),
                        os.path.join(results, "step_fused_2.json"),
                        "--decode", os.path.join(results, "step_decode.json")]) == 0
    out = capsys.readouterr().out
    assert "switch: 128 tokens" in out
    assert exec_mode.FUSED_MAX_TOKENS_BY_GPU["NVIDIA H100 80GB HBM3"]["exec"] == 128
