"""python -m df11.bench: its argument checks (before any variant runs) and a whole run on the
CPU, checked for what it prints, never for a time."""
import json
import os
import subprocess
import sys

import pytest

from df11 import bench


def test_unknown_variant_is_refused(capsys):
    with pytest.raises(SystemExit) as e:
        bench.main(["folder", "--compare", "bf16,no-such-variant"])
    assert e.value.code == 2
    assert "unknown variant 'no-such-variant'" in capsys.readouterr().err


def test_every_variant_is_documented():
    # python -m df11.bench --help prints the module's docstring: it describes every variant.
    for v in bench.VARIANTS:
        assert f" {v} (" in bench.__doc__, v


def test_before_load_warms_the_page_cache_and_imports_the_model_class(tmp_path):
    # Each worker reads its folder and imports the model's modeling module before it times
    # the load, so the load rows do not depend on which variant's process ran first.
    import argparse
    import sys

    import models
    model = models.build_llm("llama", seed=1)
    bf16 = tmp_path / "bf16"
    model.save_pretrained(bf16)
    args = argparse.Namespace(model=str(tmp_path / "absent"), bf16=str(bf16))
    size = sum(p.stat().st_size for p in bf16.rglob("*") if p.is_file())
    before = bench._before_load("bf16", args)
    assert before["bytes read"] == size > 0
    assert before["model class"] == type(model).__name__
    assert type(model).__module__ in sys.modules
    assert before["page cache"] >= 0 and before["imports"] >= 0
    assert bench._folder("df11", args) == args.model
    assert bench._folder("glyd", args) == args.bf16


def test_runs_on_the_cpu_and_says_what_it_measured(llama_folders, tmp_path):
    """--device cpu (the default without a GPU): df11 and bf16 rows timed with
    time.perf_counter, the resident set for memory, the CPU named; what needs a GPU skipped,
    each with its reason."""
    _, bf16_dir, df11_dir = llama_folders
    results_json = tmp_path / "bench.json"
    env = dict(os.environ)
    package = os.path.dirname(os.path.dirname(os.path.abspath(bench.__file__)))
    env["PYTHONPATH"] = os.pathsep.join([package] + [p for p in [env.get("PYTHONPATH")] if p])
    proc = subprocess.run(
        [sys.executable, "-m", "df11.bench", df11_dir, "--bf16", bf16_dir, "--device", "cpu",
         "--batch", "1,2", "--tokens", "4", "--prompt", "8", "--repeat", "1",
         "--compare", "bf16,dfloat11,df11-exec,bf16-offload", "--cuda-graphs",
         "--json", str(results_json)],
        capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("CPU: ") and " torch threads, " in lines[0], lines[0]
    assert lines[0].endswith(" logical CPUs"), lines[0]
    assert lines[1] == ("4 new tokens (eager: 4), prompt 8, greedy; times: time.perf_counter, "
                        "median of 1; memory: peak resident set (getrusage ru_maxrss) and the "
                        "resident set the load and one forward pass added to the process "
                        "(/proc/self/statm)")
    assert lines[2].split() == ["variant", "mode", "batch", "new", "tok/s", "ms/token", "load",
                                "s", "peak", "RSS", "GB", "RSS", "added", "GB", "tokens"]
    rows = [line.split() for line in lines if line.split()[:2] in (["df11", "eager"],
                                                                   ["bf16", "eager"])]
    assert [(r[0], r[2], r[3]) for r in rows] == [("df11", "1", "4"), ("df11", "2", "4"),
                                                  ("bf16", "1", "4"), ("bf16", "2", "4")]
    for r in rows:
        assert all(float(x) >= 0 for x in r[4:9]), r
    assert [r[9] for r in rows] == ["equal", "equal", "reference", "reference"]
    for batch in (1, 2):
        assert f"df11: logits of one forward pass at batch {batch} torch.equal to bf16's" \
            in lines
    assert any(line.startswith("df11: decoding every coded group once takes ") and
               line.endswith(" ms (median of 20, time.perf_counter)") for line in lines)
    assert any(line.startswith("df11: load ") for line in lines)
    err = proc.stderr
    assert ("bench: --compare dfloat11: not on the CPU (the official loader decodes with a "
            "CUDA kernel (CuPy)); skipped") in err
    assert "bench: --compare df11-exec: not on the CPU" in err
    assert "bench: --compare bf16-offload: not on the CPU" in err
    assert "bench: --cuda-graphs: not on the CPU (CUDA graphs); skipped" in err
    results = json.loads(results_json.read_text())
    assert [r["variant"] for r in results] == ["df11", "bf16"]
    for r in results:
        assert r["device"] == "cpu" and r["hardware"] == lines[0]
        assert r["torch_threads"] >= 1
        assert r["peak_rss_gb"] >= r["peak_after_forward_rss_gb"] >= r["rss_after_imports_gb"] > 0
        assert "rss_added_gb" in r
        assert [run["mode"] for run in r["runs"]] == ["eager", "eager"]


def test_tokens_are_checked_only_against_a_reference_that_repeats_itself(tmp_path):
    # A df11 run whose tokens differ from BF16's fails the comparison, unless BF16's own
    # repeats differ at that batch (its tokens are then no reference): that row says so.
    import argparse

    import torch
    ref, other = torch.arange(8).reshape(2, 4), torch.arange(8).reshape(2, 4) + 1

    def run(batch, tokens, repeats_equal=True):
        path = tmp_path / f"t{len(list(tmp_path.iterdir()))}.pt"
        torch.save(tokens, path)
        return {"mode": "cuda-graph", "batch": batch, "tokens": str(path), "tokens_per_s": 1.0,
                "ms_per_token": 1.0, "repeats_equal": repeats_equal}

    def result(variant, runs):
        return {"variant": variant, "runs": runs, "load_s": 1.0, "peak_allocated_gb": 1.0,
                "peak_reserved_gb": 1.0}

    results = [result("df11", [run(1, other), run(8, other)]),
               result("bf16", [run(1, ref), run(8, ref, repeats_equal=False)])]
    table = bench._table(results, argparse.Namespace(device="cuda", tokens=4))
    rows = {line.split()[2]: line for line in table.splitlines() if line.startswith("df11 ")}
    assert "DIFFER (8 of 8)" in rows["1"]
    assert "bf16's own repeats differ: no check" in rows["8"] and "DIFFER" not in rows["8"]
    assert results[0]["runs"][0]["tokens_equal_reference"] is False
    assert results[0]["runs"][1]["tokens_equal_reference"] is True
