"""Where the 8B-shaped model's load and eager step times go (a diagnostic, not a test).

With the model that bench_llama8b.py makes in --work: CUDA and the imports first (so that
they are not counted in any load), then for df11 (decode mode), BF16 and the official loader
(when installed): the load time (df11's with its phases), and for df11 and BF16 a
torch.profiler trace of HF generate, batch 1, 8 new tokens after a warm-up: wall time per
token, the GPU's busy time per token (the union of its kernels' and copies' intervals), and
the host calls that waited for the GPU (synchronisations, blocking copies).

    python diag_time.py --work /dev/shm/df11-bench [--json OUT.json]
"""
import argparse
import gc
import json
import os
import sys
import time

import torch


def _busy_us(events):
    """The union of the GPU intervals (kernels, copies, sets) in the trace, in microseconds."""
    spans = sorted((e.time_range.start, e.time_range.end) for e in events
                   if e.device_type == torch.autograd.DeviceType.CUDA)
    busy, end = 0, None
    start = None
    for s, e in spans:
        if end is None or s > end:
            if end is not None:
                busy += end - start
            start, end = s, e
        else:
            end = max(end, e)
    if end is not None:
        busy += end - start
    return busy


def profile_generate(model, vocab, tokens=8):
    from torch.profiler import ProfilerActivity, profile
    g = torch.Generator().manual_seed(1234)
    ids = torch.randint(1, vocab, (1, 16), generator=g).cuda()
    kw = dict(attention_mask=torch.ones_like(ids), do_sample=False, eos_token_id=None,
              pad_token_id=0)
    with torch.no_grad():
        model.generate(input_ids=ids, max_new_tokens=4, min_new_tokens=4, **kw)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        model.generate(input_ids=ids, max_new_tokens=tokens, min_new_tokens=tokens, **kw)
        torch.cuda.synchronize()
        plain = time.perf_counter() - t0
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            t0 = time.perf_counter()
            model.generate(input_ids=ids, max_new_tokens=tokens, min_new_tokens=tokens, **kw)
            torch.cuda.synchronize()
            traced = time.perf_counter() - t0
    events = prof.events()
    waits = {}
    for e in events:
        if e.device_type != torch.autograd.DeviceType.CPU:
            continue
        n = e.name
        if any(k in n for k in ("Synchronize", "cudaMemcpy", "_local_scalar_dense", "item",
                                "cudaEventSynchronize", "cudaStreamWaitEvent")):
            w = waits.setdefault(n, [0, 0.0])
            w[0] += 1
            w[1] += e.cpu_time_total / 1000
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12)
    return {"ms_per_token_plain": 1000 * plain / tokens, "ms_per_token_traced": 1000 * traced / tokens,
            "gpu_busy_ms_per_token": _busy_us(events) / 1000 / tokens,
            "host_waits_ms": {k: [v[0], round(v[1], 2)] for k, v in waits.items()},
            "top_self_cpu": table}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--work", default="/dev/shm/df11-bench")
    p.add_argument("--json", default="")
    p.add_argument("--variants", default="df11,bf16,dfloat11")
    args = p.parse_args()
    t0 = time.perf_counter()
    torch.zeros(1, device="cuda")
    import transformers  # noqa: F401
    from transformers import AutoConfig, AutoModelForCausalLM
    import df11
    print(f"imports and CUDA init: {time.perf_counter() - t0:.2f} s", flush=True)
    bf16_dir, df11_dir = os.path.join(args.work, "bf16"), os.path.join(args.work, "df11")
    out = {"gpu": torch.cuda.get_device_name(0)}
    for v in args.variants.split(","):
        gc.collect()
        torch.cuda.empty_cache()
        t0 = time.perf_counter()
        if v == "df11":
            model = df11.from_pretrained(df11_dir, device="cuda")
        elif v == "bf16":
            model = AutoModelForCausalLM.from_pretrained(bf16_dir, dtype=torch.bfloat16,
                                                         device_map="cuda").eval()
        else:
            import importlib.util
            if importlib.util.find_spec("dfloat11") is None:
                continue
            sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
            from df11.bench import _pkg_resources_shim
            _pkg_resources_shim()
            from dfloat11 import DFloat11Model
            try:
                from transformers.initialization import no_init_weights
            except ImportError:
                from transformers.modeling_utils import no_init_weights
            with no_init_weights():
                skeleton = AutoModelForCausalLM.from_config(
                    AutoConfig.from_pretrained(df11_dir), dtype=torch.bfloat16).eval()
            model = DFloat11Model.from_pretrained(df11_dir, device="cuda",
                                                  bfloat16_model=skeleton)
        torch.cuda.synchronize()
        r = {"load_s": time.perf_counter() - t0}
        if v == "df11":
            r["load_phases"] = model.df11.load_seconds
        print(f"{v}: load {r['load_s']:.2f} s {r.get('load_phases', '')}", flush=True)
        if v in ("df11", "bf16"):
            r.update(profile_generate(model, model.config.vocab_size))
            print(f"{v}: eager b1 {r['ms_per_token_plain']:.2f} ms/token "
                  f"(traced {r['ms_per_token_traced']:.2f}); GPU busy "
                  f"{r['gpu_busy_ms_per_token']:.2f} ms/token; host waits {r['host_waits_ms']}",
                  flush=True)
            print(r["top_self_cpu"], flush=True)
        out[v] = r
        del model
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
