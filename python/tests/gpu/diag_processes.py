"""Are greedy steps of the 8B-shaped model reproducible from one process to the next?

diag_exact.py found df11's logits torch.equal to BF16's at every step when both models run in
one process; the benchmark, which runs each variant in its own process, found their CUDA-graph
tokens apart after a few dozen steps. This runs the same steps (batch 1, static cache, one
decode step captured in a CUDA graph, every model fed the same forced tokens) in separate
processes and compares each step's logits across them:

    python diag_processes.py --work DIR --out DIR --tag p1 --models bf16       # a process each
    python diag_processes.py --work DIR --out DIR --tag p2 --models bf16
    python diag_processes.py --work DIR --out DIR --tag p3 --models df11
    python diag_processes.py --work DIR --out DIR --tag p4 --models bf16,df11  # one process
    python diag_processes.py --out DIR --compare                               # the table
"""
import argparse
import glob
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def state():
    b = torch.backends.cuda
    return {"tf32": b.matmul.allow_tf32, "bf16_red": b.matmul.allow_bf16_reduced_precision_reduction,
            "blas": str(b.preferred_blas_library()), "flash": b.flash_sdp_enabled(),
            "mem_eff": b.mem_efficient_sdp_enabled(), "cudnn_sdp": b.cudnn_sdp_enabled(),
            "CUBLAS_WORKSPACE_CONFIG": os.environ.get("CUBLAS_WORKSPACE_CONFIG", "")}


def run(args):
    import df11
    from df11.generation import greedy_static
    from transformers import AutoModelForCausalLM
    bf16_dir, df11_dir = os.path.join(args.work, "bf16"), os.path.join(args.work, "df11")
    for name in args.models.split(","):
        if name == "bf16":
            model = AutoModelForCausalLM.from_pretrained(bf16_dir, dtype=torch.bfloat16,
                                                         device_map="cuda").eval()
        else:
            model = df11.from_pretrained(df11_dir, device="cuda")
        vocab = model.config.vocab_size
        g = torch.Generator().manual_seed(1234)
        ids = torch.randint(1, vocab, (1, 16), generator=g).cuda()
        forced = torch.randint(1, vocab, (1, args.steps), generator=g).cuda()
        got = []
        greedy_static(model, ids, args.steps + 1, cuda_graph=True, forced=forced, step_logits=got)
        logits = torch.stack(got)
        # The argmax of each step: what a free-running greedy pass would have picked there.
        torch.save({"logits": logits.cpu(), "tokens": logits.argmax(-1).cpu(), "state": state()},
                   os.path.join(args.out, f"{args.tag}-{name}.pt"))
        print(f"{args.tag}-{name}: {args.steps} forced steps saved; {state()}", flush=True)
        del model
        torch.cuda.empty_cache()


def first_step(a, b):
    for i in range(min(len(a), len(b))):
        if not torch.equal(a[i], b[i]):
            return f"logits DIFFER from step {i}"
    return f"logits torch.equal at all {min(len(a), len(b))} steps"


def compare(args):
    runs = {os.path.basename(p)[:-3]: torch.load(p) for p in sorted(glob.glob(
        os.path.join(args.out, "*.pt")))}
    names = sorted(runs)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            ta, tb = runs[a]["tokens"], runs[b]["tokens"]
            same = "argmax equal" if torch.equal(ta, tb) else \
                f"argmax differs at {int((ta != tb).sum())} of {ta.numel()} steps"
            print(f"procs: {a:12} vs {b:12}: {first_step(runs[a]['logits'], runs[b]['logits'])}; "
                  f"{same}", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--work", default="/dev/shm/df11-bench")
    p.add_argument("--out", required=True)
    p.add_argument("--tag", default="p")
    p.add_argument("--models", default="bf16")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--compare", action="store_true")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    compare(args) if args.compare else run(args)


if __name__ == "__main__":
    main()
