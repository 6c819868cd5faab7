#!/usr/bin/env python3
"""Where a decoding step's Linear time goes in the execution layout: the Llama-3.1-8B block's
Linear layers as a serving engine runs them (q/k/v one layer, gate/up one layer, o, down:
df11.exec_mode.ExecWeight, as vLLM's mode "exec" does) against F.linear on the same BF16
weights (cuBLAS), over --layers distinct blocks so that the weights stream from device memory
as in a model's step (not from the L2 cache, as a loop over one matrix would), at each token
count. Gaussian weights (std 0.02), encoded with df11's encoder, one group per block, and
transcoded on the GPU as at load. Each cell: CUDA graph of the layers' calls, CUDA-event median
of --runs replays after warm-up (exec_peers.timed); a row per layer kind and one for the whole
step; ratio = exec / cuBLAS time. Outputs are compared with df11's reference GEMM first. Up to
--fused-max-tokens tokens (default exec_mode.FUSED_MAX_TOKENS["exec"], 64) the fused GEMM runs
(up to 256: the wide kernel above 32 tokens, decoder/cuda/EXEC_KERNEL.md v9), above it decode +
F.linear (0: decode + F.linear at every token count).

    python3 bench/exec_step.py [--layers 8] [--tokens 1,2,4,8,16] [--runs 30] [--json OUT]
                               [--fused-max-tokens N]
    (df11 importable with its CUDA library; the encoder's library for the folder)
"""
import argparse
import json
import os
import sys
import tempfile

import torch

from exec_peers import timed

import df11
from df11 import coded, exec_mode

HIDDEN, KV, FFN = 4096, 1024, 14336
MEMBERS = {"self_attn.q_proj": (HIDDEN, HIDDEN), "self_attn.k_proj": (KV, HIDDEN),
           "self_attn.v_proj": (KV, HIDDEN), "self_attn.o_proj": (HIDDEN, HIDDEN),
           "mlp.gate_proj": (FFN, HIDDEN), "mlp.up_proj": (FFN, HIDDEN),
           "mlp.down_proj": (HIDDEN, FFN)}
LAYERS = {"qkv": ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"],
          "o": ["self_attn.o_proj"], "gate_up": ["mlp.gate_proj", "mlp.up_proj"],
          "down": ["mlp.down_proj"]}


def build(n_layers, work):
    gen = torch.Generator(device="cuda").manual_seed(0)
    weights = {f"model.layers.{i}.{m}.weight":
               (torch.randn(*shape, device="cuda", generator=gen) * 0.02).to(torch.bfloat16).cpu()
               for i in range(n_layers) for m, shape in MEMBERS.items()}
    folder = coded.encode(weights, os.path.join(work, "blocks"))  # one group per tensor
    dev = torch.device("cuda", 0)
    layers = []  # per block: {kind: (ExecWeight, BF16 weight on the GPU)}
    keep = []
    for i in range(n_layers):
        block = {}
        for kind, members in LAYERS.items():
            mats, bf16 = [], []
            for m in members:
                name = f"model.layers.{i}.{m}.weight"
                g = folder.tensor_group(folder.find_tensor(name))
                blob, ms, _ = exec_mode.transcode_group(folder, g, dev)
                keep.append(blob)
                mats += ms
                bf16.append(weights[name])
            w = torch.cat(bf16).to(dev)
            block[kind] = (exec_mode.ExecWeight(blob, mats, f"block {i} {kind}"), w)
        layers.append(block)
    folder.close()
    return layers, keep


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--tokens", default="1,2,4,8,16")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--json")
    ap.add_argument("--fused-max-tokens", type=int, default=exec_mode.FUSED_MAX_TOKENS["exec"])
    a = ap.parse_args()
    exec_mode.FUSED_MAX_TOKENS["exec"] = a.fused_max_tokens
    torch.set_grad_enabled(False)
    name = torch.cuda.get_device_name(0)
    with tempfile.TemporaryDirectory(prefix="exec-step-", dir="/dev/shm") as work:
        layers, keep = build(a.layers, work)
    rows = []
    print(f"{name}: {a.layers} blocks of Llama-3.1-8B shapes; ms per step over all blocks")
    print(f"{'tokens':>6} {'layer':>8} {'exec ms':>9} {'cuBLAS ms':>10} {'ratio':>6}")
    for t in [int(x) for x in a.tokens.split(",")]:
        gen = torch.Generator(device="cuda").manual_seed(t)
        xs = {k: torch.randn(t, HIDDEN if k != "down" else FFN, device="cuda",
                             generator=gen).to(torch.bfloat16) for k in LAYERS}
        for blk in layers:  # exactness first: the fused GEMM against its reference
            for kind, (ew, w) in blk.items():
                if not torch.equal(ew.linear(xs[kind], None),
                                   exec_mode.reference_linear(xs[kind], w)):
                    sys.exit(f"{kind}: the fused GEMM differs from df11's reference GEMM")
        for kind in list(LAYERS) + ["step"]:
            kinds = list(LAYERS) if kind == "step" else [kind]

            def run_exec():
                for blk in layers:
                    for k in kinds:
                        blk[k][0].linear(xs[k], None)

            def run_cublas():
                for blk in layers:
                    for k in kinds:
                        torch.nn.functional.linear(xs[k], blk[k][1])
            e, c = timed(run_exec, a.runs, a.warmup), timed(run_cublas, a.runs, a.warmup)
            rows.append({"tokens": t, "layer": kind, "exec_ms": e, "cublas_ms": c,
                         "ratio": e / c})
            print(f"{t:>6} {kind:>8} {e:>9.4f} {c:>10.4f} {e / c:>6.3f}")
    del keep
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"gpu": name, "layers": a.layers, "df11": df11.version(),
                       "fused_max_tokens": a.fused_max_tokens,
                       "command": " ".join(["python3", "bench/exec_step.py"] + sys.argv[1:]),
                       "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
