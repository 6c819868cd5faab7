"""Is an output head computed in parts of whole rows equal, bit for bit, to F.linear on the
whole weight on this GPU? The default mode's memory bar asks for a decode buffer of one block,
so a larger matrix (an 8B model's lm_head: 128256 x 4096) would be decoded and multiplied in
parts; that keeps BF16's logits only if cuBLAS reduces each output the same way for a part as
for the whole. For each token count and part size this compares the raw 16-bit patterns of
torch.cat([F.linear(x, W[r0:r1]) ...]) with F.linear(x, W), on random BF16 data (seeded).

    python bench/head_parts_equality.py [--json OUT.json]
"""
import argparse
import json

import torch


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--json", default="")
    p.add_argument("--rows", type=int, default=128256)
    p.add_argument("--cols", type=int, default=4096)
    a = p.parse_args()
    torch.manual_seed(0)
    dev = torch.device("cuda")
    w = (torch.randn(a.rows, a.cols, device=dev) * 0.02).to(torch.bfloat16)
    block_rows = 218_103_808 // a.cols  # an 8B Llama block's weights, in rows of this width
    parts = sorted({block_rows, block_rows // 2, 16384, 8192, 4096, 1000})
    results = []
    for tokens in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 2048):
        x = torch.randn(tokens, a.cols, device=dev).to(torch.bfloat16)
        ref = torch.nn.functional.linear(x, w).view(torch.int16)
        for rows in parts:
            out = torch.cat([torch.nn.functional.linear(x, w[r0:r0 + rows])
                             for r0 in range(0, a.rows, rows)], dim=-1).view(torch.int16)
            diff = int((out != ref).sum())
            results.append({"tokens": tokens, "part_rows": rows, "differing": diff,
                            "outputs": ref.numel()})
            print(f"tokens {tokens:5d} part rows {rows:6d}: "
                  f"{'EQUAL' if diff == 0 else f'{diff} of {ref.numel()} differ'}", flush=True)
    info = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
            "cublas": torch.backends.cuda.preferred_blas_library().name,
            "shape": [a.rows, a.cols], "results": results}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(info, f, indent=1)


if __name__ == "__main__":
    main()
