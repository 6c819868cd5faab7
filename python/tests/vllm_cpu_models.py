"""vLLM's own model classes, built on the CPU with df11's plugin registered: what the plugin's
loader does before its GPU step, for a DF11 folder, against vLLM loading the BF16 checkpoint.

    python vllm_cpu_models.py DF11_FOLDER BF16_FOLDER [TP]    prints one JSON line per rank

It builds the model vLLM builds for each folder (vLLM's CPU platform, one rank on a gloo process
group: both process-wide, hence a process of its own; test_vllm_plugin.py runs it), feeds the
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
  - encoded / encoded_differ: the layers of `again`, coded with coded.encode as the GPU step
    codes them (a tensor-parallel rank's slices), and those whose tensor does not decode back
    to exactly the weight.
TP (default 1): tensor_parallel_size, one process per rank (all on the CPU), each reporting
its own slices.
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


def _build(folder, tp=1):
    from vllm.config import (CompilationConfig, DeviceConfig, LoadConfig, ParallelConfig,
                             VllmConfig, set_current_vllm_config)
    from vllm.distributed import initialize_model_parallel, model_parallel_is_initialized
    from vllm.engine.arg_utils import EngineArgs
    from vllm.model_executor.model_loader.utils import initialize_model
    from vllm.utils.torch_utils import set_default_torch_dtype
    # BF16 as on a GPU (vLLM's CPU platform would pick float32 on a CPU without BF16 support).
    args = EngineArgs(model=folder, skip_tokenizer_init=True, dtype="bfloat16",
                      tensor_parallel_size=tp)
    model_config = args.create_model_config()
    # vLLM's custom ops would call its CPU kernels, which a CUDA build of vLLM lacks: the
    # models' torch implementations instead (nothing runs here, but some bind at build time).
    config = VllmConfig(model_config=model_config, device_config=DeviceConfig("cpu"),
                        load_config=LoadConfig(), parallel_config=ParallelConfig(
                            tensor_parallel_size=tp),
                        compilation_config=CompilationConfig(custom_ops=["none"]))
    with set_current_vllm_config(config):
        if not model_parallel_is_initialized():
            initialize_model_parallel(tp, 1)
        with set_default_torch_dtype(model_config.dtype), torch.device("cpu"):
            return initialize_model(config), model_config.quantization


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


def rank_main(df11_dir, bf16_dir, rank=0, tp=1, port=None, results=None):
    import tempfile
    _cpu_vllm(rank, tp, port)
    import df11.vllm
    df11.vllm.register()
    from df11 import _capi, coded, vllm_plugin
    reference, quantization = _build(bf16_dir, tp)
    assert quantization is None, quantization
    reference.load_weights(_checkpoint(bf16_dir))
    model, quantization = _build(df11_dir, tp)
    assert quantization == "df11", quantization
    with _capi.Model(df11_dir) as folder:
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
    # The layers the GPU step codes again, coded as it codes them.
    again = {f"{p.prefix}.weight": p.layer.weight.data for p in plans if p.group is None}
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
    differ = sorted(n for n in set(want) | set(got)
                    if n not in want or n not in got or want[n].shape != got[n].shape
                    or not torch.equal(_bits(want[n]), _bits(got[n])))
    result = json.dumps({
        "rank": rank, "params": len(got), "differ": differ,
        "missing": sorted(set(got) - set(loaded)) if loaded is not None else [],
        "linear": len(plans), "from_groups": sum(p.group is not None for p in plans),
        "again": [[p.prefix, p.why] for p in plans if p.group is None],
        "spans_differ": spans_differ, "encoded": len(again), "encoded_differ": encoded_differ,
        "shapes": {n: list(p.shape) for n, p in got.items()}})
    if results is None:
        print(result, flush=True)
    else:
        results.put(result)  # the parent prints the ranks' lines, one at a time


def main(df11_dir, bf16_dir, tp=1):
    if tp == 1:
        return rank_main(df11_dir, bf16_dir)
    import multiprocessing
    port = _port()
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    ranks = [ctx.Process(target=rank_main, args=(df11_dir, bf16_dir, r, tp, port, results))
             for r in range(tp)]
    for p in ranks:
        p.start()
    # Read before joining: a process that put into a queue exits once its data is read.
    lines, deadline = [], time.monotonic() + 900
    while len(lines) < tp and time.monotonic() < deadline:
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
    return 0 if len(lines) == tp and all(p.exitcode == 0 for p in ranks) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 1))
