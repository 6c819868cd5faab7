"""python -m df11.tune: measures where this GPU's execution modes should switch from the fused
GEMM to decode + F.linear, and writes that switch to the switch file (df11.switches), which
`mode="exec"` / `mode="compact"` (transformers, diffusers, vLLM) read when they load.

    python -m df11.tune [--mode exec|compact|all] [--model FOLDER] [--layers 8]
                        [--tokens 1,8,...] [--runs 30] [--warmup 5] [--device N]
                        [--file PATH] [--dry-run]

What it measures: a serving engine's decoding step over --layers distinct decoder blocks, so
that the weights stream from device memory as in a model (not from the L2 cache): per block the
Linears q/k/v (one launch), o, gate/up (one launch) and down, as df11's modes call them, with
Gaussian weights (std 0.02) of Llama-3.1-8B's shapes or of --model's config.json, packed into
the mode's layout on the GPU. At each token count the step runs three times, fused GEMM,
decode + F.linear, fused GEMM again, each the CUDA-event median of --runs CUDA-graph replays
after --warmup; the slowest fused time is compared with the decode time (switches.choose). The
switch is the largest count measured up to which the fused GEMM is faster at every count
measured; counts between it and the next one measured take decode + F.linear. Before timing,
each count's outputs are checked: the fused GEMM's equal df11's reference GEMM bit for bit, and
decode + F.linear's equal F.linear on the BF16 weights.

Which outputs this changes: at or below the switch a Linear's outputs are the layout's fixed
products (equal to df11's reference GEMM), above it torch's F.linear on the decoded BF16 bits;
the reference (exec_mode.reference, reference_linear) follows the switch in force, so each
mode's guarantee holds at whatever switch is measured. Exit status 0 when the switch was
measured (and written, unless --dry-run), 2 for unusable arguments, a missing GPU or a failed
measurement.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import sys
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import torch

from . import _capi, exec_mode, switches
from ._capi import Df11Error

HIDDEN, KV, FFN = 4096, 1024, 14336  # Llama-3.1-8B
# A block's Linears as the modes launch them: siblings on one input in one launch.
LAYERS = {"qkv": ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"],
          "o": ["self_attn.o_proj"], "gate_up": ["mlp.gate_proj", "mlp.up_proj"],
          "down": ["mlp.down_proj"]}
DEFAULT_TOKENS = {"exec": [1, 8, 16, 32, 48, 64, 80, 96, 112, 128, 160, 192, 224, 256],
                  "compact": [1, 4, 8, 12, 16, 20, 24, 28, 32]}


def members(hidden: int = HIDDEN, kv: int = KV, ffn: int = FFN) -> Dict[str, Tuple[int, int]]:
    """A decoder block's Linear weights, name -> (rows, cols)."""
    return {"self_attn.q_proj": (hidden, hidden), "self_attn.k_proj": (kv, hidden),
            "self_attn.v_proj": (kv, hidden), "self_attn.o_proj": (hidden, hidden),
            "mlp.gate_proj": (ffn, hidden), "mlp.up_proj": (ffn, hidden),
            "mlp.down_proj": (hidden, ffn)}


MEMBERS = members()


def model_shapes(folder: str) -> Tuple[int, int, int]:
    """(hidden, key/value width, FFN width) from a model folder's config.json (a language
    model's own keys, or its text_config's)."""
    where = os.path.join(folder, "config.json") if os.path.isdir(folder) else folder
    try:
        with open(where, encoding="utf-8") as f:
            config = json.load(f)
    except OSError as e:
        raise Df11Error.named("io", f"{where}: cannot be read ({e.strerror or e})") from None
    except ValueError as e:
        raise Df11Error.named("bad_json", f"{where}: not JSON ({e})") from None
    if isinstance(config, dict) and isinstance(config.get("text_config"), dict):
        config = config["text_config"]
    if not isinstance(config, dict):
        raise Df11Error.named("bad_config", f"{where}: not a JSON object")

    def count(key: str, default=None) -> int:
        value = config.get(key, default)
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise Df11Error.named("bad_config", f"{where}: '{key}' = {value!r}, need a positive "
                                  "integer for a decoder block's shapes")
        return value
    hidden = count("hidden_size")
    heads = count("num_attention_heads")
    head_dim = count("head_dim", hidden // heads if hidden % heads == 0 else None)
    return hidden, count("num_key_value_heads", heads) * head_dim, count("intermediate_size")


def build(n_layers: int, layouts: Sequence[str],
          shapes: Optional[Dict[str, Tuple[int, int]]] = None, seed: int = 0):
    """--layers blocks of Gaussian BF16 weights (std 0.02) on the current GPU: per block
    {layer: BF16 weight, siblings concatenated}, and per layout name per block
    {layer: exec_mode.ExecWeight}."""
    shapes = shapes or MEMBERS
    gen = torch.Generator(device="cuda").manual_seed(seed)
    blocks = []
    for _ in range(n_layers):
        ws = {m: (torch.randn(*shape, device="cuda", generator=gen) * 0.02).to(torch.bfloat16)
              for m, shape in shapes.items()}
        blocks.append({kind: [ws[m] for m in names] for kind, names in LAYERS.items()})
    packed = {}
    for name in layouts:
        layout = exec_mode.LAYOUTS[name]
        packed[name] = []
        for i, blk in enumerate(blocks):
            row = {}
            for kind, ws in blk.items():
                blob, mats = exec_mode.pack_bf16(ws, f"block {i} {kind}", layout)
                row[kind] = exec_mode.ExecWeight(blob, mats, f"block {i} {kind}")
            packed[name].append(row)
    bf16 = [{kind: torch.cat(ws) for kind, ws in blk.items()} for blk in blocks]
    return bf16, packed


def timed(fn: Callable[[], object], runs: int, warmup: int) -> Tuple[float, bool]:
    """(median ms of fn over `runs` CUDA-event timed calls after `warmup`, whether they were
    CUDA-graph replays): fn is captured in a CUDA graph when it can be (no Python launch gaps in
    the time), else called eagerly."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    try:
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            fn()
            with torch.cuda.graph(g, stream=s):
                fn()
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        replay, captured = g.replay, True
    except Exception:  # noqa: BLE001 - what cannot be captured is timed eagerly
        torch.cuda.synchronize()
        replay, captured = fn, False
    for _ in range(warmup):
        replay()
    ts = []
    for _ in range(runs):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        replay()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b))
    ts.sort()
    return ts[len(ts) // 2], captured


@contextlib.contextmanager
def switch_at(mode: str, limit: int) -> Iterator[None]:
    """exec_mode.FUSED_MAX_TOKENS[mode] = limit within the block (0: decode + F.linear at every
    count; the C maximum: the fused GEMM at every count)."""
    before = exec_mode.FUSED_MAX_TOKENS[mode]
    exec_mode.FUSED_MAX_TOKENS[mode] = limit
    try:
        yield
    finally:
        exec_mode.FUSED_MAX_TOKENS[mode] = before


def most_tokens(mode: str) -> int:
    return _capi.EXEC_MAX_BATCH if mode == "exec" else _capi.COMPACT_MAX_BATCH


# (tokens, path) -> ms, path "fused" or "decode"
StepTimer = Callable[[int, str], float]
ROUNDS = ("fused", "decode", "fused")


def measure(step_ms: StepTimer, tokens: Sequence[int]
            ) -> Tuple[List[Dict[int, float]], List[Dict[int, float]]]:
    """Per count the step timed in ROUNDS' order: ([fused runs], [decode runs]), each
    {tokens: ms}, for switches.choose."""
    fused: List[Dict[int, float]] = [{} for r in ROUNDS if r == "fused"]
    decode: List[Dict[int, float]] = [{} for r in ROUNDS if r == "decode"]
    for t in tokens:
        seen = {"fused": 0, "decode": 0}
        for path in ROUNDS:
            runs = fused if path == "fused" else decode
            runs[seen[path]][t] = step_ms(t, path)
            seen[path] += 1
    return fused, decode


class GpuStep:
    """The step's timer on the current GPU for `mode`: the blocks built once, each count's
    inputs drawn and its outputs checked once, then timed on either path."""

    def __init__(self, mode: str, layers: int, shapes: Dict[str, Tuple[int, int]], runs: int,
                 warmup: int):
        self.mode, self.runs, self.warmup = mode, runs, warmup
        self.bf16, packed = build(layers, [mode], shapes)
        self.blocks = packed[mode]
        self.hidden = shapes["self_attn.q_proj"][1]
        self.ffn = shapes["mlp.down_proj"][1]
        self.xs: Dict[int, Dict[str, torch.Tensor]] = {}
        self.captured = True

    def inputs(self, t: int) -> Dict[str, torch.Tensor]:
        xs = self.xs.get(t)
        if xs is None:
            gen = torch.Generator(device="cuda").manual_seed(t)
            xs = self.xs[t] = {k: torch.randn(t, self.ffn if k == "down" else self.hidden,
                                              device="cuda", generator=gen).to(torch.bfloat16)
                               for k in LAYERS}
            self.check(t, xs)
        return xs

    def check(self, t: int, xs: Dict[str, torch.Tensor]) -> None:
        """Both paths' outputs at t tokens: the fused GEMM's equal to df11's reference GEMM, and
        decode + F.linear's equal to F.linear, bit for bit (Df11Error naming the layer if not)."""
        most = most_tokens(self.mode)
        for b, blk in enumerate(self.blocks):
            for kind, ew in blk.items():
                w = self.bf16[b][kind]
                with switch_at(self.mode, most):
                    fused = ew.linear(xs[kind], None)
                with switch_at(self.mode, 0):
                    decoded = ew.linear(xs[kind], None)
                if not torch.equal(fused, exec_mode.reference_linear(xs[kind], w,
                                                                     max_tokens=most)):
                    raise Df11Error.named("internal", f"df11.tune: block {b} {kind} at {t} "
                                          "tokens: the fused GEMM differs from df11's reference")
                if not torch.equal(decoded, torch.nn.functional.linear(xs[kind], w)):
                    raise Df11Error.named("internal", f"df11.tune: block {b} {kind} at {t} "
                                          "tokens: decode + F.linear differs from F.linear")

    def __call__(self, t: int, path: str) -> float:
        xs = self.inputs(t)

        def step():
            for blk in self.blocks:
                for kind, ew in blk.items():
                    ew.linear(xs[kind], None)
        with switch_at(self.mode, most_tokens(self.mode) if path == "fused" else 0):
            ms, captured = timed(step, self.runs, self.warmup)
        self.captured = self.captured and captured
        return ms


def tune(mode: str, step_ms: StepTimer, tokens: Sequence[int]) -> dict:
    """Measures `mode`'s switch with `step_ms`: the switch file's entry (max_tokens and what was
    measured; switches.save adds the df11 version)."""
    fused, decode = measure(step_ms, tokens)
    best, rows = switches.choose(fused, decode)
    return {"max_tokens": best, "tokens": [t for t, _, _ in rows],
            "fused_ms": [round(f, 5) for _, f, _ in rows],
            "decode_ms": [round(d, 5) for _, _, d in rows]}


def _tokens(text: str, mode: str) -> List[int]:
    try:
        counts = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise SystemExit(f"df11.tune: --tokens {text!r}: integers separated by commas") from None
    most = most_tokens(mode)
    if not counts or counts[0] < 1 or counts[-1] > most:
        raise SystemExit(f"df11.tune: --tokens {text!r}: {mode} takes 1 to {most} tokens")
    return counts


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m df11.tune",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=["exec", "compact", "all"], default="exec")
    ap.add_argument("--model", help="a model folder (or its config.json) whose decoder block's "
                    "shapes to measure (default: Llama-3.1-8B's)")
    ap.add_argument("--layers", type=int, default=8, help="distinct blocks in the step")
    ap.add_argument("--tokens", help="token counts, comma-separated (default: per mode)")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--device", type=int, help="CUDA device index (default: the current one)")
    ap.add_argument("--file", help=f"the switch file (default: {switches.path()})")
    ap.add_argument("--dry-run", action="store_true", help="measure and print, write nothing")
    try:
        a = ap.parse_args(argv)
    except SystemExit as e:
        return 2 if e.code else 0
    modes = ["exec", "compact"] if a.mode == "all" else [a.mode]
    try:
        if a.layers < 1 or a.runs < 1 or a.warmup < 0:
            raise SystemExit("df11.tune: --layers and --runs must be >= 1, --warmup >= 0")
        plans = {m: _tokens(a.tokens, m) if a.tokens else DEFAULT_TOKENS[m] for m in modes}
    except SystemExit as e:
        print(e, file=sys.stderr)
        return 2
    if not _capi.has_cuda() or not torch.cuda.is_available():
        print("df11.tune: measures a CUDA GPU, and "
              + ("this libdf11 was built without CUDA" if not _capi.has_cuda()
                 else "torch sees none (torch.cuda.is_available() is False)"), file=sys.stderr)
        return 2
    try:
        shapes = members(*model_shapes(a.model)) if a.model else MEMBERS
        if a.device is not None:
            torch.cuda.set_device(a.device)
        index = torch.cuda.current_device()
        gpu = torch.cuda.get_device_name(index)
        for mode in modes:
            if not exec_mode.supported(torch.device("cuda", index)):
                print(f"df11.tune: {gpu}: mode={mode!r} does not run on this GPU", file=sys.stderr)
                return 2
            print(f"{gpu}, mode={mode!r}: {a.layers} decoder blocks "
                  f"(hidden {shapes['self_attn.q_proj'][1]}, key/value "
                  f"{shapes['self_attn.k_proj'][0]}, FFN {shapes['mlp.gate_proj'][0]}), "
                  f"ms per step, median of {a.runs}", flush=True)
            with torch.no_grad():
                step = GpuStep(mode, a.layers, shapes, a.runs, a.warmup)
                entry = tune(mode, step, plans[mode])
                entry["cuda_graphs"] = step.captured  # False: some cells timed eagerly
                del step
            torch.cuda.empty_cache()
            for t, f, d in zip(entry["tokens"], entry["fused_ms"], entry["decode_ms"]):
                print(f"{t:>6} tokens  fused {f:8.4f}  decode + F.linear {d:8.4f}  "
                      f"({f / d:.3f}x)")
            best = entry["max_tokens"]
            print(f"switch: {best} tokens" + (" (the fused GEMM is slower at every count "
                                              "measured: decode + F.linear always)"
                                              if best == 0 else "")
                  + "; in force before: %d (%s)" % exec_mode.switch_source(mode, index))
            entry.update(layers=a.layers, runs=a.runs, warmup=a.warmup,
                         shapes={m: list(s) for m, s in shapes.items()},
                         command=" ".join(["python -m df11.tune"] + list(argv or sys.argv[1:])),
                         date=datetime.datetime.now(datetime.timezone.utc).isoformat(
                             timespec="seconds"))
            if a.dry_run:
                continue
            where = switches.save(gpu, mode, entry, a.file)
            read = os.path.abspath(where) == os.path.abspath(switches.path())
            print(f"written to {where}: " + (
                f"mode={mode!r} runs the fused GEMM up to {best} tokens on {gpu}" if read else
                f"the modes read it where DF11_SWITCH_FILE names it (now {switches.path()})"))
    except torch.cuda.OutOfMemoryError as e:
        print(f"df11.tune: out of GPU memory ({e}); measure fewer blocks (--layers)",
              file=sys.stderr)
        return 2
    except Df11Error as e:
        print(f"df11.tune: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
