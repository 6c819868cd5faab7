#!/usr/bin/env python3
"""GPU memory a model holds after its load and one forward pass, at the device level.

Each variant runs in a process of its own, so that nothing one leaves counts for the next: CUDA
initialised and the device's used bytes taken (cudaMemGetInfo: total - free), the model loaded,
one forward pass of --tokens prompt tokens at batch 1, used bytes again. Reported per variant:
that difference (memory held outside torch's allocator counts too), torch's allocated, peak and
reserved bytes, and for df11 what the engine says it holds (model.df11.memory_bytes()); beside
them the folder's coded bytes (every group's six device parts), the bar's reference. The df11
variants' logits are compared with BF16's (the default mode must be torch.equal). The variant
"glyd" loads the BF16 folder with glyd.from_pretrained (the glyd package, measured where it is
installed).

    python bench/gpu_memory.py --bf16 BF16_DIR --df11 DF11_DIR
        [--variants bf16,df11,df11-exec,df11-compact,glyd]
        [--tokens 16] [--json OUT.json]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

LOADERS = ("bf16", "df11", "df11-exec", "df11-compact", "glyd")
DEFAULT = ("bf16", "df11", "df11-exec", "df11-compact")


def worker(variant: str, bf16_dir: str, df11_dir: str, tokens: int, logits_path: str) -> dict:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    import df11
    torch.zeros(1, device="cuda")  # the context exists before the baseline
    torch.cuda.synchronize()
    free, total = torch.cuda.mem_get_info()
    base = total - free
    if variant == "bf16":
        model = AutoModelForCausalLM.from_pretrained(bf16_dir, dtype=torch.bfloat16,
                                                     device_map="cuda").eval()
    elif variant == "glyd":
        import glyd
        model = glyd.from_pretrained(bf16_dir).eval()
    else:
        model = df11.from_pretrained(df11_dir, device="cuda",
                                     mode=variant[len("df11-"):] if "-" in variant else "decode")
    vocab = AutoConfig.from_pretrained(bf16_dir).vocab_size
    ids = torch.randint(0, vocab, (1, tokens), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        logits = model(input_ids=ids.cuda()).logits
    torch.cuda.synchronize()
    free, total = torch.cuda.mem_get_info()
    row = dict(variant=variant, device_gb=round((total - free - base) / 1e9, 3),
               allocated_gb=round(torch.cuda.memory_allocated() / 1e9, 3),
               peak_allocated_gb=round(torch.cuda.max_memory_allocated() / 1e9, 3),
               reserved_gb=round(torch.cuda.memory_reserved() / 1e9, 3))
    if variant.startswith("df11"):
        row["df11_holds_gb"] = round(sum(model.df11.memory_bytes().values()) / 1e9, 3)
    torch.save(logits[0].float().cpu(), logits_path)
    return row


def coded_bytes(df11_dir: str) -> int:
    from df11 import _capi
    folder = _capi.Model(df11_dir)
    try:
        return sum(folder.group_part(g, part)[1] for g in range(folder.group_count())
                   for part in _capi.DEVICE_PARTS)
    finally:
        folder.close()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bf16", required=True)
    p.add_argument("--df11", required=True)
    p.add_argument("--variants", default=",".join(DEFAULT))
    p.add_argument("--tokens", type=int, default=16)
    p.add_argument("--json", default="")
    p.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker:
        print(json.dumps(worker(a.worker[0], a.bf16, a.df11, a.tokens, a.worker[1])))
        return 0
    import torch
    rows, logits = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for variant in a.variants.split(","):
            if variant not in LOADERS:
                sys.exit(f"unknown variant {variant!r}: one of {', '.join(LOADERS)}")
            path = os.path.join(tmp, f"{variant}.pt")
            out = subprocess.run([sys.executable, __file__, "--bf16", a.bf16, "--df11", a.df11,
                                  "--tokens", str(a.tokens), "--worker", variant, path],
                                 capture_output=True, text=True)
            if out.returncode != 0:
                sys.exit(f"{variant}: the worker failed:\n{out.stderr[-3000:]}")
            rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
            logits[variant] = torch.load(path)
    coded = coded_bytes(a.df11)
    for row in rows:
        if row["variant"] != "bf16" and "bf16" in logits:
            row["logits_equal_bf16"] = bool(torch.equal(logits[row["variant"]], logits["bf16"]))
        row["over_coded_gb"] = round(row["device_gb"] - coded / 1e9, 3)
        print(json.dumps(row), flush=True)
    result = dict(gpu=torch.cuda.get_device_name(0), coded_gb=round(coded / 1e9, 3),
                  tokens=a.tokens, rows=rows,
                  command=" ".join(["python", "bench/gpu_memory.py"] + sys.argv[1:]))
    print(f"coded bytes of the folder: {coded / 1e9:.3f} GB")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
