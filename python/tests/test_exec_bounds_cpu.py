"""bench/exec_bounds.py on Nsight Compute CSV written here in ncu's --csv form: the launch of the
whole block picked per batch (the reference GEMM's kExec = 0 kernels and the per-matrix
launches left out; the warpgroup kernels' launches of one call summed), the bounds computed from the counts, and a clear error where the launches do
not match compact_bench's pattern."""
import importlib.util
import os

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "bench", "exec_bounds.py")

HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
          '"Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit",'
          '"Metric Value"')


@pytest.fixture(scope="module")
def eb():
    spec = importlib.util.spec_from_file_location("exec_bounds", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def launch_rows(i, kernel, grid, ns, inst, dram, issue=40.0, hz=1.98e9, bytes_unit="byte"):
    values = [("gpu__time_duration.sum", "nsecond", f"{ns:,.0f}"),
              ("smsp__inst_executed.sum", "inst", f"{inst:,.0f}"),
              ("dram__bytes_read.sum", bytes_unit, f"{dram:,.0f}"),
              ("smsp__issue_active.avg.pct_of_peak_sustained_active", "%", f"{issue:.2f}"),
              ("launch__grid_size", "", f"{grid}"),
              ("sm__cycles_elapsed.avg.per_second", "cycle/second", f"{hz:,.0f}")]
    return [f'"{i}","1","compact_bench","127.0.0.1","{kernel}","1","7","(256, 1, 1)",'
            f'"({grid}, 1, 1)","0","9.0","Command line profiler metrics","{m}","{u}","{v}"'
            for m, u, v in values]


def csv_text(batches):
    """compact_bench's launches per batch at --runs 1 --warmup 0, as the filter keeps them:
    per matrix the reference (kExec 0), the matrix fused and the block fused (one launch per
    part); then the 7 matrices and the block, timed. batches: [(kernel, [grid per part], ns,
    inst)] per batch; each part reads 327 MB / parts."""
    lines = ["==PROF== Connected to process 1", HEADER]
    i = 0

    def block(kernel, grids, ns, inst):
        nonlocal i
        for grid in grids:
            lines.extend(launch_rows(i, kernel, grid, ns / len(grids), inst / len(grids),
                                     327e6 / len(grids)))
            i += 1

    for kernel, grids, ns, inst in batches:
        fused_k = f"void unnamed>::{kernel}<1, 64>(unnamed>::LaunchParams)"
        ref_k = f"void unnamed>::{kernel}<0, 64>(unnamed>::LaunchParams)"
        for m in range(7):
            lines += launch_rows(i, ref_k, 40, 20000, 1e6, 117e6)  # BF16 weights: many bytes
            lines += launch_rows(i + 1, fused_k, 30, 9000, 2e6, 88e6)
            i += 2
            block(fused_k, grids, ns + m, inst)
        for m in range(7):
            lines += launch_rows(i, fused_k, 30, 9000, 2e6, 40e6 + m)
            i += 1
        block(fused_k, grids, ns + 100, inst)
        for m in range(3):  # compact_bench's timed references
            lines += launch_rows(i, ref_k, 40, 20000, 1e6, 117e6)
            i += 1
    return "\n".join(lines) + "\n"


def test_block_launch_and_bounds(eb, tmp_path, capsys):
    path = tmp_path / "ncu.csv"
    path.write_text(csv_text([("gemm_kernel", [2688], 240000, 90e6),
                              ("wgb_gemm_kernel", [224, 1216], 480000, 180e6)]))
    assert eb.main([str(path), "--batch", "1,256", "--sms", "132", "--tbps", "3.35",
                    "--json"]) == 0
    import json
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [r["batch"] for r in rows] == [1, 256]
    assert [r["grids"] for r in rows] == [[2688], [224, 1216]]
    assert all(r["launches"] == 8 for r in rows)
    r = rows[0]
    assert r["ns"] == 240003.5  # the median of the 8: ns + 0..6 and ns + 100
    assert r["issue_bound_ms"] == pytest.approx(90e6 / (4 * 132 * 1.98e9) * 1e3)
    assert r["byte_bound_ms"] == pytest.approx(327e6 / 3.35e12 * 1e3)
    assert r["over_bound"] == pytest.approx(r["ms"] / max(r["issue_bound_ms"],
                                                          r["byte_bound_ms"]))
    r = rows[1]  # the two parts' sums
    assert r["ns"] == pytest.approx(480003.5, abs=1) and r["inst"] == pytest.approx(180e6)
    assert r["bytes"] == pytest.approx(327e6)
    assert eb.main([str(path), "--batch", "1,256", "--sms", "132", "--tbps", "3.35"]) == 0
    table = capsys.readouterr().out
    assert "| 256 | `wgb_gemm_kernel<1, 64>` (224 + 1216) | 180.0M | 327.0 MB |" in table


def test_h100_profile(eb):
    """The committed profile of the shipped kernels (NVIDIA H100, bench/results/exec-bounds-h100):
    the strip kernels at 1-32 tokens, the cluster kernel at 64, the warpgroup kernel's two
    launches (one per cluster size) above."""
    import gzip
    path = os.path.join(HERE, "..", "..", "bench", "results", "exec-bounds-h100", "ncu.csv.gz")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        text = f.read()
    rows = eb.bounds(eb.per_batch(eb.launches(text), [1, 16, 32, 64, 96, 128, 256]), 132, 3.35)
    assert [r["grids"] for r in rows] == [[2688]] * 4 + [[224, 1216]] * 2 + [[448, 2432]]
    assert [eb.KERNEL.search(r["kernels"][-1]).group(0) for r in rows] == [
        "gemm_kernel<1, 1, 0>", "gemm_kernel<1, 2, 0>", "gemm_kernel<1, 4, 0>",
        "split_gemm_kernel<8>", "wgb_gemm_kernel<1, 96>", "wgb_gemm_kernel<1, 128>",
        "wgb_gemm_kernel<1, 128>"]
    # each reads the whole block once: the 12-bit layout's 327 MB and the activations
    assert all(327e6 < r["bytes"] < 350e6 for r in rows)
    assert all(r["over_bound"] > 1 for r in rows)


def test_units_scaled(eb):
    text = "\n".join([HEADER] + launch_rows(0, "void gemm_kernel<1, 1, 0>(P)", 8, 1, 5, 2,
                                            bytes_unit="Mbyte"))
    (launch,) = eb.launches(text)
    assert launch["bytes"] == 2e6 and launch["grid"] == 8
    with pytest.raises(ValueError, match="unknown unit"):
        eb.launches(text.replace('"Mbyte"', '"furlong"'))


def test_wrong_pattern_is_an_error(eb, tmp_path, capsys):
    path = tmp_path / "ncu.csv"
    path.write_text(csv_text([("wgb_gemm_kernel", [512], 240000, 90e6)]))
    assert eb.main([str(path), "--batch", "128,256", "--sms", "132", "--tbps", "3.35"]) == 1
    err = capsys.readouterr().err
    assert str(path) in err and "7 runs of fused launches between reference launches" in err
    lines = csv_text([("wgb_gemm_kernel", [512], 240000, 90e6)]).splitlines()
    timed = [i for i, line in enumerate(lines) if "wgb_gemm_kernel<1, 64>" in line][-6:]
    for i in timed:  # the timed block's launch: another kernel than the checks'
        lines[i] = lines[i].replace("wgb_gemm_kernel<1, 64>", "wgb_gemm_kernel<1, 96>")
    path.write_text("\n".join(lines) + "\n")
    assert eb.main([str(path), "--batch", "128", "--sms", "132", "--tbps", "3.35"]) == 1
    assert "differ in kernel or grid" in capsys.readouterr().err
    path.write_text("ncu: no kernels were profiled\n")
    assert eb.main([str(path), "--batch", "1", "--sms", "132", "--tbps", "3.35"]) == 1
    assert "no ncu CSV header" in capsys.readouterr().err
