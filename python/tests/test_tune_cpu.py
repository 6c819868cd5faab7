"""The switch per GPU that `python -m df11.tune` measures (df11/tune.py) and the modes read
(df11/switches.py, exec_mode.fused_max_tokens), on the CPU: the switch file's place, contents,
errors and precedence over the table df11 carries; the choice from measured steps, the order
of the rounds, and the command's flow and errors with the GPU's step replaced by given times.
python/tests/gpu/test_tune_gpu.py measures a real GPU."""
import json
import os

import pytest

from df11 import _capi, exec_mode, switches, tune
from df11._capi import Df11Error

H100 = "NVIDIA H100 80GB HBM3"


@pytest.fixture
def gpus(monkeypatch):
    """GPU index -> name as the stubbed torch.cuda.get_device_name answers; the switch set in
    FUSED_MAX_TOKENS cleared."""
    names = {0: H100, 1: "NVIDIA H200", 2: "Some Future GPU"}
    monkeypatch.setattr(exec_mode, "_gpu_name", lambda index: names[index])
    for mode in exec_mode.FUSED_MAX_TOKENS:
        monkeypatch.setitem(exec_mode.FUSED_MAX_TOKENS, mode, None)
    switches.reload()
    yield names
    switches.reload()


def entry(n, **more):
    return dict({"max_tokens": n, "tokens": [1, 64], "fused_ms": [1.0, 2.0],
                 "decode_ms": [3.0, 3.0]}, **more)


def test_path(monkeypatch, tmp_path):
    monkeypatch.setenv("DF11_SWITCH_FILE", str(tmp_path / "mine.json"))
    assert switches.path() == str(tmp_path / "mine.json")
    monkeypatch.delenv("DF11_SWITCH_FILE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert switches.path() == str(tmp_path / "cache" / "df11" / "switches.json")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert switches.path() == str(tmp_path / "home" / ".cache" / "df11" / "switches.json")


def test_save_and_read_back(gpus, tmp_path):
    where = switches.path()
    assert not os.path.exists(where) and switches.measured("exec", H100) is None
    assert switches.save(H100, "exec", entry(96)) == where
    assert switches.save("NVIDIA H200", "exec", entry(112)) == where
    assert switches.save(H100, "compact", entry(24)) == where
    doc = json.load(open(where))
    assert doc["format"] == "df11-switches" and doc["version"] == 1
    assert doc["gpus"][H100]["exec"]["max_tokens"] == 96  # kept when H200's was added
    assert doc["gpus"][H100]["exec"]["df11"] == _capi.version()
    assert doc["gpus"][H100]["exec"]["fused_ms"] == [1.0, 2.0]
    assert switches.measured("exec", H100) == 96
    assert switches.measured("compact", H100) == 24
    assert switches.measured("exec", "NVIDIA H200") == 112
    assert switches.measured("compact", "NVIDIA H200") is None
    assert sorted(os.listdir(os.path.dirname(where))) == [os.path.basename(where)]  # no temp
    switches.save(H100, "exec", entry(64))  # measured again: replaces, read at once
    assert switches.measured("exec", H100) == 64
    other = tmp_path / "deep" / "other.json"  # --file: another place, folders made
    switches.save(H100, "exec", entry(0), str(other))
    assert json.load(open(other))["gpus"][H100]["exec"]["max_tokens"] == 0
    assert switches.measured("exec", H100) == 64
    with pytest.raises(ValueError, match="mode 'fast'"):
        switches.save(H100, "fast", entry(1))


def test_precedence_in_the_modes(gpus, monkeypatch):
    assert [exec_mode.fused_max_tokens("exec", i) for i in range(3)] == [128, 64, 64]
    switches.save(H100, "exec", entry(96))
    switches.save("Some Future GPU", "exec", entry(4096))  # held within the C API's maximum
    switches.save("Some Future GPU", "compact", entry(8))
    assert [exec_mode.fused_max_tokens("exec", i) for i in range(3)] == [
        96, 64, _capi.EXEC_MAX_BATCH]
    assert [exec_mode.fused_max_tokens("compact", i) for i in range(3)] == [
        _capi.COMPACT_MAX_BATCH, _capi.COMPACT_MAX_BATCH, 8]
    assert exec_mode.switch_source("exec", 0) == (96, switches.path())
    assert exec_mode.switch_source("exec", 1) == (64, "the default for GPUs not measured")
    assert exec_mode.switch_source("compact", 0) == (
        _capi.COMPACT_MAX_BATCH, "the default for GPUs not measured")
    monkeypatch.setitem(exec_mode.FUSED_MAX_TOKENS_BY_GPU, "NVIDIA H200", {"exec": 80})
    assert exec_mode.switch_source("exec", 1) == (80, "df11's table for NVIDIA H200")
    monkeypatch.setitem(exec_mode.FUSED_MAX_TOKENS, "exec", 16)  # a set value wins everywhere
    assert [exec_mode.fused_max_tokens("exec", i) for i in range(3)] == [16, 16, 16]
    assert exec_mode.switch_source("exec", 0) == (16, "FUSED_MAX_TOKENS")


def test_another_versions_entry_is_not_used(gpus, monkeypatch):
    switches.save(H100, "exec", entry(32))
    doc = json.load(open(switches.path()))
    doc["gpus"][H100]["exec"]["df11"] = "0.0.1"
    open(switches.path(), "w").write(json.dumps(doc))
    switches.reload()
    with pytest.warns(UserWarning, match=r"measured by df11 0\.0\.1.*python -m df11.tune"):
        assert exec_mode.fused_max_tokens("exec", 0) == 128  # the table's
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once
        assert exec_mode.fused_max_tokens("exec", 0) == 128


@pytest.mark.parametrize("text, status, what", [
    ("{", "bad_json", "not JSON"),
    ("[]", "bad_config", "'format' is not"),
    ('{"format": "df11-switches", "version": 2, "gpus": {}}', "bad_config", "'version' is 2"),
    ('{"format": "df11-switches", "version": 1}', "bad_config", "'gpus' is not an object"),
    ('{"format": "df11-switches", "version": 1, "gpus": {"G": 3}}', "bad_config",
     r"gpus\['G'\] is not an object"),
    ('{"format": "df11-switches", "version": 1, "gpus": {"G": {"fast": {}}}}', "bad_config",
     "'fast' is not one of"),
    ('{"format": "df11-switches", "version": 1, "gpus": {"G": {"exec": {"max_tokens": -1, '
     '"df11": "x"}}}}', "bad_config", r"\['max_tokens'\] = -1"),
    ('{"format": "df11-switches", "version": 1, "gpus": {"G": {"exec": {"max_tokens": true, '
     '"df11": "x"}}}}', "bad_config", r"\['max_tokens'\] = True"),
    ('{"format": "df11-switches", "version": 1, "gpus": {"G": {"exec": {"max_tokens": 8}}}}',
     "bad_config", r"\['df11'\] = None"),
])
def test_a_bad_file_is_an_error_naming_it(gpus, text, status, what):
    where = switches.path()
    os.makedirs(os.path.dirname(where), exist_ok=True)
    open(where, "w").write(text)
    with pytest.raises(Df11Error, match=what) as e:
        exec_mode.fused_max_tokens("exec", 0)  # as a model's load asks
    assert e.value.status == status and where in str(e.value) and "delete it" in str(e.value)
    with pytest.raises(Df11Error):  # nor is it overwritten
        switches.save(H100, "exec", entry(8))
    assert open(where).read() == text


def test_mutated_files_read_or_refuse(gpus):
    """Any bytes in the switch file give a switch or a Df11Error naming the file, never another
    exception: a valid file with bytes flipped, cut, repeated, and a nesting deeper than the
    JSON parser goes."""
    import random
    switches.save(H100, "exec", entry(96))
    switches.save("NVIDIA H200", "compact", entry(16))
    where = switches.path()
    good = open(where, "rb").read()
    rng = random.Random(30)
    cases = [b"[" * 100000 + b"]" * 100000, b"\xff\xfe", b"", good[: len(good) // 2],
             good.replace(b"96", b"9.6"), good.replace(b"96", b"1e400"), good * 2]
    for _ in range(300):
        b = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        cases.append(bytes(b))
    refused = 0
    for data in cases:
        open(where, "wb").write(data)
        switches.reload()
        try:
            got = exec_mode.fused_max_tokens("exec", 0)
        except Df11Error as e:
            assert where in str(e)
            refused += 1
        else:
            assert isinstance(got, int) and 0 <= got <= _capi.EXEC_MAX_BATCH
    assert refused >= 7  # the hand-made cases at least (flips inside a name can still parse)


def test_choose():
    best, rows = switches.choose([{1: 1.0, 64: 2.0, 128: 3.0, 256: 5.0},
                                  {1: 1.1, 64: 2.1, 128: 3.3, 256: 5.0}],
                                 [{1: 2.0, 64: 3.0, 128: 3.2, 256: 4.0}])
    assert best == 64 and rows[2] == (128, 3.3, 3.2)  # the slowest fused run decides
    assert switches.choose([{1: 2.0}], [{1: 2.0}])[0] == 0  # a tie is no gain
    assert switches.choose([{8: 1.0, 16: 1.0}], [{16: 2.0}])[1] == [(16, 1.0, 2.0)]
    with pytest.raises(ValueError, match="no token count"):
        switches.choose([{1: 1.0}], [{2: 1.0}])
    with pytest.raises(ValueError, match="both"):
        switches.choose([], [{1: 1.0}])


def test_rounds_per_count():
    calls = []
    times = {"fused": {8: [1.0, 1.2], 64: [2.0, 2.5], 128: [4.0, 3.0]},
             "decode": {8: [3.0], 64: [2.4], 128: [3.5]}}

    def step(t, path):
        calls.append((t, path))
        return times[path][t][sum(1 for c in calls if c == (t, path)) - 1]
    got = tune.tune("exec", step, [8, 64, 128])
    assert calls == [(t, p) for t in (8, 64, 128) for p in ("fused", "decode", "fused")]
    # At 64 the second fused round (2.5) is slower than decoding (2.4): the switch stays at 8,
    # though 128 would gain again.
    assert got == {"max_tokens": 8, "tokens": [8, 64, 128], "fused_ms": [1.2, 2.5, 4.0],
                   "decode_ms": [3.0, 2.4, 3.5]}


def test_model_shapes(tmp_path):
    cfg = {"hidden_size": 5120, "num_attention_heads": 40, "num_key_value_heads": 8,
           "intermediate_size": 13824}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    assert tune.model_shapes(str(tmp_path)) == (5120, 1024, 13824)
    (tmp_path / "config.json").write_text(json.dumps(
        {"text_config": dict(cfg, head_dim=256, num_key_value_heads=4)}))
    assert tune.model_shapes(str(tmp_path / "config.json")) == (5120, 1024, 13824)
    assert tune.members(*tune.model_shapes(str(tmp_path)))["mlp.down_proj"] == (5120, 13824)
    (tmp_path / "config.json").write_text(json.dumps({"hidden_size": 8}))
    with pytest.raises(Df11Error, match="'num_attention_heads' = None") as e:
        tune.model_shapes(str(tmp_path))
    assert str(tmp_path / "config.json") in str(e.value)
    (tmp_path / "config.json").write_text("{")
    with pytest.raises(Df11Error, match="not JSON"):
        tune.model_shapes(str(tmp_path))
    with pytest.raises(Df11Error, match="cannot be read"):
        tune.model_shapes(str(tmp_path / "absent"))


def test_command_without_a_gpu(capsys):
    assert tune.main(["--runs", "3"]) == 2
    err = capsys.readouterr().err
    assert "df11.tune: measures a CUDA GPU" in err


@pytest.mark.parametrize("args, what", [
    (["--tokens", "1,x"], "integers separated by commas"),
    (["--tokens", "0,8"], "exec takes 1 to"),
    (["--mode", "compact", "--tokens", "8,64"], "compact takes 1 to 32"),
    (["--layers", "0"], "--layers and --runs must be >= 1"),
])
def test_command_refuses_bad_arguments(capsys, args, what):
    assert tune.main(args) == 2
    assert what in capsys.readouterr().err


class FakeStep:
    """The GPU's step replaced by given times: fused faster than decoding up to 96 tokens."""
    made = []

    def __init__(self, mode, layers, shapes, runs, warmup):
        FakeStep.made.append((mode, layers, shapes["mlp.gate_proj"], runs, warmup))
        self.captured = True

    def __call__(self, t, path):
        return (t / 40.0 if path == "fused" else 3.0) if t <= 96 else (
            4.0 if path == "fused" else 3.5)


def test_command_measures_and_writes(gpus, monkeypatch, capsys, tmp_path):
    torch = tune.torch
    monkeypatch.setattr(tune._capi, "has_cuda", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 2)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index: gpus[index])
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    monkeypatch.setattr(tune.exec_mode, "supported", lambda device: True)
    monkeypatch.setattr(tune, "GpuStep", FakeStep)
    FakeStep.made.clear()
    (tmp_path / "config.json").write_text(json.dumps(
        {"hidden_size": 2048, "num_attention_heads": 16, "intermediate_size": 5632}))
    assert tune.main(["--tokens", "1,64,96,128", "--layers", "2", "--runs", "7",
                      "--model", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "Some Future GPU, mode='exec': 2 decoder blocks (hidden 2048" in out
    assert f"written to {switches.path()}" in out
    assert "switch: 96 tokens; in force before: 64 (the default for GPUs not measured)" in out
    assert FakeStep.made == [("exec", 2, (5632, 2048), 7, 5)]
    saved = json.load(open(switches.path()))["gpus"]["Some Future GPU"]["exec"]
    assert saved["max_tokens"] == 96 and saved["tokens"] == [1, 64, 96, 128]
    assert saved["layers"] == 2 and saved["shapes"]["mlp.down_proj"] == [2048, 5632]
    assert saved["cuda_graphs"] is True
    assert saved["command"].startswith("python -m df11.tune --tokens 1,64,96,128")
    assert exec_mode.fused_max_tokens("exec", 2) == 96  # what a model loaded now runs
    # --dry-run writes nothing; --mode all measures both modes.
    FakeStep.made.clear()
    assert tune.main(["--mode", "all", "--dry-run", "--tokens", "1,8"]) == 0
    assert [m[0] for m in FakeStep.made] == ["exec", "compact"]
    assert "written" not in capsys.readouterr().out
    assert "compact" not in json.load(open(switches.path()))["gpus"]["Some Future GPU"]
    # --file elsewhere: written there, and the message says the modes read another file.
    other = tmp_path / "elsewhere.json"
    assert tune.main(["--tokens", "1,8", "--file", str(other)]) == 0
    assert f"the modes read it where DF11_SWITCH_FILE names it (now {switches.path()})" in (
        capsys.readouterr().out)
    assert json.load(open(other))["gpus"]["Some Future GPU"]["exec"]["max_tokens"] == 8
