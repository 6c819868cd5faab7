"""Every step's logits of transformers' static-cache generate, eager and compiled, DF11 against
BF16: where the two first differ, by how much, and whether each model's compiled generate gives
the same logits run after run.

Each variant runs in a process of its own: the model loaded (BF16 with transformers'
from_pretrained, DF11 with df11.from_pretrained in the variant's mode), one eager generate
(`disable_compile=True`, the static cache) and --repeat compiled ones (transformers compiles the
decode step: torch.compile, mode "reduce-overhead", Inductor's CUDA graphs), --tokens new tokens
from a --prompt-token prompt of random ids (seed 0), every step's logits kept
(`output_logits=True`). A variant is a model ("bf16", "decode", "exec", "compact"), optionally
with "+nocudnn": torch's cuDNN attention off (`torch.backends.cuda.enable_cudnn_sdp(False)`), so
that scaled_dot_product_attention takes another kernel, and optionally with "#TAG" to run the same
variant again in another process ("bf16#2": is BF16 against itself equal across processes?).
Each variant is compared with the untagged BF16 variant of the same options: the steps whose
logits differ (bit patterns), the first of them and the largest difference there, eager and
compiled.

--deterministic compiles every variant in Inductor's deterministic mode
(TORCHINDUCTOR_DETERMINISTIC=1): Inductor then picks each kernel's block sizes by its
heuristics instead of timing the candidates on the GPU, which it does by default for an
RMSNorm's reduction, keeping the fastest in its cache. The reduction kernels that differ
between the two graphs (those fused with the embedding's gather, which reads the decoded rows
in DF11's) are timed on their own and may keep other block sizes than BF16's, from run to run,
and the logits then part by roundings after tens of steps. --fresh-cache gives
this run an Inductor cache of its own (TORCHINDUCTOR_CACHE_DIR), so that nothing is reused from
an earlier run; the variants of the run share it.

    python bench/compiled_logits.py --bf16 BF16_DIR --df11 DF11_DIR \\
        [--variants bf16,decode,bf16+nocudnn,decode+nocudnn] [--tokens 144] [--prompt 16] \\
        [--repeat 3] [--device cuda] [--deterministic] [--fresh-cache] [--json OUT.json]

--device cpu runs the same on the CPU (transformers compiles the step there only when told to:
the CompileConfig's `_compile_all_devices`); "+nocudnn" is a GPU option.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import torch


def differing_steps(a: torch.Tensor, b: torch.Tensor) -> list:
    """The steps (first dimension) whose values differ in any bit."""
    a, b = a.contiguous(), b.contiguous()
    return [s for s in range(a.shape[0])
            if not torch.equal(a[s].view(torch.uint8), b[s].view(torch.uint8))]


def worker(args) -> None:
    model_name, _, option = args.worker.split("#", 1)[0].partition("+")
    import torch._inductor.config as inductor_config
    deterministic = bool(getattr(inductor_config, "deterministic", False))  # as compiled
    if option == "nocudnn":
        torch.backends.cuda.enable_cudnn_sdp(False)
    elif option:
        raise SystemExit(f"compiled_logits: unknown option {option!r}")
    from transformers import AutoConfig, AutoModelForCausalLM

    import df11
    vocab = AutoConfig.from_pretrained(args.bf16).vocab_size
    ids = torch.randint(0, vocab, (1, args.prompt), generator=torch.Generator().manual_seed(0))
    ids = ids.to(args.device)
    if model_name == "bf16":
        model = AutoModelForCausalLM.from_pretrained(args.bf16, dtype=torch.bfloat16,
                                                     device_map=args.device).eval()
    else:
        model = df11.from_pretrained(args.df11, device=args.device, mode=model_name)
    from transformers import CompileConfig
    config = CompileConfig()
    config._compile_all_devices = args.device == "cpu"
    kw = dict(attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=args.tokens,
              min_new_tokens=args.tokens, eos_token_id=None, pad_token_id=0,
              cache_implementation="static", output_logits=True, return_dict_in_generate=True)
    with torch.no_grad():
        eager = torch.stack(model.generate(input_ids=ids, disable_compile=True, **kw).logits).cpu()
        compiled = [torch.stack(model.generate(input_ids=ids, compile_config=config,
                                               **kw).logits).cpu()
                    for _ in range(args.repeat)]
    unstable = [i for i, c in enumerate(compiled) if differing_steps(c, compiled[-1])]
    torch.save(dict(eager=eager, compiled=compiled[-1], unstable_runs=unstable,
                    deterministic=deterministic), args.worker_out)


def compare(a: torch.Tensor, b: torch.Tensor) -> dict:
    steps = differing_steps(a, b)
    out = dict(steps=a.shape[0], differing=len(steps), first=steps[0] if steps else None)
    if steps:
        out["max_abs_diff_at_first"] = (a[steps[0]].float() - b[steps[0]].float()).abs().max().item()
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bf16", required=True)
    p.add_argument("--df11", required=True)
    p.add_argument("--variants", default="bf16,decode")
    p.add_argument("--tokens", type=int, default=144)
    p.add_argument("--prompt", type=int, default=16)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--deterministic", action="store_true",
                   help="Inductor's deterministic mode (TORCHINDUCTOR_DETERMINISTIC=1)")
    p.add_argument("--fresh-cache", action="store_true",
                   help="an Inductor cache of this run's own (TORCHINDUCTOR_CACHE_DIR)")
    p.add_argument("--json", default="")
    p.add_argument("--worker", default="", help=argparse.SUPPRESS)
    p.add_argument("--worker-out", default="", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        return worker(args)
    variants = args.variants.split(",")
    results, rows = {}, []
    env = dict(os.environ)
    if args.deterministic:
        env["TORCHINDUCTOR_DETERMINISTIC"] = "1"
    with tempfile.TemporaryDirectory() as tmp:
        if args.fresh_cache:
            env["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(tmp, "inductor")
        for v in variants:
            out = os.path.join(tmp, v.replace("+", "_").replace("#", "_") + ".pt")
            subprocess.run([sys.executable, os.path.abspath(__file__), "--bf16", args.bf16,
                            "--df11", args.df11, "--tokens", str(args.tokens), "--prompt",
                            str(args.prompt), "--repeat", str(args.repeat), "--device",
                            args.device, "--worker", v,
                            "--worker-out", out], check=True, env=env)
            results[v] = torch.load(out)
            print(f"{v}: compiled runs unlike the last: {results[v]['unstable_runs']}", flush=True)
    for v in variants:
        model_name, plus, option = v.split("#", 1)[0].partition("+")
        ref = "bf16" + plus + option
        if v == ref or ref not in results:
            continue
        row = dict(variant=v, reference=ref,
                   eager=compare(results[v]["eager"], results[ref]["eager"]),
                   compiled=compare(results[v]["compiled"], results[ref]["compiled"]))
        rows.append(row)
        print(json.dumps(row), flush=True)
    for v in variants:
        row = dict(variant=v, compiled_against_eager=compare(results[v]["compiled"],
                                                             results[v]["eager"]),
                   unstable_runs=results[v]["unstable_runs"],
                   deterministic=results[v]["deterministic"])
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            device = (torch.cuda.get_device_name() if args.device == "cuda" else "cpu")
            json.dump(dict(device=device, torch=torch.__version__,
                           tokens=args.tokens, prompt=args.prompt, repeat=args.repeat,
                           deterministic=env.get("TORCHINDUCTOR_DETERMINISTIC") == "1",
                           fresh_cache=args.fresh_cache, rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
