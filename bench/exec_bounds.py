#!/usr/bin/env python3
"""The 12-bit layout's fused GEMM against its issue and byte bounds, from Nsight Compute's counts
of compact_bench's launches (decoder/cuda/EXEC_KERNEL.md, "The shipped kernels' bounds"):

    ncu --clock-control none --kernel-name-base function \
        --kernel-name 'regex:^(wide_|split_|wgb?_)?gemm_kernel$' \
        --print-kernel-base demangled --print-units base \
        --metrics gpu__time_duration.sum,smsp__inst_executed.sum,dram__bytes_read.sum,\
smsp__issue_active.avg.pct_of_peak_sustained_active,launch__grid_size,\
sm__cycles_elapsed.avg.per_second \
        --csv compact_bench --runs 1 --warmup 0 --batch 1,16,32,64,96,128,256 > ncu.csv
    python3 bench/exec_bounds.py ncu.csv --batch 1,16,32,64,96,128,256 --sms 132 --tbps 3.35

compact_bench checks each batch before it times it: per matrix of the block (q, k, v, o, gate,
up, down) the reference GEMM, the fused GEMM of that matrix and the fused GEMM of the whole
block in one call, then the timed runs: at --runs 1 --warmup 0 the block in one call is launched
8 times a batch. That launch, the one the bars are set on, is what this reports: the only fused
launch that reads the whole block from DRAM.

Bounds of a launch: issue, its warp instructions at one per scheduler and cycle (4 schedulers a
multiprocessor, --sms multiprocessors, at the clock ncu measured); bytes, the DRAM bytes it read
at --tbps. The reference GEMM's launches (the kernels' kExec = false instances) are left out.
Prints a Markdown table, or with --json one JSON document.
"""
import argparse
import csv
import io
import json
import statistics
import sys
from typing import Dict, List

METRICS = {
    "gpu__time_duration.sum": "ns",
    "smsp__inst_executed.sum": "inst",
    "dram__bytes_read.sum": "bytes",
    "smsp__issue_active.avg.pct_of_peak_sustained_active": "issue_pct",
    "launch__grid_size": "grid",
    "sm__cycles_elapsed.avg.per_second": "hz",
}
UNIT_SCALE = {"": 1.0, "ns": 1.0, "nsecond": 1.0, "us": 1e3, "usecond": 1e3, "ms": 1e6,
              "msecond": 1e6, "byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9,
              "hz": 1.0, "Khz": 1e3, "Mhz": 1e6, "Ghz": 1e9, "cycle/second": 1.0,
              "cycle/nsecond": 1e9, "cycle/usecond": 1e6, "%": 1.0, "inst": 1.0,
              "warp": 1.0, "block": 1.0, "thread": 1.0}


def number(text: str, unit: str) -> float:
    value = float(text.replace(",", ""))
    scale = UNIT_SCALE.get(unit.strip())
    if scale is None:
        raise ValueError(f"unknown unit {unit!r}")
    return value * scale


def launches(text: str) -> List[dict]:
    """ncu's --csv output -> one dict per profiled launch, in launch order."""
    start = text.find('"ID"')
    if start < 0:
        raise ValueError("no ncu CSV header (\"ID\", ...) in the input")
    by_id: Dict[int, dict] = {}
    for row in csv.DictReader(io.StringIO(text[start:])):
        key = METRICS.get(row.get("Metric Name", ""))
        if key is None:
            continue
        launch = by_id.setdefault(int(row["ID"]), {"id": int(row["ID"]),
                                                   "kernel": row["Kernel Name"]})
        launch[key] = number(row["Metric Value"], row.get("Metric Unit", ""))
    out = [by_id[k] for k in sorted(by_id)]
    for launch in out:
        missing = [k for k in METRICS.values() if k not in launch]
        if missing:
            raise ValueError(f"launch {launch['id']} ({launch['kernel']}): no {', '.join(missing)}")
    return out


def fused(launch: dict) -> bool:
    """The fused GEMM's own instances: the reference GEMM is the same kernels with kExec false."""
    return "<false" not in launch["kernel"].replace(" ", "")


def per_batch(all_launches: List[dict], batches: List[int]) -> List[dict]:
    """The launch of the block in one call per batch. It alone reads the whole block (ncu
    flushes the caches before each launch): a fused launch that reads more than half the most
    any launch read. compact_bench makes it 8 times a batch at --runs 1 --warmup 0 (7 checks,
    1 timed); each batch's 8 must be one kernel and grid."""
    mine = [x for x in all_launches if fused(x)]
    if not mine:
        raise ValueError("no launch of the fused GEMM's kernels")
    most = max(x["bytes"] for x in mine)
    ones = [x for x in mine if x["bytes"] > most / 2]
    if len(ones) != 8 * len(batches):
        raise ValueError(f"{len(ones)} launches of a whole block for {len(batches)} batches "
                         "(8 a batch expected: --runs 1 --warmup 0)")
    rows = []
    for i, batch in enumerate(batches):
        one = ones[8 * i:8 * i + 8]
        if len({(x["kernel"], x["grid"]) for x in one}) != 1:
            raise ValueError(f"batch {batch}: the block's launches differ in kernel or grid")
        rows.append({"batch": batch, "kernel": one[0]["kernel"], "grid": int(one[0]["grid"]),
                     "launches": len(one),
                     **{k: statistics.median(x[k] for x in one)
                        for k in ("ns", "inst", "bytes", "issue_pct", "hz")}})
    return rows


def bounds(rows: List[dict], sms: int, tbps: float) -> List[dict]:
    for r in rows:
        r["issue_bound_ms"] = r["inst"] / (4 * sms * r["hz"]) * 1e3
        r["byte_bound_ms"] = r["bytes"] / (tbps * 1e12) * 1e3
        r["ms"] = r["ns"] / 1e6
        r["over_bound"] = r["ms"] / max(r["issue_bound_ms"], r["byte_bound_ms"])
    return rows


def table(rows: List[dict]) -> str:
    lines = ["| tokens | kernel (grid) | warp instructions | DRAM read | issue bound | byte bound "
             "| ncu time | time / larger bound | issue slots busy |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        name = r["kernel"].split("(")[0].replace("void ", "").strip()
        lines.append(f"| {r['batch']} | `{name}` ({r['grid']}) | {r['inst'] / 1e6:.1f}M "
                     f"| {r['bytes'] / 1e6:.1f} MB | {r['issue_bound_ms']:.3f} ms "
                     f"| {r['byte_bound_ms']:.3f} ms | {r['ms']:.3f} ms | {r['over_bound']:.2f}x "
                     f"| {r['issue_pct']:.1f}% |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", help="ncu --csv output of compact_bench --runs 1 --warmup 0")
    ap.add_argument("--batch", required=True, help="compact_bench's --batch, in its order")
    ap.add_argument("--sms", type=int, required=True, help="the GPU's multiprocessors")
    ap.add_argument("--tbps", type=float, required=True, help="the GPU's DRAM bandwidth, TB/s")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    with open(args.csv, encoding="utf-8") as f:
        text = f.read()
    try:
        rows = bounds(per_batch(launches(text), [int(b) for b in args.batch.split(",")]),
                      args.sms, args.tbps)
    except ValueError as e:
        print(f"exec_bounds.py: {args.csv}: {e}", file=sys.stderr)
        return 1
    print(json.dumps({"rows": rows}, indent=1) if args.json else table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
