#!/usr/bin/env python3
"""What dynamo checks on each step of transformers' compiled generate: BF16 against df11.

    python bench/compiled_lookups.py [--layers 32] [--rounds 3] [--work DIR] [--json F]
        [--variants bf16,df11,df11-exec] [--python DIR] [--device cuda] [--trees DIR]

transformers' compiled generate (`cache_implementation="static"`) compiles the model's
__call__, and on every step dynamo looks the step up in its cache: it runs the guards of each
compiled frame the call enters (torch.profiler's "TorchDynamo Cache Lookup" events). This
counts those lookups and their time per step, for a Llama of `--layers` blocks with tiny
matrices (hidden 64, random weights), on the CPU (backend "aot_eager", fullgraph), with
df11's units decoded whole into the device's buffer as on a GPU (engine.CPU_PARTS off), so
that the modules and hooks dynamo traces are the GPU's. Each variant runs in a process of its
own (`--python DIR`: another checkout's python/ for df11, to compare two versions of it),
`--rounds` profiled generates of 16 new tokens each. The lookup time is a CPU time under the
profiler, which inflates it: compare variants with each other only. Needs the df11 CLI
(DF11_CLI) to compress the model.

`--device cuda` runs the same on the GPU as transformers compiles there (its default compile
config: Inductor, CUDA graphs), df11 loaded on the GPU (variant "df11-exec": `mode="exec"`);
`--trees DIR` writes each variant's last guard tree to DIR/VARIANT.txt, to compare them.
"""
import argparse
import contextlib
import json
import logging
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.join(HERE, "..", "python", "tests")
STEPS = 16
GUARDS_LOG = "torch._dynamo.guards.__guards"  # where dynamo logs each compiled frame's guards


def worker(variant: str, folder: str, rounds: int, device: str = "cpu", trees: str = "") -> dict:
    import torch
    from torch.profiler import ProfilerActivity, profile
    from transformers import CompileConfig

    import df11
    import models
    if variant == "bf16":
        model = models.bf16_llm(os.path.join(folder, "bf16"), device)
    elif device == "cpu":
        df11.engine.CPU_PARTS = False
        model = df11.from_pretrained(os.path.join(folder, "df11"), device="cpu")
    else:
        mode = "exec" if variant == "df11-exec" else "decode"
        model = df11.from_pretrained(os.path.join(folder, "df11"), device=device, mode=mode)
    ids = models.llm_inputs(model.config.vocab_size, 1, length=8, seed=5).to(device)
    if device == "cpu":
        config = CompileConfig(backend="aot_eager", fullgraph=True)
        config._compile_all_devices = True  # transformers compiles on GPUs only, unless told
    else:
        config = CompileConfig()  # what transformers compiles with on a GPU by default
    kw = dict(attention_mask=torch.ones_like(ids), do_sample=False, eos_token_id=None,
              pad_token_id=0, cache_implementation="static", compile_config=config)
    runs = []
    with logged_guards() as guards:  # the guard trees dynamo logs for each frame it compiles
        with torch.no_grad():
            model.generate(input_ids=ids, max_new_tokens=6, min_new_tokens=6, **kw)  # compiles
    # The compiled step's guards: those of the last tree dynamo logged (the step recompiled
    # for the static cache's state after the first), and the leaf checks in it.
    trees_dir, trees = trees, [m for m in guards if "TREE_GUARD_MANAGER" in m]
    latency = guard_latencies(guards)
    last = trees[-1] if trees else ""
    if trees_dir:
        with open(os.path.join(trees_dir, f"{variant}.txt"), "w") as f:
            f.write(last)
    leaves = re.findall(r"\+- (?!\w*Manager)[A-Z_]+:", last)
    with torch.no_grad():
        for _ in range(rounds):
            with profile(activities=[ProfilerActivity.CPU]) as p:
                model.generate(input_ids=ids, max_new_tokens=STEPS, min_new_tokens=STEPS, **kw)
            lookups = [e.cpu_time_total for e in p.events() if "Cache Lookup" in e.name]
            # The prefill runs eagerly; every later token is one compiled step.
            runs.append(dict(lookups_per_step=round(len(lookups) / (STEPS - 1), 2),
                             lookup_us_per_step=round(sum(lookups) / (STEPS - 1), 1)))
    return dict(variant=variant, guard_trees=len(trees), last_tree_checks=len(leaves),
                guard_eval_us_logged=latency,
                last_tree_aliasing=last.count("OBJECT_ALIASING"),
                last_tree_tensor_checks=last.count("TENSOR_MATCH"), runs=runs)


@contextlib.contextmanager
def logged_guards():
    """Collects, while the block runs, the guard trees dynamo logs for each frame it compiles
    (a list of messages)."""
    import torch
    guards = []
    handler = _Collect(guards)
    torch._logging.set_logs(guards=True)
    logging.getLogger(GUARDS_LOG).addHandler(handler)
    try:
        yield guards
    finally:
        torch._logging.set_logs()
        logging.getLogger(GUARDS_LOG).removeHandler(handler)


def guard_latencies(guards):
    """The guard evaluation time dynamo measured for each compiled frame (us), in order."""
    return [float(x) for m in guards for x in re.findall(r"Guard eval latency = ([0-9.]+) us", m)]


class _Collect(logging.Handler):
    def __init__(self, out):
        super().__init__()
        self.out = out

    def emit(self, record):
        self.out.append(record.getMessage())


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--layers", type=int, default=32)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--work", default="/dev/shm/compiled-lookups")
    p.add_argument("--variants", default="bf16,df11")
    p.add_argument("--python", default="", help="the python/ folder df11 is imported from")
    p.add_argument("--device", default="cpu")
    p.add_argument("--trees", default="", help="a folder for each variant's last guard tree")
    p.add_argument("--json", default="")
    p.add_argument("--worker", default="", help=argparse.SUPPRESS)
    a = p.parse_args()
    sys.path.insert(0, TESTS)
    if a.worker:
        print("LOOKUPS " + json.dumps(worker(a.worker, a.work, a.rounds, a.device, a.trees)),
              flush=True)
        return
    import models
    if a.trees:
        os.makedirs(a.trees, exist_ok=True)
    folder = os.path.join(a.work, f"llama{a.layers}")
    if not os.path.isdir(os.path.join(folder, "df11")):
        models.build_llm("llama", num_hidden_layers=a.layers).save_pretrained(
            os.path.join(folder, "bf16"))
        models.df11_compress(os.path.join(folder, "bf16"), os.path.join(folder, "df11"))
    env = dict(os.environ)
    if a.python:
        env["PYTHONPATH"] = os.pathsep.join([os.path.abspath(a.python), TESTS,
                                             env.get("PYTHONPATH", "")])
    rows = []
    for v in a.variants.split(","):
        proc = subprocess.run([sys.executable, __file__, "--worker", v, "--work", folder,
                               "--rounds", str(a.rounds), "--device", a.device,
                               "--trees", os.path.abspath(a.trees) if a.trees else ""],
                              env=env, capture_output=True, text=True)
        lines = [x for x in proc.stdout.splitlines() if x.startswith("LOOKUPS ")]
        if proc.returncode != 0 or not lines:
            sys.exit(f"compiled_lookups: {v} failed (exit {proc.returncode}):\n"
                     f"{proc.stderr[-3000:]}")
        row = json.loads(lines[-1][len("LOOKUPS "):])
        rows.append(row)
        per = [r["lookup_us_per_step"] for r in row["runs"]]
        print(f"{v:6s} {row['runs'][0]['lookups_per_step']:.2f} lookups per step, "
              f"{min(per):.0f}-{max(per):.0f} us per step (profiled); the step's guards: "
              f"{row['last_tree_checks']} checks, {row['last_tree_aliasing']} aliasing, "
              f"{row['last_tree_tensor_checks']} tensor ({row['guard_trees']} trees logged; "
              f"their eval latency at compile, us: {row['guard_eval_us_logged']})",
              flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(layers=a.layers, steps=STEPS, python=a.python or "this checkout",
                           device=a.device, rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
