"""The selected-rows decode on its own (df11_cuda_decode_selected_rows, what the vLLM plugin runs
before each MoE layer's experts): Qwen3-30B-A3B's expert shapes (128 experts; w13 2 x 768 x 2048
and w2 2048 x 768 per expert), LAYERS layers, each weight coded on the GPU as one group with a
row per expert (N(0, 0.02^2) BF16 weights, as coded.ExpertsWeight holds them in vLLM). A step
decodes every layer's w13 and w2 into two shared buffers, as a step of the plugin does, with
masks selecting K experts per layer (a fixed random choice per layer). K = 8 is one token's
top 8; T tokens' top 8 name 128 (1 - (127/128)^(8T)) distinct experts on average under uniform
routing: 28 at T = 4, 51 at T = 8, 81 at T = 16, 111 at T = 32. Each launch is sized for
`expected` selected rows, for expected in 8, K / 2, K and 2 K; then every expert in one launch
(the decode without a mask: the whole group as one span).

    python bench/selected_rows.py [--layers 12] [--json OUT.json]

Times: CUDA events around one step (2 x LAYERS launches), median of 20 after 3 warm-ups; GB/s
count the BF16 bytes written (2 per selected weight). Every variant's outputs are compared with
the weights bit for bit after its timed runs, and the groups' decode status checked."""
import argparse
import json
import statistics

import torch

from df11 import coded

EXPERTS, HIDDEN, INTER, TOPK = 128, 2048, 768, 8
SHAPES = {"w13": (EXPERTS, 2 * INTER, HIDDEN), "w2": (EXPERTS, HIDDEN, INTER)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--counts", default="8,16,28,51,81,111,128")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    gen = torch.Generator(device="cuda").manual_seed(0)
    layers = []  # per layer: {kind: (weight, original)}
    for i in range(a.layers):
        per = {}
        for kind, shape in SHAPES.items():
            w = (torch.randn(shape, generator=gen, device="cuda") * 0.02).to(torch.bfloat16)
            group = coded.GpuGroup.encoded(w, f"layers.{i}.mlp.experts.{kind}", "probe")
            per[kind] = (coded.ExpertsWeight(group, shape, TOPK), w)
        layers.append(per)
    buffers = {kind: torch.empty(shape, dtype=torch.bfloat16, device="cuda")
               for kind, shape in SHAPES.items()}
    per_expert = sum(s[1] * s[2] for s in SHAPES.values())
    pick = torch.Generator().manual_seed(1)
    masks = {}
    counts = [int(c) for c in a.counts.split(",")]
    for k in counts:
        ms = []
        for _ in range(a.layers):
            m = torch.zeros(EXPERTS, dtype=torch.int32)
            m[torch.randperm(EXPERTS, generator=pick)[:k]] = 1
            ms.append(m.cuda())
        masks[k] = ms

    def step(mask_of, expected):
        for i, per in enumerate(layers):
            for kind, (weight, _) in per.items():
                if mask_of is None:
                    weight.decode_into(buffers[kind])
                else:
                    weight.group.decode_selected_rows(mask_of[i], weight.row_elements,
                                                      expected, buffers[kind])

    def verify(mask_of):
        # The last layer's rows are what the buffers hold after a step.
        per = layers[-1]
        chosen = (range(EXPERTS) if mask_of is None else
                  mask_of[-1].nonzero().flatten().tolist())
        for kind, (weight, w) in per.items():
            weight.group.check()
            for e in chosen:
                if not torch.equal(buffers[kind][e].view(torch.int16), w[e].view(torch.int16)):
                    raise SystemExit(f"{kind}: expert {e} differs from the weights")
        for per in layers:
            for weight, _ in per.values():
                weight.group.check()

    def timed(mask_of, expected):
        for _ in range(3):
            step(mask_of, expected)
        torch.cuda.synchronize()
        ts = []
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        for _ in range(a.runs):
            s.record()
            step(mask_of, expected)
            e.record()
            e.synchronize()
            ts.append(s.elapsed_time(e))
        verify(mask_of)
        return statistics.median(ts)

    rows = []
    for k in counts:
        nbytes = 2 * per_expert * k * a.layers
        for expected in sorted({TOPK, max(TOPK, k // 2), k, min(EXPERTS, 2 * k)}):
            ms = timed(masks[k], expected)
            rows.append({"selected": k, "expected": expected, "ms": ms,
                         "GBps": nbytes / ms / 1e6})
            print(f"K={k:3d} expected {expected:3d}: {ms:.3f} ms per step, "
                  f"{nbytes / ms / 1e6:.0f} GB/s of BF16", flush=True)
    nbytes = 2 * per_expert * EXPERTS * a.layers
    ms = timed(None, TOPK)
    rows.append({"selected": EXPERTS, "expected": None, "ms": ms,
                 "GBps": nbytes / ms / 1e6})
    print(f"K={EXPERTS} no mask (one span): {ms:.3f} ms per step, {nbytes / ms / 1e6:.0f} GB/s "
          "of BF16", flush=True)
    result = {"device": torch.cuda.get_device_name(), "layers": a.layers, "runs": a.runs,
              "rows": rows}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
