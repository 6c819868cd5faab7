"""vLLM's own model classes, built on the CPU with df11's plugin registered: what the plugin's
loader does before its GPU step, for a DF11 folder, against vLLM loading the BF16 checkpoint.

    python vllm_cpu_models.py JOBS.json [TP]    prints one JSON line per job and rank
    python vllm_cpu_models.py --refusals BF16 DF11
                                                one JSON line per refusal case (refusals())

JOBS.json is a list of jobs, each {"job": ID, "df11": FOLDER, "bf16": FOLDER, "layerwise":
BOOL}; every rank runs them all, one after the other, in one process (vLLM's import and
platform set-up cost more than a job). A job that raises reports {"job", "rank", "error"} and
the next runs. For each job it builds the model vLLM builds for each folder (vLLM's CPU
platform, one rank on a gloo process group: both process-wide, hence a process of its own;
test_vllm_plugin.py runs it), feeds the
DF11 model's `load_weights` the folder's tensors decoded on the CPU (as
DF11ModelLoader.load_weights does) and the BF16 model's the checkpoint's tensors, and reports:
  - params / differ: how many parameters the two models have, and the names of those whose
    16-bit patterns (or shapes) differ;
  - missing: parameters the folder gave no tensor for;
  - linear / from_groups / again: the plugin's plan for its Linear layers (plan_layers): how
    many, how many decode from spans of the folder's groups, and the others with the reason
    (those the GPU step would code again);
  - spans_differ: layers whose spans, decoded on the CPU, are not the weight vLLM's loader
    built (the comparison the GPU step makes);
  - encoded / encoded_differ: the layers of `again` and of `spans_differ`, coded with
    coded.encode as the GPU step codes them (a tensor-parallel rank's slices, a weight vLLM's
    loader transposed or permuted), and those whose tensor does not decode back to exactly
    the weight.
  - moe_layers / moe_methods / moe_meta_before: the fused MoE layers, their methods' class names
    and how many had both experts' weights on the meta device before the load (df11.vllm_moe
    codes them as vLLM's layer-wise loading fills them; here, without a GPU, they keep them).
  - embedding_methods / embeddings_coded / embeddings_differ: the input embeddings' methods'
    class names; how many the plugin's _code_embeddings codes (the GPU step: here coded by a
    CPU stand-in for the GPU encoder, the rows decoded from a copy), given the model's config
    and vLLM's tying of its head; and the ids at which a coded embedding's lookup through its
    method differs from the BF16 model's lookup.
TP (default 1): tensor_parallel_size, one process per rank (all on the CPU), each reporting
its own slices.

A job with "layerwise" true builds the DF11 model for a layer-wise load
(DF11_VLLM_LOAD_VIA=layer: Linear weights on the meta device, loaded through vLLM's
layer-wise processing) and lets the plugin's LayerwiseCoder
code each layer when vLLM finalizes it, comparing the spans decoded on the CPU where the GPU
load compares them on the GPU; it reports, beside the above (over the parameters left):
  - meta_before: the Linear weights on the meta device before the load;
  - coded_at_load: the layers coded as vLLM finalized them, each with "load" (while its
    loader ran) or "finalize" (when the load's end finalized it); left_at_load: the others;
  - offered_unfilled: layers offered before all their weights were written;
  - most_filled: the most Linear weights that existed in BF16 at once.
"""
import json
import os
import queue
import socket
import sys
import time

import torch


def _cpu_vllm(rank=0, world=1, port=None):
    import vllm.platforms
    from vllm.platforms.cpu import CpuPlatform
    from vllm.platforms.interface import PlatformEnum

    class Host(CpuPlatform):
        """vLLM's CPU platform under another name: layers that bind vLLM's CPU kernels when
        built on the CPU platform (GeluAndMul) keep their torch implementations, which a CUDA
        build of vLLM (no CPU kernels) needs; nothing runs a forward pass here."""
        _enum = PlatformEnum.OOT
    vllm.platforms._current_platform = Host()
    from vllm.distributed import init_distributed_environment
    init_distributed_environment(world_size=world, rank=rank, local_rank=rank, backend="gloo",
                                 distributed_init_method=f"tcp://127.0.0.1:{port or _port()}")


def _port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _vllm_config(model_config, load_config, tp=1):
    """The VllmConfig of a CPU build: vLLM's custom ops off (they would call its CPU kernels,
    which a CUDA build of vLLM lacks: the models' torch implementations instead; nothing runs
    here, but some bind at build time), and prefix caching off: on a CPU with AMX tiles vLLM's
    CPU platform turns it off for models with linear attention (Qwen3-Next) after the Mamba
    block size was set for it, and its own config check then refuses the pair; off from the
    start, every host builds the same config (nothing here caches a prefix)."""
    from vllm.config import (CacheConfig, CompilationConfig, DeviceConfig, ParallelConfig,
                             VllmConfig)
    return VllmConfig(model_config=model_config, device_config=DeviceConfig("cpu"),
                      load_config=load_config,
                      parallel_config=ParallelConfig(tensor_parallel_size=tp),
                      cache_config=CacheConfig(enable_prefix_caching=False),
                      compilation_config=CompilationConfig(custom_ops=["none"]))


def _build(folder, tp=1, layerwise=False):
    from vllm.config import LoadConfig, set_current_vllm_config
    from vllm.distributed import (destroy_model_parallel, initialize_model_parallel,
                                  model_parallel_is_initialized)
    from vllm.engine.arg_utils import EngineArgs
    from vllm.model_executor.model_loader.utils import initialize_model
    from vllm.utils.torch_utils import set_default_torch_dtype
    # BF16 as on a GPU (vLLM's CPU platform would pick float32 on a CPU without BF16 support).
    args = EngineArgs(model=folder, skip_tokenizer_init=True, dtype="bfloat16",
                      tensor_parallel_size=tp)
    model_config = args.create_model_config()
    config = _vllm_config(model_config, LoadConfig(), tp)
    if layerwise:
        config.quant_config.layerwise = True  # as DF11ModelLoader.load_model sets it
    with set_current_vllm_config(config):
        # Made again for each model: the groups depend on the model (an MoE model's expert
        # group is made only under an MoE model's config).
        if model_parallel_is_initialized():
            destroy_model_parallel()
        initialize_model_parallel(tp, 1)
        with set_default_torch_dtype(model_config.dtype), torch.device("cpu"):
            return initialize_model(config), model_config


def _checkpoint(folder):
    from safetensors.torch import load_file
    for f in sorted(os.listdir(folder)):
        if f.endswith(".safetensors"):
            yield from load_file(os.path.join(folder, f)).items()


def _bits(t):
    """The tensor's bit patterns (16-bit ones for BF16: -0, NaN payloads), to compare with
    torch.equal."""
    t = t.detach().contiguous()
    return t.view(torch.int16) if t.dtype == torch.bfloat16 else t


def _cpu_coder_class():
    from df11 import coded, vllm_plugin

    class CpuCoder(vllm_plugin.LayerwiseCoder):
        """The plugin's LayerwiseCoder, with the GPU step's decode and comparison made on the
        CPU: a layer whose spans decode to exactly its filled weight is accepted as the GPU
        step accepts it (its weight dropped)."""

        def __init__(self, *args):
            super().__init__(*args)
            self.coded, self.left, self.unfilled = [], [], []
            self.finalizing = False  # set once vLLM's loader has returned
            self.most_filled = 0  # the most Linear weights in BF16 at once

        def __call__(self, layer):
            self.most_filled = max(self.most_filled, sum(
                not p.layer.df11_loaded and not p.layer.weight.is_meta
                for p in self.plans.values()))
            try:
                super().__call__(layer)
            except ValueError:
                self.unfilled.append(getattr(layer, "prefix", "?"))
                raise

        def code(self, plan):
            whole = coded._decode_group(self.folder, plan.group)
            got = torch.cat([whole[o:o + n] for o, n in plan.spans])
            if torch.equal(_bits(got.view(plan.layer.weight.shape)), _bits(plan.layer.weight)):
                self.state._accept(plan, whole)  # stands for the coded bytes the GPU step keeps
                self.coded.append([plan.prefix, "finalize" if self.finalizing else "load"])
                return True
            self.left.append(plan.prefix)
            return False
    return CpuCoder


def _cpu_coder(*args):
    return _cpu_coder_class()(*args)


def rank_main(jobs, rank=0, tp=1, port=None, results=None):
    """Runs every job of `jobs` as rank `rank` of `tp`; each job's JSON line goes to stdout,
    or to `results` (a queue the parent reads) in a rank process."""
    import traceback
    _cpu_vllm(rank, tp, port)
    import df11.vllm
    df11.vllm.register()
    for job in jobs:
        try:
            got = compare(job["df11"], job["bf16"], rank, tp, job.get("layerwise", False))
        except Exception:
            got = {"rank": rank, "error": traceback.format_exc()[-3000:]}
        line = json.dumps({"job": job["job"], **got})
        if results is None:
            print(line, flush=True)
        else:
            results.put(line)  # the parent prints the ranks' lines, one at a time


class _HostGroup:
    """The CPU stand-in for coded.GpuGroup.encoded: a copy of the weight, its own plan."""

    def __init__(self, weight, name, what):
        self.weights = weight.detach().clone()
        self.plan = self
        self.nbytes = weight.numel()


class _HostRows:
    """The CPU stand-in for decoders.RowsDecoder over a _HostGroup."""

    def __init__(self, group, name, row_elements, device, lock):
        self.weights = group.weights.view(-1, row_elements)

    def lookup(self, ids):
        return self.weights[ids.reshape(-1)].clone()

    def check(self):
        pass


def _embeddings(model, model_config, reference):
    """The embedding_* entries of a report (the module's docstring)."""
    from vllm.model_executor.layers.vocab_parallel_embedding import VocabParallelEmbedding
    from df11 import _ops, _tools, coded, vllm_plugin
    layers = {n: m for n, m in model.named_modules() if type(m) is VocabParallelEmbedding}
    report = {"embedding_methods": sorted({type(m.quant_method).__name__
                                           for m in layers.values()})}
    saved = (coded.GpuGroup.encoded, vllm_plugin.RowsDecoder, _tools.has_cuda_encoder)
    coded.GpuGroup.encoded = staticmethod(_HostGroup)
    vllm_plugin.RowsDecoder = _HostRows
    _tools.has_cuda_encoder = lambda: True
    try:
        state = vllm_plugin._Attach("cpu", "decode", torch.device("cpu"))
        tied = bool(getattr(model_config.hf_text_config, "tie_word_embeddings", False))
        report["embeddings_coded"] = vllm_plugin._code_embeddings(model, state, tied)
        want = dict(reference.named_modules())
        differ = []
        for name, layer in layers.items():
            key = getattr(layer, "df11_rows_key", None)
            if key is None:
                continue
            ref = want[name].weight
            ids = torch.arange(ref.shape[0]).flip(0).view(1, -1)  # every row, as a batch
            got = layer.quant_method.embedding(layer, ids)
            if not torch.equal(_bits(got), _bits(torch.nn.functional.embedding(ids, ref))):
                differ.append(name)
            _ops.unregister(key)
        report["embeddings_differ"] = differ
    finally:
        coded.GpuGroup.encoded, vllm_plugin.RowsDecoder, _tools.has_cuda_encoder = saved
    return report


def compare(df11_dir, bf16_dir, rank, tp, layerwise):
    """One job's report (the module's docstring), as a dict."""
    import tempfile
    from df11 import _capi, coded, vllm_plugin
    reference, reference_config = _build(bf16_dir, tp)
    assert reference_config.quantization is None, reference_config.quantization
    reference.load_weights(_checkpoint(bf16_dir))
    model, model_config = _build(df11_dir, tp, layerwise)
    assert model_config.quantization == "df11", model_config.quantization
    from vllm.model_executor.layers.fused_moe import RoutedExperts
    moe = [m for m in model.modules() if isinstance(m, RoutedExperts)]
    extra = {"moe_methods": sorted({type(m.quant_method).__name__ for m in moe}),
             "moe_meta_before": sum(m.w13_weight.is_meta and m.w2_weight.is_meta for m in moe),
             "moe_layers": len(moe)}
    with _capi.Model(df11_dir) as folder:
        if layerwise:
            plans = vllm_plugin.plan_layers(model, folder)
            extra["meta_before"] = sum(p.layer.weight.is_meta for p in plans)
            coder = _cpu_coder(vllm_plugin._Attach(df11_dir, "decode", torch.device("cpu")),
                              folder, df11_dir, plans, {})
            vllm_plugin._layerwise_coder = coder
            try:
                loaded = model.load_weights(coded.decoded_tensors(folder))
                from vllm.model_executor.model_loader.reload import (
                    finalize_layerwise_processing)
                coder.finalizing = True
                finalize_layerwise_processing(model, model_config)
            finally:
                vllm_plugin._layerwise_coder = None
            extra.update(coded_at_load=coder.coded, left_at_load=coder.left,
                         offered_unfilled=coder.unfilled, most_filled=coder.most_filled)
            plans = [p for p in plans if not p.layer.df11_loaded]
        else:
            loaded = model.load_weights(coded.decoded_tensors(folder))
            plans = vllm_plugin.plan_layers(model, folder)
        spans_differ = []
        for plan in plans:
            if plan.group is None:
                continue
            whole = coded._decode_group(folder, plan.group)
            got = torch.cat([whole[o:o + n] for o, n in plan.spans])
            if not torch.equal(_bits(got.view(plan.layer.weight.shape)),
                               _bits(plan.layer.weight)):
                spans_differ.append(plan.prefix)
    # The layers the GPU step codes again (those without spans of one group, and those whose
    # spans decode to other values than the weight vLLM's loader made: a weight it transposed
    # or permuted), coded as it codes them.
    again = {f"{p.prefix}.weight": p.layer.weight.data for p in plans
             if p.group is None or p.prefix in spans_differ}
    encoded_differ = []
    if again:
        with tempfile.TemporaryDirectory() as tmp:
            with coded.encode(again, os.path.join(tmp, "layers")) as folder:
                for name, weight in again.items():
                    found = coded.tensor_spans(folder, folder.find_tensor(name))
                    if found is None:
                        encoded_differ.append(name)
                        continue
                    whole = coded._decode_group(folder, found[0])
                    got = torch.cat([whole[o:o + n] for o, n in found[1]])
                    if not torch.equal(_bits(got.view(weight.shape)), _bits(weight)):
                        encoded_differ.append(name)
    want = dict(reference.named_parameters())
    got = dict(model.named_parameters())
    if layerwise:  # the coded layers' weights are gone: compare the parameters left
        extra["gone"] = sorted(set(want) - set(got))
        want = {n: p for n, p in want.items() if n in got}
    differ = sorted(n for n in set(want) | set(got)
                    if n not in want or n not in got or want[n].shape != got[n].shape
                    or not torch.equal(_bits(want[n]), _bits(got[n])))
    extra.update(_embeddings(model, model_config, reference))
    return {
        "rank": rank, "params": len(got), "differ": differ,
        "missing": sorted(set(got) - set(loaded)) if loaded is not None else [],
        "linear": len(plans), "from_groups": sum(p.group is not None for p in plans),
        "again": [[p.prefix, p.why] for p in plans if p.group is None],
        "spans_differ": spans_differ, "encoded": len(again), "encoded_differ": encoded_differ,
        "shapes": {n: list(p.shape) for n, p in got.items()}, **extra}


REFUSAL_CASES = [
    # (case, folder: "bf16" or "df11", --load-format, --quantization)
    ("quantization-on-bf16", "bf16", "auto", "df11"),
    ("vllm-loader-on-df11", "df11", "safetensors", None),
    ("vllm-loader-quantization-on-bf16", "bf16", "safetensors", "df11"),
]


def refusals(bf16_dir, df11_dir):
    """Each REFUSAL_CASES engine configuration through vLLM's own steps: its EngineArgs and
    VllmConfig (which pick the quantization config), get_model_loader for the load format, and
    that loader's load_model, the model built on the CPU. One JSON line per case: "quantization"
    and "loader" (the classes vLLM chose), and "refused" (the exception's class and message)
    or "loaded": true."""
    from vllm.config import LoadConfig, set_current_vllm_config
    from vllm.distributed import (destroy_model_parallel, initialize_model_parallel,
                                  model_parallel_is_initialized)
    from vllm.engine.arg_utils import EngineArgs
    from vllm.model_executor.model_loader import get_model_loader
    _cpu_vllm()
    import df11.vllm
    df11.vllm.register()
    folders = {"bf16": bf16_dir, "df11": df11_dir}
    for case, which, load_format, quantization in REFUSAL_CASES:
        got = {"case": case, "folder": folders[which]}
        try:
            model_config = EngineArgs(model=folders[which], skip_tokenizer_init=True,
                                      dtype="bfloat16", quantization=quantization,
                                      load_format=load_format).create_model_config()
            config = _vllm_config(model_config, LoadConfig(load_format=load_format))
            got["quantization"] = type(config.quant_config).__name__
            loader = get_model_loader(config.load_config)
            got["loader"] = type(loader).__name__
            with set_current_vllm_config(config):
                if model_parallel_is_initialized():
                    destroy_model_parallel()
                initialize_model_parallel(1, 1)
                with torch.device("cpu"):
                    loader.load_model(vllm_config=config, model_config=model_config)
            got["loaded"] = True
        except Exception as e:  # what the case is for
            got["refused"] = [type(e).__name__, str(e)[:600]]
        print(json.dumps(got), flush=True)
    return 0


def main(jobs_path, tp=1):
    with open(jobs_path) as f:
        jobs = json.load(f)
    if tp == 1:
        rank_main(jobs)
        return 0
    import multiprocessing
    port = _port()
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    ranks = [ctx.Process(target=rank_main, args=(jobs, r, tp, port, results))
             for r in range(tp)]
    for p in ranks:
        p.start()
    # Read before joining: a process that put into a queue exits once its data is read.
    want, lines, deadline = tp * len(jobs), [], time.monotonic() + 900
    while len(lines) < want and time.monotonic() < deadline:
        try:
            lines.append(results.get(timeout=1))
        except queue.Empty:
            if all(p.exitcode is not None for p in ranks):
                break
    for line in lines:
        print(line, flush=True)
    for p in ranks:
        p.join(60)
        if p.exitcode is None:
            p.kill()
    return 0 if len(lines) == want and all(p.exitcode == 0 for p in ranks) else 1


if __name__ == "__main__":
    if sys.argv[1] == "--refusals":
        sys.exit(refusals(sys.argv[2], sys.argv[3]))
    sys.exit(main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1))
