#!/usr/bin/env python3
"""Where a GPU's execution mode should switch from the fused GEMM to decode + F.linear, from
bench/exec_step.py's JSON: one or more runs with the fused GEMM at every token count
(--fused-max-tokens 256) and one or more with decode + F.linear at every count
(--fused-max-tokens 0), all on one GPU, best in one call (fused, decode, fused). For each token
count measured by both, the whole step's time (the "step" rows, the layout's column) is
compared, the slowest of the fused runs against the fastest of the decode runs; the switch is
the largest count up to which the fused GEMM is faster at every measured count
(df11.switches.choose, as `python -m df11.tune` decides; counts below the lowest measured one
are taken as fused; exit 1 if it is slower already there). Prints the ratios and the entry
for df11.exec_mode.FUSED_MAX_TOKENS_BY_GPU, the table of switches df11 carries.

    python3 bench/exec_switch.py --fused F1.json [F2.json ...] --decode D1.json [D2.json ...]
                                 [--layout exec]
"""
import argparse
import json
import sys
from typing import Dict

from df11.switches import choose as switch


def step_times(doc: dict, layout: str) -> Dict[int, float]:
    """tokens -> ms of the whole step for `layout` in one exec_step.py document."""
    key = f"{layout}_ms"
    out = {}
    for row in doc.get("rows", []):
        if row.get("layer") == "step" and row.get(key) is not None:
            out[int(row["tokens"])] = float(row[key])
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fused", nargs="+", required=True)
    ap.add_argument("--decode", nargs="+", required=True)
    ap.add_argument("--layout", default="exec")
    a = ap.parse_args(argv)
    docs_f = [json.load(open(p)) for p in a.fused]
    docs_d = [json.load(open(p)) for p in a.decode]
    gpus = {d.get("gpu") for d in docs_f + docs_d}
    if len(gpus) != 1:
        sys.exit(f"the runs are of different GPUs: {sorted(map(str, gpus))}")
    gpu = gpus.pop()
    try:
        best, rows = switch([step_times(d, a.layout) for d in docs_f],
                            [step_times(d, a.layout) for d in docs_d])
    except ValueError as e:
        sys.exit(str(e))
    print(f"{gpu}, layout {a.layout}: the step's ms, slowest fused run / fastest decode run")
    for t, f, d in rows:
        print(f"{t:>6} tokens  fused {f:8.4f}  decode + F.linear {d:8.4f}  ({f / d:.3f}x)")
    if best == 0:
        print(f"the fused GEMM is slower at {rows[0][0]} tokens, the lowest count measured: "
              "measure lower counts too (exec_step.py --tokens 1,8,16,32,...)")
        return 1
    print(f"switch: {best} tokens")
    print(f"df11.exec_mode.FUSED_MAX_TOKENS_BY_GPU[{gpu!r}] = {{{a.layout!r}: {best}}}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
