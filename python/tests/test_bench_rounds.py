"""bench/hf_static_compile.py --rounds: the rotated order of the models' processes and the
per-round ratios it reports (on given rows: nothing is timed here)."""
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def load_script():
    bench = os.path.join(HERE, "..", "..", "bench")
    if bench not in sys.path:
        sys.path.insert(0, bench)  # the script imports its neighbour compiled_lookups
    path = os.path.join(bench, "hf_static_compile.py")
    spec = importlib.util.spec_from_file_location("hf_static_compile", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_model_leads_a_round_in_turn():
    script = load_script()
    order = script.rotations(["bf16", "df11 decode", "df11 exec"], 4)
    assert order == [["bf16", "df11 decode", "df11 exec"],
                     ["df11 decode", "df11 exec", "bf16"],
                     ["df11 exec", "bf16", "df11 decode"],
                     ["bf16", "df11 decode", "df11 exec"]]
    assert script.rotations(["df11 decode"], 2) == [["df11 decode"], ["df11 decode"]]


def test_ratios_pair_each_model_with_the_bf16_of_its_own_round():
    script = load_script()
    rounds = [{"bf16": {"step_ms": 10.0}, "df11 decode": {"step_ms": 20.0}},
              {"df11 decode": {"step_ms": 30.0}, "bf16": {"step_ms": 20.0}},
              {"bf16": {"step_ms": 8.0}, "df11 decode": {"step_ms": 12.0}}]
    summary = {s["model"]: s for s in script.summarize(rounds)}
    decode = summary["df11 decode"]
    assert decode["step_ms"] == [20.0, 30.0, 12.0]
    assert decode["vs_bf16"] == [2.0, 1.5, 1.5]
    assert decode["median_vs_bf16"] == 1.5
    assert decode["median_step_ms"] == 20.0
    assert summary["bf16"]["median_step_ms"] == 10.0
    assert "vs_bf16" not in summary["bf16"]


def test_without_bf16_there_are_no_ratios():
    script = load_script()
    summary = script.summarize([{"df11 decode": {"step_ms": 18.0}},
                                {"df11 decode": {"step_ms": 16.0}}])
    assert summary == [dict(model="df11 decode", step_ms=[18.0, 16.0], median_step_ms=17.0)]


def test_guard_latencies_are_read_from_dynamo_guard_log():
    script = load_script()
    logged = ["TREE_GUARD_MANAGER:\n+- RootGuardManager\nGuard eval latency = 122.19 us",
              "no latency here", "Guard eval latency = 2254.1 us"]
    assert script.guard_latencies(logged) == [122.19, 2254.1]


def test_kept_rounds_of_several_files_are_summarized_together(tmp_path):
    """--summarize reads the rounds.jsonl files --keep writes (one round a line) and reports
    them as one run's rounds: each ratio stays within its own round."""
    import json
    import subprocess
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(json.dumps({"bf16": {"step_ms": 10.0}, "df11 decode": {"step_ms": 20.0}}) + "\n")
    b.write_text(json.dumps({"df11 decode": {"step_ms": 12.0}, "bf16": {"step_ms": 8.0}}) + "\n"
                 + json.dumps({"bf16": {"step_ms": 9.0}, "df11 decode": {"step_ms": 18.0}}) + "\n")
    script = load_script()
    assert len(script.read_rounds([str(a), str(b)])) == 3
    out = tmp_path / "summary.json"
    proc = subprocess.run([sys.executable, script.__file__, "--summarize", str(a), str(b),
                           "--json", str(out)], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert proc.returncode == 0, proc.stderr
    summary = {s["model"]: s for s in json.loads(out.read_text())["summary"]}
    assert summary["df11 decode"]["vs_bf16"] == [2.0, 1.5, 2.0]
    assert summary["df11 decode"]["median_vs_bf16"] == 2.0
    assert json.loads(out.read_text())["rounds"] == 3
    # A --rounds --json file: its rows name their round.
    c = tmp_path / "compile.json"
    c.write_text(json.dumps({"rows": [
        {"model": "bf16", "step_ms": 5.0, "round": 1},
        {"model": "df11 decode", "step_ms": 10.0, "round": 1},
        {"model": "df11 decode", "step_ms": 9.0, "round": 2},
        {"model": "bf16", "step_ms": 6.0, "round": 2}]}))
    summary = {s["model"]: s for s in script.summarize(script.read_rounds([str(a), str(c)]))}
    assert summary["df11 decode"]["vs_bf16"] == [2.0, 2.0, 1.5]
