"""What the load-time checks cost: df11.from_pretrained of a DF11 folder on a GPU, from a warm
page cache, with the load's phases (model.df11.load_seconds): one decode of every group with
its status read ("load check") and the stored tensors' checksums hashed on the GPU where the
upload put them ("load check (stored checksums on the GPU)"; on a package that checked them on
host threads beside the upload, "load check (waiting for the stored checksums)" is what the load
still waited for after its own work).

    python bench/load_check.py DF11_FOLDER [--repeat 3] [--json OUT.json]
"""
import argparse
import json
import statistics
import time

import torch

import df11


def main():
    p = argparse.ArgumentParser()
    p.add_argument("folder")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--json", default="")
    args = p.parse_args()
    runs = []
    for _ in range(args.repeat + 1):  # the first warms the page cache and the CUDA context
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        model = df11.from_pretrained(args.folder, device="cuda")
        torch.cuda.synchronize()
        total = time.perf_counter() - t0
        runs.append(dict(total_s=round(total, 3),
                         **{k: round(v, 3) for k, v in model.df11.load_seconds.items()}))
        del model
        torch.cuda.empty_cache()
    runs = runs[1:]
    keys = [k for k in runs[0] if all(k in r for r in runs)]
    median = {k: statistics.median(r[k] for r in runs) for k in keys}
    checks = sum(v for k, v in median.items() if k.startswith("load check"))
    result = dict(gpu=torch.cuda.get_device_name(), runs=runs, median=median,
                  checks_s=round(checks, 3), checks_share=round(checks / median["total_s"], 3))
    print(json.dumps(result, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
