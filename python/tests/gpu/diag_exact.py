"""Why do greedy tokens of the 8B-shaped model differ between df11 and BF16 at eager batch 8
(and under CUDA graphs at batch 1) while one forward pass's logits are torch.equal? Each
candidate cause is isolated on the GPU in one run:
  1. operand placement: F.linear on a standalone weight against the same weight as a view at
     several offsets into a larger buffer (what df11's decode buffer is), at 1, 8 and 128 rows;
  2. model construction: BF16 loaded by from_pretrained(device_map="cuda") against BF16 built
     as df11 builds its skeleton (from_config without weights, tensors set from safetensors,
     buffers moved), their buffers, configs and generation configs;
  3. logits step by step, every model fed the same tokens (teacher forcing: the first step
     whose logits differ, instead of waiting for an argmax to flip): generate()'s eager steps
     at batch 1 and 8, and static-cache steps at batch 1 eager and under a CUDA graph, for BF16
     (both constructions, from_pretrained twice for run-to-run determinism), BF16 with its
     weights moved into one buffer per block (df11's layout), and df11.
Prints one line per comparison."""
import argparse
import gc
import json
import os
import sys

import torch

DEV = "cuda"  # --device cpu: a dry run of the script on a small model

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def alignment_table():
    torch.manual_seed(0)
    shapes = [(4096, 4096), (1024, 4096), (14336, 4096), (4096, 14336), (128256, 4096)]
    rows = []
    for (n, k) in shapes:
        w = (torch.randn(n, k, device="cuda") * 0.02).to(torch.bfloat16)
        for m in (1, 8, 128):
            x = torch.randn(m, k, device="cuda").to(torch.bfloat16)
            ref = torch.nn.functional.linear(x, w)
            diff = []
            for off in (256, 512, 1024, 4096, 65536, 1 << 21):
                buf = torch.empty(w.numel() + off // 2 + 64, dtype=torch.bfloat16, device="cuda")
                view = buf[off // 2:off // 2 + w.numel()].view(n, k)
                view.copy_(w)
                y = torch.nn.functional.linear(x, view)
                if not torch.equal(y, ref):
                    diff.append(off)
                del buf, view
            rows.append(((n, k), m, diff))
            print(f"align: W {n}x{k} rows {m}: F.linear on a view differs from the standalone "
                  f"weight at offsets {diff or 'none'}", flush=True)
        del w
    torch.cuda.empty_cache()
    return rows


def prompt(vocab, batch, length=16, seed=1234):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(1, vocab, (batch, length), generator=g).to(DEV)


@torch.no_grad()
def forced_eager(model, ids, forced):
    """What generate() runs at each step (dynamic cache, the attention mask growing), fed the
    tokens `forced` [batch, steps] instead of its argmax: each step's last logits."""
    from transformers import DynamicCache
    cache = DynamicCache(config=model.config)
    mask = torch.ones_like(ids)
    out = model(input_ids=ids, attention_mask=mask, past_key_values=cache, use_cache=True)
    logits = [out.logits[:, -1].clone()]
    for i in range(forced.shape[1]):
        mask = torch.cat([mask, mask.new_ones(mask.shape[0], 1)], dim=1)
        out = model(input_ids=forced[:, i:i + 1], attention_mask=mask, past_key_values=cache,
                    use_cache=True)
        logits.append(out.logits[:, -1].clone())
    return torch.stack(logits)  # [steps + 1, batch, vocab]


def first_step(a, b):
    """'torch.equal' or the first step whose logits differ."""
    for i in range(min(len(a), len(b))):
        if not torch.equal(a[i], b[i]):
            return f"DIFFER from step {i} (max |d| {(a[i].float() - b[i].float()).abs().max().item():.3g})"
    return "torch.equal at every step"


def skeleton_bf16(bf16_dir):
    """BF16 built as df11 builds its model: from_config under init_empty_weights (buffers on
    the CPU), every tensor of the safetensors files set as its parameter, then moved."""
    from accelerate import init_empty_weights
    from safetensors.torch import load_file
    from transformers import AutoConfig, AutoModelForCausalLM
    config = AutoConfig.from_pretrained(bf16_dir)
    with init_empty_weights(include_buffers=False):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    state = {}
    for f in sorted(os.listdir(bf16_dir)):
        if f.endswith(".safetensors"):
            state.update(load_file(os.path.join(bf16_dir, f), device=DEV))
    model.load_state_dict(state, strict=False, assign=True)
    for name, buf in list(model.named_buffers()):
        mod, _, attr = name.rpartition(".")
        model.get_submodule(mod)._buffers[attr] = buf.to(DEV)
    return model.eval()


def to_block_buffers(model):
    """Every block's Linear weights copied into one buffer per block, consecutively (df11's
    decode-buffer layout), the parameters becoming views of it."""
    for layer in model.model.layers:
        linears = [m for m in layer.modules() if isinstance(m, torch.nn.Linear)]
        total = sum(m.weight.numel() for m in linears)
        buf = torch.empty(total, dtype=torch.bfloat16, device=DEV)
        at = 0
        for m in linears:
            n = m.weight.numel()
            view = buf[at:at + n].view(m.weight.shape)
            view.copy_(m.weight)
            m.weight = torch.nn.Parameter(view, requires_grad=False)
            at += n
    if DEV == "cuda":
        torch.cuda.empty_cache()
    return model


def describe(model):
    return {
        "attn": model.config._attn_implementation,
        "buffers": {n: (str(b.dtype), str(b.device)) for n, b in model.named_buffers()},
        "generation": model.generation_config.to_diff_dict(),
    }


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--work", default="/dev/shm/df11-bench")
    p.add_argument("--tokens", type=int, default=32, help="forced decode steps")
    p.add_argument("--json")
    p.add_argument("--device", default="cuda")
    args = p.parse_args()
    global DEV
    DEV = args.device
    import df11
    from df11.generation import greedy_static
    from transformers import AutoModelForCausalLM
    bf16_dir, df11_dir = os.path.join(args.work, "bf16"), os.path.join(args.work, "df11")
    out = {"align": [[list(s), m, d] for s, m, d in alignment_table()] if DEV == "cuda" else []}

    logits = {}
    buffers = {}
    steps = args.tokens

    def run(name, model):
        vocab = model.config.vocab_size
        g = torch.Generator().manual_seed(99)
        forced8 = torch.randint(1, vocab, (8, steps), generator=g).to(DEV)
        logits[(name, "eager8")] = forced_eager(model, prompt(vocab, 8), forced8).cpu()
        logits[(name, "eager1")] = forced_eager(model, prompt(vocab, 1), forced8[:1]).cpu()
        ids1 = prompt(vocab, 1)
        for key, graph in (("static1", False), ("graph1", True))[:2 if DEV == "cuda" else 1]:
            got = []
            greedy_static(model, ids1, steps + 1, cuda_graph=graph, forced=forced8[:1],
                          step_logits=got)
            logits[(name, key)] = torch.stack(got).cpu()
        buffers[name] = {n: b.detach().float().cpu() for n, b in model.named_buffers()}
        print(f"ran {name}: {json.dumps(describe(model), default=str)}", flush=True)

    def release():
        gc.collect()
        if DEV == "cuda":
            torch.cuda.empty_cache()

    pre = AutoModelForCausalLM.from_pretrained(bf16_dir, dtype=torch.bfloat16,
                                               device_map=DEV).eval()
    run("bf16-from_pretrained", pre)
    run("bf16-from_pretrained-again", pre)
    to_block_buffers(pre)
    run("bf16-block-buffers", pre)
    del pre
    release()
    skel = skeleton_bf16(bf16_dir)
    run("bf16-skeleton", skel)
    del skel
    release()
    model = df11.from_pretrained(df11_dir, device=DEV)
    run("df11", model)
    del model
    release()

    names = sorted({k[0] for k in logits})
    ref = "bf16-from_pretrained"
    lines = []
    for name in names:
        if name != ref:
            for key in [k for k in ("eager1", "eager8", "static1", "graph1") if (name, k) in logits]:
                lines.append(f"{name:28} {key:8} vs {ref}: "
                             f"{first_step(logits[(name, key)], logits[(ref, key)])}")
            for bn, t in buffers[name].items():
                r = buffers[ref].get(bn)
                if r is not None and not torch.equal(t, r):
                    lines.append(f"{name:28} buffer {bn} differs from {ref}'s: max |d| "
                                 f"{(t - r).abs().max().item():.3g}")
        if (name, "graph1") in logits:
            lines.append(f"{name:28} graph1 vs its own static1 (eager steps): "
                         f"{first_step(logits[(name, 'graph1')], logits[(name, 'static1')])}")
    for ln in lines:
        print("diag: " + ln, flush=True)
    out["lines"] = lines
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
