#!/usr/bin/env python3
"""Draws every benchmark plot of the documentation from the committed results:
bench/results/*.json -> docs/img/*.svg, in one command:

    python bench/plots.py [--results bench/results] [--out docs/img]

Each JSON file names the command, commit and machine of its figures (BENCHMARKS.md cites the
same); the plots carry the machine and commit in their captions. Needs matplotlib
(docs/requirements.txt). The SVGs are written without dates or random ids, so that redrawing
unchanged results leaves the files unchanged.
"""

import argparse
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
COLORS = {"BF16": "#7f7f7f", "official": "#d62728", "df11": "#1f77b4", "exec": "#2ca02c",
          "glyd": "#9467bd", "zstd": "#ff7f0e"}


DF11_SERIES = {"exec": COLORS["exec"], "execution layout": COLORS["exec"],
               "then cuBLAS": "#17becf", "decode alone": "#08306b", "verify": "#17becf",
               "decompress": "#08306b"}


def color(name):
    if name.startswith("df11"):
        for key, c in DF11_SERIES.items():
            if key in name:
                return c
        return COLORS["df11"]
    for key in ("official", "glyd", "zstd"):
        if key in name:
            return COLORS[key]
    return COLORS["BF16"]  # BF16, cuBLAS, F.linear


def load(results, name):
    with open(os.path.join(results, name)) as f:
        return json.load(f)


def save(fig, out, name):
    path = os.path.join(out, name)
    fig.savefig(path, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    print("wrote", os.path.relpath(path))


def mid(pair):
    return sum(pair) / len(pair)


def bars(ax, labels, values, unit, fmt="{:.2f}"):
    xs = range(len(labels))
    shown = [v if v is not None else 0 for v in values]
    ax.bar(xs, shown, color=[color(label) for label in labels])
    for x, v in zip(xs, values):
        ax.text(x, (v or 0), "n/a" if v is None else fmt.format(v), ha="center", va="bottom",
                fontsize=8)
    ax.set_xticks(list(xs))
    ax.set_xticklabels(labels, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel(unit)


def short(variant):
    return {"official dfloat11 0.5.0": "official", "df11 mode=\"exec\"": "df11 exec"}.get(
        variant, variant)


def overview(results, out):
    g = load(results, "generation_h100.json")
    labels = [short(v) for v in g["variants"]]
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.4))
    bars(axes[0], labels, g["peak_gpu_gb"]["values"], "GB")
    axes[0].set_title("Peak GPU memory (lower is better)", fontsize=9)
    eager = [1000 / v for v in g["eager_ms_per_token_batch1"]["values"]]
    bars(axes[1], labels, eager, "tokens/s", "{:.1f}")
    axes[1].set_title("Eager generate, batch 1", fontsize=9)
    graph = [None if v is None else 1000 / v for v in g["graph_ms_per_token_batch1"]["values"]]
    bars(axes[2], labels, graph, "tokens/s", "{:.1f}")
    axes[2].set_title("CUDA graph, batch 1 (official: cannot be captured)", fontsize=9)
    fig.suptitle("Llama-3.1-8B shapes, NVIDIA H100: memory at "
                 f"{g['peak_gpu_gb']['commit']}, eager at "
                 f"{g['eager_ms_per_token_batch1']['commit']}, graph at "
                 f"{g['graph_ms_per_token_batch1']['commit']}", fontsize=9)
    fig.tight_layout()
    save(fig, out, "overview.svg")


def batch_axes(ax, title, legend_at):
    """Batch sizes 1-16 on a log axis, ms per block from 0."""
    ax.set_xscale("log", base=2)
    ax.set_xticks([1, 2, 4, 8, 16])
    ax.set_xticklabels(["1", "2", "4", "8", "16"])
    ax.set_ylim(bottom=0)
    ax.set_xlabel("batch (tokens)")
    ax.set_ylabel("ms per block (lower is better)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, loc=legend_at)
    ax.grid(alpha=0.3)


def gpu_batch(results, out):
    g = load(results, "gpu_block_h100.json")
    fig, ax = plt.subplots(figsize=(7, 4))
    for s in g["series"]:
        ys = [mid(p) for p in s["ms"]]
        style = "--" if s.get("independent_of_batch") else "-"
        marker = "o" if len(s["batch"]) > 1 else "D"
        ax.plot(s["batch"], ys, style, marker=marker, color=color(s["name"]),
                label=f"{s['name']} ({s['commit']})")
    batch_axes(ax, f"One Llama-3.1-8B block, {g['machine'].split(',')[0]}", "upper left")
    save(fig, out, "gpu_batch.svg")

    p = g["peers"]
    fig, ax = plt.subplots(figsize=(7, 3.6))
    for name, ys in p["series"].items():
        ax.plot(p["batch"], ys, "-o", color=color(name), label=name)
    layout = next(s for s in g["series"] if "execution layout" in s["name"])
    ax.plot(layout["batch"], [mid(x) for x in layout["ms"]], "-o", color=COLORS["exec"],
            label="df11 execution layout (df11-cuda-bench)")
    batch_axes(ax, f"Compressed GEMM against peers, NVIDIA H100, {p['commit']}", "lower right")
    save(fig, out, "gpu_peers.svg")


def peers_h200(results, out):
    g = load(results, "generation_h200_peers.json")
    labels = [short(v) for v in g["variants"]]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    bars(axes[0], labels, g["peak_gpu_gb"], "GB")
    axes[0].set_title("Peak GPU memory (lower is better)", fontsize=9)
    bars(axes[1], labels, g["tokens_per_s_batch32"], "tokens/s", "{:.0f}")
    axes[1].set_title("Eager generate, batch 32 (glyd, df11 exec: other tokens than BF16)",
                      fontsize=9)
    fig.suptitle(f"Llama-3.1-8B shapes, NVIDIA H200, {g['commit']}", fontsize=9)
    fig.tight_layout()
    save(fig, out, "generation_peers.svg")


def cpu_scaling(results, out):
    c = load(results, "cpu_scaling.json")
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, ys in c["gb_per_s"].items():
        ax.plot(c["threads"], ys, "-o", color=color(name), label=name)
    ax.set_xscale("log", base=2)
    ax.set_xticks(c["threads"])
    ax.set_xticklabels([str(t) for t in c["threads"]])
    ax.set_xlabel("threads (1 and 2: the model's 1.40 GB slice)")
    ax.set_ylabel("GB/s of BF16 (higher is better)")
    ax.set_title(f"CPU speed against threads, 16-vCPU Xeon, {c['commit']}", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    save(fig, out, "cpu_scaling.svg")


def token_axes(ax, ticks, xlabel, ylabel, title):
    """Token counts on a log axis (a tick at each measured one), y from 0."""
    ax.set_xscale("log", base=2)
    ax.set_xticks(ticks)
    ax.set_xticklabels([str(t) for t in ticks])
    ax.set_ylim(bottom=0)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, loc="upper left")
    ax.grid(alpha=0.3)


def compact_gemm(results, out):
    c = load(results, "compact-gemm-h200/compact_bench.json")
    rows = c["gemm"]
    fig, ax = plt.subplots(figsize=(7, 4))
    series = [("cuBLAS BF16 (cublasGemmEx), per matrix", "cublas_ms", COLORS["BF16"], "-"),
              ("df11 12-bit layout, per matrix", "exec12_ms", COLORS["exec"], "-"),
              ("df11 compact layout (10.68 bits), per matrix", "compact_ms", COLORS["df11"], "-"),
              ("df11 12-bit layout, block in one call", "exec12_one_call_ms", COLORS["exec"],
               "--"),
              ("df11 compact layout, block in one call", "compact_one_call_ms", COLORS["df11"],
               "--")]
    for name, key, c_, style in series:
        pts = [(r["batch"], r[key]) for r in rows if r.get(key) is not None]
        ax.plot([b for b, _ in pts], [y for _, y in pts], style, marker="o", color=c_,
                label=name)
    token_axes(ax, [r["batch"] for r in rows], "batch (tokens)", "ms per block (lower is better)",
               f"Fused GEMMs, one Llama-3.1-8B block, {c['gpu']}, {c['commit']}")
    save(fig, out, "compact_gemm.svg")


def exec_peers(results, out, name="exec-peers-h200/exec_step_peers.json",
               svg="exec_peers_h200.svg"):
    """Execution layouts (and glyd-gpu's where measured) against cuBLAS, one run: the step's
    time / cuBLAS's."""
    e = load(results, name)
    rows = [r for r in e["rows"] if r["layer"] == "step"]
    bits = e["bits_per_weight"]
    fig, ax = plt.subplots(figsize=(7, 4))
    series = [("exec", "df11 12-bit execution layout", COLORS["exec"]),
              ("compact", "df11 compact layout", COLORS["df11"]),
              ("glyd-mma12", "glyd-gpu mma12", COLORS["glyd"]),
              ("glyd-mma", "glyd-gpu mma", "#c5b0d5")]
    for key, name, c_ in series:
        pts = [(r["tokens"], r[f"{key}_ratio"]) for r in rows if r.get(f"{key}_ratio")]
        if not pts:  # not measured in this run
            continue
        ax.plot([t for t, _ in pts], [y for _, y in pts], "-o", color=c_,
                label=f"{name} ({bits[key]:.2f} bits)")
    ax.axhline(1.0, color=COLORS["BF16"], linestyle="--", label="cuBLAS BF16 (F.linear)")
    token_axes(ax, [r["tokens"] for r in rows], "tokens", "time / cuBLAS's (lower is better)",
               f"{e['layers']} Llama-3.1-8B blocks' Linear layers, {e['gpu']}, {e['commit']}")
    save(fig, out, svg)


def vllm_runs(folder):
    """A vllm_bench.sh output folder's runs: {run: {"kv_tokens", "output_tokens_per_s"}}, from
    the engines' "GPU KV cache size" lines and `vllm bench throughput`'s result line in
    vllm_bench.log."""
    runs, name = {}, None
    with open(os.path.join(folder, "vllm_bench.log")) as f:
        for line in f:
            if line.startswith("=== "):
                name = line[4:].strip()
                runs[name] = {}
            elif name and "GPU KV cache size:" in line:
                runs[name]["kv_tokens"] = int(
                    line.split("GPU KV cache size:")[1].split()[0].replace(",", ""))
            elif name and line.startswith("Throughput:") and "output tokens/s" in line:
                # "Throughput: R requests/s, T total tokens/s, O output tokens/s"
                runs[name]["output_tokens_per_s"] = float(line.split(",")[-1].split()[0])
    return runs


def vllm_budget(results, out):
    """vLLM at a budget BF16's weights nearly fill: KV cache and offline throughput."""
    folder = os.path.join(results, "vllm", "h200-budget18-406d810")
    with open(os.path.join(folder, "gpus.txt")) as f:
        gpu, _, commit = [line.strip() for line in f][:3]
    runs = vllm_runs(folder)
    names = [("bf16", "BF16"), ("df11", "df11 decode"), ("df11-exec", "df11 exec")]
    labels = [label for _, label in names]
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.4))
    bars(axes[0], labels, [runs[n]["kv_tokens"] / 1000 for n, _ in names], "thousand tokens",
         "{:.1f}")
    axes[0].set_title("KV cache (higher is better)", fontsize=9)
    bars(axes[1], labels, [runs[n]["output_tokens_per_s"] for n, _ in names],
         "output tokens/s", "{:.0f}")
    axes[1].set_title("Offline throughput, 512 x (512 in / 256 out), higher is better",
                      fontsize=9)
    fig.suptitle(f"vLLM 0.24.0, Llama-3.1-8B shapes on an 18 GiB budget, {gpu.split(',')[0]}, "
                 f"{commit}", fontsize=9)
    fig.tight_layout()
    save(fig, out, "vllm_budget.svg")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default=os.path.join(HERE, "results"))
    ap.add_argument("--out", default=os.path.join(HERE, "..", "docs", "img"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    plt.rcParams["svg.hashsalt"] = "df11"  # stable ids: same results, same bytes
    overview(args.results, args.out)
    gpu_batch(args.results, args.out)
    peers_h200(args.results, args.out)
    cpu_scaling(args.results, args.out)
    compact_gemm(args.results, args.out)
    exec_peers(args.results, args.out)
    exec_peers(args.results, args.out, "compact-helpers-h100/exec_step.json", "exec_step_h100.svg")
    exec_peers(args.results, args.out, "exec-step-h200/exec_step.json", "exec_step_h200.svg")
    vllm_budget(args.results, args.out)


if __name__ == "__main__":
    main()
