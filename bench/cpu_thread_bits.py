"""Do torch's CPU kernels give the same bits on any thread count, and for an output head
multiplied in parts of its rows? df11's CPU path relies on neither: a forward pass runs on the
caller's thread count and every Linear, the head included, is multiplied whole. This shows
why, on the machine it runs on (raw 16-bit patterns compared):

  1. a 3-layer BF16 Llama (hidden 512, 24 tokens, four prompts): logits at 1, 2, 4, 8 threads
     against those at torch's default count;
  2. F.linear on an output head's rows in parts (torch.cat of the parts' outputs) against
     F.linear on the whole, at several token and thread counts.

    python bench/cpu_thread_bits.py
"""
import subprocess

import torch
import torch.nn.functional as F


def model_logits_by_threads():
    from transformers import LlamaConfig, LlamaForCausalLM
    config = LlamaConfig(vocab_size=512, hidden_size=512, intermediate_size=1536,
                         num_hidden_layers=3, num_attention_heads=8, num_key_value_heads=4,
                         head_dim=64)
    torch.manual_seed(3)
    model = LlamaForCausalLM(config).to(torch.bfloat16).eval()
    g = torch.Generator().manual_seed(0)
    prompts = [torch.randint(0, 512, (1, 24), generator=g) for _ in range(4)]
    default = torch.get_num_threads()
    out = {}
    for n in sorted({1, 2, 4, 8, default}):
        torch.set_num_threads(n)
        with torch.no_grad():
            out[n] = [model(input_ids=p).logits.view(torch.int16) for p in prompts]
    torch.set_num_threads(default)
    for n in out:
        equal = [torch.equal(a, b) for a, b in zip(out[n], out[default])]
        print(f"BF16 Llama logits at {n} threads equal to {default} threads' (per prompt): "
              f"{equal}", flush=True)


def head_parts_by_threads():
    torch.manual_seed(0)
    default = torch.get_num_threads()
    for rows, cols, part in ((32000, 1024, 2816), (128256, 4096, 14336),
                             (32000, 4096, 14336), (151936, 1024, 3072)):
        w = (torch.randn(rows, cols) * 0.02).to(torch.bfloat16)
        for n in sorted({1, 4, default}):
            torch.set_num_threads(n)
            differ = []
            for tokens in (1, 2, 8, 24, 64, 200):
                x = torch.randn(tokens, cols).to(torch.bfloat16)
                whole = F.linear(x, w).view(torch.int16)
                parts = torch.cat([F.linear(x, w[r:r + part]) for r in range(0, rows, part)],
                                  -1).view(torch.int16)
                d = int((whole != parts).sum())
                if d:
                    differ.append(f"{tokens} tokens: {d} of {whole.numel()}")
            print(f"head {rows} x {cols} in parts of {part} rows, {n} threads: "
                  f"{'; '.join(differ) or 'equal at 1-200 tokens'}", flush=True)
    torch.set_num_threads(default)


if __name__ == "__main__":
    cpu = subprocess.run(["sh", "-c", "lscpu | grep 'Model name'"], capture_output=True,
                         text=True).stdout.strip()
    print(cpu, f"| {torch.get_num_threads()} torch threads | torch {torch.__version__}")
    model_logits_by_threads()
    head_parts_by_threads()
