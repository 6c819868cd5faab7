"""What the vLLM plugin's decode mode pays per spans launch: 16 distinct Llama-3.1-8B blocks,
each coded on the GPU as one group (N(0, 0.02^2) BF16 weights; members in the order a df11
folder stores them, alphabetical), each decoded as the decode mode decodes a block's Linear
layers: 4 launches (q/k/v, o, gate/up, down: each weight in a launch of its own), 3 (o and
gate/up in one), 2 (q/k/v; o, gate/up and down chained: coded.SpansChain), 1 (all 7 spans), and
the whole group as one span; each launch into one fresh tensor, every output compared with the
weights bit for bit.

    python bench/spans_launches.py

Times: CUDA events around the 16 blocks, per block, median of 20 after 3 warm-ups, two rounds."""
import statistics

import torch

from df11 import coded

SH = {"mlp.down_proj": (4096, 14336), "mlp.gate_proj": (14336, 4096),
      "mlp.up_proj": (14336, 4096), "self_attn.k_proj": (1024, 4096),
      "self_attn.o_proj": (4096, 4096), "self_attn.q_proj": (4096, 4096),
      "self_attn.v_proj": (1024, 4096)}
off, at = {}, 0
for n, s in SH.items():
    off[n] = (at, s[0] * s[1]); at += s[0] * s[1]
total = at
g = torch.Generator(device="cuda").manual_seed(0)
blocks = []
for b in range(16):
    w = (torch.randn(total, generator=g, device="cuda") * 0.02).to(torch.bfloat16)
    grp = coded.GpuGroup.encoded(w, f"b{b}", "probe")
    blocks.append((grp, w))
    del w
torch.cuda.synchronize()


SETS = {"q,k,v": ["q_proj", "k_proj", "v_proj"], "o": ["o_proj"],
        "gate,up": ["mlp.gate_proj", "mlp.up_proj"], "down": ["mlp.down_proj"]}
def sp(keys):
    if keys == ["all"]:
        return [(0, total)]
    out = []
    for k in keys:
        for n in SETS[k]:
            out.append(off[n] if n.startswith("mlp") else off["self_attn." + n])
    return out


PLANS = {"4 launches (decode mode)": [["q,k,v"], ["o"], ["gate,up"], ["down"]],
         "3 launches (o with gate/up)": [["q,k,v"], ["o", "gate,up"], ["down"]],
         "2 launches": [["q,k,v"], ["o", "gate,up", "down"]],
         "1 launch": [["q,k,v", "o", "gate,up", "down"]],
         "the whole group as 1 span": [["all"]]}
res = {}
for rnd in range(2):
    for label, plan in PLANS.items():
        ws = [[coded.SpansWeight(grp, sp(keys), (sum(c for _, c in sp(keys)),)) for keys in plan]
              for grp, _ in blocks]
        outs = []
        def run():
            outs.clear()
            for per in ws:
                for w in per:
                    outs.append(w.decode())
        for _ in range(3):
            run()
        # exactness of the last run
        torch.cuda.synchronize()
        for (grp, w), per in zip(blocks, ws):
            grp.check()
        k = 0
        for (grp, w), per in zip(blocks, ws):
            for sw in per:
                o = outs[k]; k += 1
                ref = torch.cat([w[a:a + c] for a, c in sw.spans])
                assert torch.equal(o.view(torch.int16), ref.view(torch.int16)), label
        ts = []
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        for _ in range(20):
            s.record(); run(); e.record(); e.synchronize()
            ts.append(s.elapsed_time(e) / len(blocks))
        m = statistics.median(ts)
        res.setdefault(label, []).append(m)
        print(f"round {rnd} {label}: {m:.4f} ms per block, {2 * total / m / 1e9:.3f} TB/s of BF16",
              flush=True)
print(torch.cuda.get_device_name(), res)
