#!/usr/bin/env python3
"""Host time of the default (decode) mode's forward pass, against BF16's, on one GPU.

    python bench/default_host.py [--layers 32] [--passes 300] [--forward-passes 20]
                                 [--rounds 7] [--exec] [--json F]

Eager generate at small batches is bound by the host (BENCHMARKS.md, "Python engine"): what
df11 adds to a forward pass on the CPU is what a token loses there. On the package's tiny Llama
with --layers blocks (python/tests/models.py, so that the GPU's work is a small part of each
call), BF16 (transformers) and df11 in its default mode (and `mode="exec"`) are loaded side by
side and timed in the same rounds:

  - forward: `model(ids)`, one token, no cache: microseconds of host time per pass;
  - the default mode's parts of it, each called alone as the forward calls it: a block's
    decode launch, a block's pre- and post-hook, the root's deferred status read and the
    forward's end (the statuses' copy, an event), once per forward each.

Reported: medians over --rounds rounds of --passes calls (--forward-passes for the forward
passes), the GPU drained between rounds.
Needs the df11 CLI (DF11_CLI) to compress the model.
"""
import argparse
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time

import torch
from transformers import AutoModelForCausalLM

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python",
                                "tests"))
import df11  # noqa: E402
from df11 import _capi  # noqa: E402
import models  # noqa: E402


def timed(fn, passes: int) -> float:
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(passes):
        fn()
    t = time.perf_counter() - t0
    torch.cuda.synchronize()
    return 1e6 * t / passes


def parts(model):
    """The default mode's per-forward host work, each as a call: {name: (fn, per forward)}."""
    engine = model.df11
    unit = next(u for u in engine.units if u.module)
    module = model.get_submodule(unit.module)
    (pre,) = list(module._forward_pre_hooks.values())
    (post,) = list(module._forward_hooks.values())
    decoder = unit.groups[0].decoder
    blocks = sum(1 for u in engine.units if u.module)

    def hooks():
        pre(module, ())
        post(module, (), None)

    # The launch's two halves, through the C API with the arguments made beforehand.
    lib = _capi.lib()
    plan, ws, ws_bytes, h_status, status_bytes = decoder._args
    stream = torch.cuda.current_stream().cuda_stream

    def decode_alone():
        lib.df11_cuda_decode(plan, ws, ws_bytes, stream)

    def status_alone():
        lib.df11_cuda_status_copy(plan, ws, h_status, status_bytes, stream)
    return {
        "decode launch": (decoder.decode_now, blocks),
        "  its decode alone": (decode_alone, blocks),
        "  its status copy alone": (status_alone, blocks),
        "  a foreign call doing nothing": (lambda: lib.df11_cuda_plan_errcode(plan), blocks),
        "block hooks (with the launch)": (hooks, blocks),
        "status read": (lambda: engine.check_status(wait=False), 1),
        "forward's end (status copies, event)": (engine._mark_forward_end, 1),
    }


def exec_parts(model, layers: int):
    """mode="exec": layer 0's q/k/v as its attention calls them (q launches the three, k and v
    are served from that launch), and the launch's foreign call alone: {name: (fn, per)}."""
    att = model.model.layers[0].self_attn
    q, k, v = att.q_proj, att.k_proj, att.v_proj
    x = torch.randn(1, 1, q.in_features, device="cuda").to(torch.bfloat16)
    lin = q._df11_exec
    site = lin.site
    n = len(site.linears)
    outs = [x.new_empty((1, 1, m.rows)) for m in site.linears]
    for g, y in zip(site.gemms, outs):
        g.d_x, g.d_y = x.data_ptr(), y.data_ptr()
    stream = torch.cuda.current_stream().cuda_stream

    def launch_alone():
        lin._gemm(None, site.gemms, n, 1, site.status_ptr, _capi.EXEC_STATUS_BYTES,
                  _capi.EXEC_KEEP_STATUS, stream)

    def qkv():
        q(x)
        k(x)
        v(x)
    return {
        "exec q, k, v (one launch)": (qkv, layers),
        "  the launch's foreign call alone": (launch_alone, layers),
        "  x.new_empty": (lambda: x.new_empty((1, 1, 1024)), layers * 3),
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--passes", type=int, default=300)
    ap.add_argument("--forward-passes", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--exec", action="store_true", help="time mode='exec' too")
    ap.add_argument("--json")
    args = ap.parse_args()
    torch.set_grad_enabled(False)
    results = {"gpu": torch.cuda.get_device_name(0), "df11": df11.__file__,
               "layers": args.layers}
    with tempfile.TemporaryDirectory() as work:
        bf16_dir, df11_dir = models.llama_folders(work, num_hidden_layers=args.layers)
        variants = {
            "bf16": AutoModelForCausalLM.from_pretrained(bf16_dir, dtype=torch.bfloat16,
                                                         device_map="cuda").eval(),
            "df11": df11.from_pretrained(df11_dir, device="cuda"),
        }
        if args.exec:
            variants["df11-exec"] = df11.from_pretrained(df11_dir, device="cuda", mode="exec")
        ids = torch.ones(1, 1, dtype=torch.long, device="cuda")
        calls = {f"forward {name}": (lambda m=m: m(ids, use_cache=False), 1, args.forward_passes)
                 for name, m in variants.items()}
        calls.update({name: (fn, per, args.passes)
                      for name, (fn, per) in parts(variants["df11"]).items()})
        if args.exec:
            calls.update({name: (fn, per, args.passes) for name, (fn, per) in
                          exec_parts(variants["df11-exec"], args.layers).items()})
            att = variants["bf16"].model.layers[0].self_attn
            xb = torch.randn(1, 1, att.q_proj.in_features, device="cuda").to(torch.bfloat16)

            def bf16_qkv():
                att.q_proj(xb)
                att.k_proj(xb)
                att.v_proj(xb)
            calls["bf16 q, k, v (three nn.Linear)"] = (bf16_qkv, args.layers, args.passes)
        times = {name: [] for name in calls}
        for name, (fn, _, _) in calls.items():  # warm-up
            timed(fn, 5)
        for r in range(args.rounds):
            for name, (fn, _, passes) in calls.items():
                times[name].append(timed(fn, passes))
        rows = {}
        for name, us in times.items():
            per = calls[name][1]
            med = statistics.median(us)
            rows[name] = {"us_per_call": med, "calls_per_forward": per,
                          "us_per_forward": med * per, "rounds": us}
            print(f"{name:32} {med:9.1f} us a call x {per:3} = {med * per:9.1f} us a forward "
                  f"(rounds {min(us):.1f}-{max(us):.1f})", flush=True)
        base = rows["forward bf16"]["us_per_call"]
        for name in rows:
            if name.startswith("forward ") and name != "forward bf16":
                extra = rows[name]["us_per_call"] - base
                print(f"{name}: {extra:+.1f} us a forward against BF16's "
                      f"({extra / args.layers:+.1f} us a block)", flush=True)
        results["calls"] = rows
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
