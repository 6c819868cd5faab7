#!/usr/bin/env python3
"""Paired whole-process timing: command A against command B, run in turn.

    python3 bench/paired_ab.py -n 15 --vs "zstd -1 -T2 -q -c in.bin -o out.zst" -- \
        df11 compress model -o out -q --force

A and B run alternately (A B A B ...) after --warmup uncounted runs of each. Each run's wall
seconds come from a monotonic clock around the child; its user and system seconds and peak
resident set come from the kernel's accounting of that child (wait4), its own children
included as far as they were waited for. The ratio A/B is taken pair by pair, so it stays
meaningful when the machine's speed drifts during the call; quote the medians. Commands are
split as a shell splits words and run without a shell: one that needs a pipe or a redirection
is written as sh -c '...'. Standard input is empty; output is thrown away unless --keep names a
file to append both commands' output to. A peak cannot read below the floor printed first: a
child starts as a copy of this process, and the kernel counts that copy's pages.

Exit status: 0 when every run was started (a command's own non-zero exit is printed, not acted
on), 2 for unusable arguments or a command that cannot be started.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass


@dataclass
class Run:
    wall: float
    user: float
    sys: float
    peak_mib: float
    code: int

    @property
    def cpu(self) -> float:
        return self.user + self.sys


def run_once(argv: list[str], keep) -> Run:
    out = keep if keep is not None else subprocess.DEVNULL
    start = time.monotonic()
    child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.monotonic() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    # ru_maxrss is in KiB on Linux.
    return Run(wall, usage.ru_utime, usage.ru_stime, usage.ru_maxrss / 1024.0, child.returncode)


def row(name: str, values: list[float], digits: int) -> str:
    fmt = f"{{:12.{digits}f}}"
    low, mid, high = min(values), statistics.median(values), max(values)
    return f"{name:<14}" + fmt.format(low) + fmt.format(mid) + fmt.format(high)


def report(a_cmd: str, b_cmd: str | None, a: list[Run], b: list[Run], floor: float) -> str:
    lines = [f"peak floor {floor:.1f} MiB (what a child that does nothing reads)", f"A = {a_cmd}"]
    if b_cmd is not None:
        lines.append(f"B = {b_cmd}")
    for name, runs in (("A", a), ("B", b)):
        if runs:
            codes = sorted({r.code for r in runs})
            lines.append(f"{name} exit {', '.join(map(str, codes))} ({len(runs)} runs)")
    lines.append(f"{'':14}{'min':>12}{'median':>12}{'max':>12}   whole process")
    for name, runs in (("A", a), ("B", b)):
        if not runs:
            continue
        lines.append(row(f"{name} user s", [r.user for r in runs], 3))
        lines.append(row(f"{name} sys s", [r.sys for r in runs], 3))
        lines.append(row(f"{name} cpu s", [r.cpu for r in runs], 3))
        lines.append(row(f"{name} wall s", [r.wall for r in runs], 3))
        lines.append(row(f"{name} peak MiB", [r.peak_mib for r in runs], 1))
    if b:
        pairs = list(zip(a, b))
        for what in ("user", "cpu", "wall"):
            ratios = [getattr(x, what) / getattr(y, what) for x, y in pairs if getattr(y, what) > 0]
            if ratios:
                lines.append(row(f"A/B {what}", ratios, 4))
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        description="Paired whole-process timing of A against B (A B A B ...).")
    parser.add_argument("-n", "--runs", type=int, default=5, help="counted runs of each command")
    parser.add_argument("--warmup", type=int, default=1, help="uncounted runs of each, first")
    parser.add_argument("--vs", metavar="COMMAND_B", help="the baseline, one shell-split string")
    parser.add_argument("--keep", metavar="FILE", help="append both commands' output to FILE")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARG ...] (A)")
    args = parser.parse_args(argv)
    a_argv = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not a_argv or args.runs < 1 or args.warmup < 0:
        parser.print_usage(sys.stderr)
        print("paired_ab.py: give -n >= 1, --warmup >= 0 and a command after --", file=sys.stderr)
        return 2
    b_argv = shlex.split(args.vs) if args.vs is not None else None
    keep = open(args.keep, "ab") if args.keep else None
    try:
        floor = run_once(["true"], None).peak_mib
        a_runs: list[Run] = []
        b_runs: list[Run] = []
        for k in range(args.warmup + args.runs):
            counted = k >= args.warmup
            result = run_once(a_argv, keep)
            if counted:
                a_runs.append(result)
            if b_argv is not None:
                result = run_once(b_argv, keep)
                if counted:
                    b_runs.append(result)
    except OSError as e:
        print(f"paired_ab.py: cannot start the command: {e}", file=sys.stderr)
        return 2
    finally:
        if keep is not None:
            keep.close()
    print(report(shlex.join(a_argv), args.vs, a_runs, b_runs, floor))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
