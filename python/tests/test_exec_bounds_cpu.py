"""bench/exec_bounds.py on Nsight Compute CSV written here in ncu's --csv form: the launch of the
whole block picked per batch (the reference GEMM's kExec = false kernels and the per-matrix
launches left out), the bounds computed from the counts, and a clear error where the launches do
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
    per matrix the reference (kExec false), the matrix fused and the block fused; then the 7
    matrices and the block, timed. batches: [(kernel template, grid, ns, inst)] per batch."""
    lines = ["==PROF== Connected to process 1", HEADER]
    i = 0
    for kernel, grid, ns, inst in batches:
        fused_k = f"void {kernel}<true, 64>(LaunchParams)"
        ref_k = f"void {kernel}<false, 64>(LaunchParams)"
        for m in range(7):
            lines += launch_rows(i, ref_k, 40, 20000, 1e6, 117e6)  # BF16 weights: many bytes
            lines += launch_rows(i + 1, fused_k, 30, 9000, 2e6, 88e6)
            lines += launch_rows(i + 2, fused_k, grid, ns + m, inst, 327e6)
            i += 3
        for m in range(7):
            lines += launch_rows(i, fused_k, 30, 9000, 2e6, 40e6 + m)
            i += 1
        lines += launch_rows(i, fused_k, grid, ns + 100, inst, 327e6)
        i += 1
    return "\n".join(lines) + "\n"


def test_block_launch_and_bounds(eb, tmp_path, capsys):
    path = tmp_path / "ncu.csv"
    path.write_text(csv_text([("wgb_gemm_kernel", 512, 240000, 90e6),
                              ("wgb_gemm_kernel", 1024, 480000, 180e6)]))
    assert eb.main([str(path), "--batch", "128,256", "--sms", "132", "--tbps", "3.35",
                    "--json"]) == 0
    import json
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [r["batch"] for r in rows] == [128, 256]
    assert [r["grid"] for r in rows] == [512, 1024]
    assert all(r["launches"] == 8 for r in rows)
    r = rows[0]
    assert r["ns"] == 240003.5  # the median of the 8: ns + 0..6 and ns + 100
    assert r["issue_bound_ms"] == pytest.approx(90e6 / (4 * 132 * 1.98e9) * 1e3)
    assert r["byte_bound_ms"] == pytest.approx(327e6 / 3.35e12 * 1e3)
    assert r["over_bound"] == pytest.approx(r["ms"] / max(r["issue_bound_ms"],
                                                          r["byte_bound_ms"]))
    assert eb.main([str(path), "--batch", "128,256", "--sms", "132", "--tbps", "3.35"]) == 0
    table = capsys.readouterr().out
    assert "| 256 | `wgb_gemm_kernel<true, 64>` (1024) | 180.0M | 327.0 MB |" in table


def test_units_scaled(eb):
    text = "\n".join([HEADER] + launch_rows(0, "void gemm_kernel<true, 1, 0>(P)", 8, 1, 5, 2,
                                            bytes_unit="Mbyte"))
    (launch,) = eb.launches(text)
    assert launch["bytes"] == 2e6 and launch["grid"] == 8
    with pytest.raises(ValueError, match="unknown unit"):
        eb.launches(text.replace('"Mbyte"', '"furlong"'))


def test_wrong_pattern_is_an_error(eb, tmp_path, capsys):
    path = tmp_path / "ncu.csv"
    path.write_text(csv_text([("wgb_gemm_kernel", 512, 240000, 90e6)]))
    assert eb.main([str(path), "--batch", "128,256", "--sms", "132", "--tbps", "3.35"]) == 1
    err = capsys.readouterr().err
    assert str(path) in err and "8 launches of a whole block for 2 batches" in err
    path.write_text("ncu: no kernels were profiled\n")
    assert eb.main([str(path), "--batch", "1", "--sms", "132", "--tbps", "3.35"]) == 1
    assert "no ncu CSV header" in capsys.readouterr().err
