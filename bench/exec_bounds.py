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
block in one call, then the timed runs: at --runs 1 --warmup 0 the block in one call is made
8 times a batch. That call, the one the bars are set on, is what this reports: one launch, or
with the warpgroup kernels one launch per cluster size, their counts summed.

Bounds of a call: issue, its warp instructions at one per scheduler and cycle (4 schedulers a
multiprocessor, --sms multiprocessors, at the clock ncu measured); bytes, the DRAM bytes it read
at --tbps. The reference GEMM's launches (the kernels' kExec = 0 instances) are left out.
Prints a Markdown table, or with --json one JSON document.
"""
import argparse
import csv
import io
import json
import re
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


KERNEL = re.compile(r"(wide_|split_|wgb?_)?gemm_kernel\s*<([^<>]*)>")


def fused(launch: dict) -> bool:
    """The fused GEMM's own launches. gemm_kernel, wg_gemm_kernel and wgb_gemm_kernel take kExec
    first (false: the reference GEMM); the wide and cluster kernels exist only fused."""
    m = KERNEL.search(launch["kernel"])
    if m is None:
        raise ValueError(f"launch {launch['id']}: not a GEMM kernel: {launch['kernel']}")
    if m.group(1) in ("wide_", "split_"):
        return True
    first = m.group(2).split(",")[0].strip()
    if first in ("1", "true"):
        return True
    if first in ("0", "false"):
        return False
    raise ValueError(f"launch {launch['id']}: no kExec argument in {launch['kernel']}")


def segments(all_launches: List[dict]) -> List[List[dict]]:
    """The runs of fused launches between reference launches, in order."""
    out: List[List[dict]] = [[]]
    for x in all_launches:
        if fused(x):
            out[-1].append(x)
        elif out[-1]:
            out.append([])
    return [s for s in out if s]


def signature(group: List[dict]) -> list:
    return [(x["kernel"], x["grid"]) for x in group]


def per_batch(all_launches: List[dict], batches: List[int]) -> List[dict]:
    """The block's one call per batch: the launches that multiply all 7 matrices (one, or one per
    cluster size with the warpgroup kernels). compact_bench makes it 8 times a batch at --runs 1
    --warmup 0. It checks each matrix first: the reference (one or two launches), the matrix
    fused, the block in one call; then it times the 7 matrices fused and the block in one call.
    So between reference launches a batch has 7 runs of fused launches, the first 6 [matrix,
    block] and the 7th [matrix, block, 7 matrices, block]."""
    runs = segments(all_launches)
    if not runs:
        raise ValueError("no launch of the fused GEMM's kernels")
    if len(runs) != 7 * len(batches):
        raise ValueError(f"{len(runs)} runs of fused launches between reference launches for "
                         f"{len(batches)} batches (7 a batch expected: --runs 1 --warmup 0)")
    rows = []
    for i, batch in enumerate(batches):
        mine = runs[7 * i:7 * i + 7]
        parts = len(mine[0]) - 1
        if parts < 1 or any(len(r) != parts + 1 for r in mine[:6]) or \
                len(mine[6]) != 2 * parts + 8:
            raise ValueError(f"batch {batch}: fused launches {[len(r) for r in mine]} between "
                             "reference launches do not match compact_bench's checks")
        groups = [r[1:] for r in mine[:6]] + [mine[6][1:1 + parts], mine[6][-parts:]]
        if len({str(signature(g)) for g in groups}) != 1:
            raise ValueError(f"batch {batch}: the block's launches differ in kernel or grid")
        totals = []
        for g in groups:
            ns = sum(x["ns"] for x in g)
            totals.append({"ns": ns, "inst": sum(x["inst"] for x in g),
                           "bytes": sum(x["bytes"] for x in g),
                           # time-weighted, as the parts run one after another
                           "issue_pct": sum(x["issue_pct"] * x["ns"] for x in g) / ns,
                           "hz": sum(x["hz"] * x["ns"] for x in g) / ns})
        rows.append({"batch": batch, "kernels": [x["kernel"] for x in groups[0]],
                     "grids": [int(x["grid"]) for x in groups[0]], "launches": len(groups),
                     **{k: statistics.median(t[k] for t in totals)
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
        names = [KERNEL.search(k).group(0) for k in r["kernels"]]
        grids = " + ".join(str(g) for g in r["grids"])
        name = " + ".join(f"`{n}`" for n in dict.fromkeys(names))
        lines.append(f"| {r['batch']} | {name} ({grids}) | {r['inst'] / 1e6:.1f}M "
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
