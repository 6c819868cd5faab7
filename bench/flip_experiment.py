#!/usr/bin/env python3
"""Corruption-detection experiment: flip one random bit per trial in the files of a DF11
model folder and check that `df11 verify` reports a failure (non-zero exit, no crash).

Usage: bench/flip_experiment.py --df11 build/cli/df11 --folder DF11_DIR [--trials 10000]
       [--seed 1] [--jobs 2] [--json results.json]

Each trial works on its own private copy of the folder (hard links except the one file it
corrupts), so trials can run in parallel and the original is never modified. A trial is:
  detected  verify exited 1 (verification failed) or 3 (invalid input) with a message
  missed    verify exited 0 although a bit differs
  crashed   verify died from a signal or exited with another code
Bits are drawn uniformly over all bytes of all files, so tensor data dominates; with
--stratify, each trial first picks one of the region kinds (shard header, coded tensor data,
raw tensor data, side file) uniformly, then a byte inside it, so that the small regions get as
many trials as the large ones. The report breaks results down by region.
"""
import argparse
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor


def list_files(folder):
    out = []
    for root, _, files in os.walk(folder):
        for f in sorted(files):
            p = os.path.join(root, f)
            out.append((os.path.relpath(p, folder), os.path.getsize(p)))
    return sorted(out)


def regions(folder, rel):
    """Returns [(begin, end, region_name)] for a file (absolute byte ranges)."""
    path = os.path.join(folder, rel)
    if not rel.endswith(".safetensors"):
        return [(0, os.path.getsize(path), "side file")]
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    spans = [(0, 8 + n, "shard header")]
    coded = (".luts", ".encoded_exponent", ".sign_mantissa", ".output_positions", ".gaps",
             ".split_positions")
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        kind = "coded tensor data" if name.endswith(coded) else "raw tensor data"
        spans.append((8 + n + b, 8 + n + e, kind))
    return spans


def region_of(spans, offset):
    for b, e, name in spans:
        if b <= offset < e:
            return name
    return "unknown"


def pick_uniform(rng, files, total):
    pos = rng.randrange(total)
    for rel, size in files:
        if pos < size:
            return rel, pos
        pos -= size
    raise AssertionError("position beyond the files")


def pick_stratified(rng, spans):
    kinds = sorted({name for ranges in spans.values() for b, e, name in ranges if e > b})
    kind = kinds[rng.randrange(len(kinds))]
    ranges = [(rel, b, e) for rel, rs in sorted(spans.items()) for b, e, name in rs
              if name == kind and e > b]
    pos = rng.randrange(sum(e - b for _, b, e in ranges))
    for rel, b, e in ranges:
        if pos < e - b:
            return rel, b + pos
        pos -= e - b
    raise AssertionError("position beyond the regions")


def run_trial(args, files, spans, total, trial_seed, workroot):
    rng = random.Random(trial_seed)
    if args.stratify:
        rel, pos = pick_stratified(rng, spans)
    else:
        rel, pos = pick_uniform(rng, files, total)
    bit = rng.randrange(8)
    work = tempfile.mkdtemp(dir=workroot)
    try:
        dst = os.path.join(work, "m")
        for r, _ in files:
            os.makedirs(os.path.dirname(os.path.join(dst, r)), exist_ok=True)
            src = os.path.join(args.folder, r)
            if r == rel:
                shutil.copyfile(src, os.path.join(dst, r))
            else:
                os.link(src, os.path.join(dst, r))
        with open(os.path.join(dst, rel), "r+b") as f:
            f.seek(pos)
            b = f.read(1)[0]
            f.seek(pos)
            f.write(bytes([b ^ (1 << bit)]))
        proc = subprocess.run([args.df11, "verify", dst, "-q", "--threads", "1"],
                              capture_output=True, timeout=300)
        rc = proc.returncode
        if rc in (1, 3):
            outcome = "detected"
        elif rc == 0:
            outcome = "missed"
        else:
            outcome = "crashed"
        return {"file": rel, "offset": pos, "bit": bit, "region": region_of(spans[rel], pos),
                "rc": rc, "outcome": outcome,
                "stderr": proc.stderr.decode("utf-8", "backslashreplace").strip().splitlines()[-1:] if outcome != "detected" else []}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--df11", required=True)
    ap.add_argument("--folder", required=True)
    ap.add_argument("--trials", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--stratify", action="store_true",
                    help="pick the region kind uniformly first, then a byte in it")
    ap.add_argument("--json")
    args = ap.parse_args()

    files = list_files(args.folder)
    total = sum(s for _, s in files)
    spans = {rel: regions(args.folder, rel) for rel, _ in files}
    workroot = tempfile.mkdtemp(prefix="df11-flip-")
    try:
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            results = list(pool.map(
                lambda i: run_trial(args, files, spans, total, args.seed * 1000003 + i, workroot),
                range(args.trials)))
    finally:
        shutil.rmtree(workroot, ignore_errors=True)

    by_region = {}
    for r in results:
        d = by_region.setdefault(r["region"], {"trials": 0, "detected": 0, "missed": 0,
                                               "crashed": 0})
        d["trials"] += 1
        d[r["outcome"]] += 1
    detected = sum(r["outcome"] == "detected" for r in results)
    print(f"| region | trials | detected | missed | crashed | rate |")
    print(f"|---|---|---|---|---|---|")
    for name, d in sorted(by_region.items()):
        print(f"| {name} | {d['trials']} | {d['detected']} | {d['missed']} | {d['crashed']} | "
              f"{100.0 * d['detected'] / d['trials']:.2f}% |")
    print(f"| **all** | {len(results)} | {detected} | "
          f"{sum(r['outcome'] == 'missed' for r in results)} | "
          f"{sum(r['outcome'] == 'crashed' for r in results)} | "
          f"{100.0 * detected / len(results):.2f}% |")
    for r in results:
        if r["outcome"] != "detected":
            print("not detected:", r, file=sys.stderr)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"files": files, "by_region": by_region, "results": results}, f)
    return 0 if all(r["outcome"] == "detected" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
