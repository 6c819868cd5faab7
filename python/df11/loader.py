"""df11.from_pretrained: a DF11 folder (or Hub id) as a transformers / diffusers model.

The arguments are those of the official loader's DFloat11Model.from_pretrained (dfloat11
0.5.0), so that a user changes one import; df11 adds `mode`.
"""
from __future__ import annotations

import contextlib
import os
import threading
import time
from typing import Dict, Optional, Union

import torch

from . import _capi, engine, loading


_ENV_LOCK = threading.Lock()


@contextlib.contextmanager
def _hub_environment(cache_dir, token, local_files_only):
    """transformers' Hub arguments as the environment df11's Hub client reads on each call
    (HF_HUB_CACHE, HF_TOKEN, HF_HUB_OFFLINE), set for the pull alone."""
    values = {}
    if cache_dir is not None:
        values["HF_HUB_CACHE"] = os.fspath(cache_dir)
    if isinstance(token, str):
        values["HF_TOKEN"] = token
    elif token is not None and token is not True:
        raise TypeError(f"df11: token must be a string (or True: the stored token), not "
                        f"{type(token).__name__}")
    if local_files_only:
        values["HF_HUB_OFFLINE"] = "1"
    with _ENV_LOCK:
        saved = {k: os.environ.get(k) for k in values}
        os.environ.update(values)
        try:
            yield
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def _resolve(path_or_id: Union[str, os.PathLike], revision: Optional[str] = None,
             cache_dir=None, token=None, local_files_only: bool = False) -> str:
    path_or_id = os.fspath(path_or_id)
    if os.path.isdir(path_or_id):
        return path_or_id
    if os.path.exists(path_or_id):
        raise NotADirectoryError(f"df11: {path_or_id}: expected a DF11 model folder")
    if path_or_id.count("/") == 1 and not path_or_id.startswith((".", "/")):
        from . import _tools
        repo = path_or_id if revision is None else f"{path_or_id}@{revision}"
        with _hub_environment(cache_dir, token, local_files_only):
            return _tools.pull(repo)
    raise FileNotFoundError(f"df11: {path_or_id}: no such folder (nor a Hub id ORG/NAME)")


def _check_dtype(path: str, dtype) -> None:
    """DF11 weights decode to BF16: the model's dtype is bfloat16 (or transformers' "auto")."""
    if dtype is None or dtype in ("auto", "bfloat16", torch.bfloat16):
        return
    raise ValueError(f"df11: {path}: dtype={dtype!r}: DF11 weights decode to bfloat16 "
                     "exactly; load with dtype=torch.bfloat16 (or leave it out)")


def _is_diffusers_config(config_json: dict) -> bool:
    """config.json as diffusers' save_pretrained writes it for a model (not a pipeline)."""
    return "_class_name" in config_json and "_diffusers_version" in config_json


# What the error says to pass for a diffusers folder whose config.json cannot name its class.
_DIFFUSERS_SKELETON = (
    "with accelerate.init_empty_weights(): bfloat16_model = "
    "FluxTransformer2DModel.from_config(FluxTransformer2DModel.load_config("
    "\"black-forest-labs/FLUX.1-dev\", subfolder=\"transformer\")).to(torch.bfloat16) "
    "(the model's diffusers class and its BF16 repo)")


def _has_diffusers_weights(path: str) -> bool:
    """diffusers' save_pretrained names its weight files diffusion_pytorch_model*.safetensors
    (and the dfloat11 tools keep the name)."""
    return any(f.startswith("diffusion_pytorch_model") and f.endswith(".safetensors")
               for f in os.listdir(path))


def _require_model_config(path: str, config_json: dict) -> None:
    """Without bfloat16_model=, the model is built from config.json's model config."""
    if ("model_type" in config_json or "architectures" in config_json or
            _is_diffusers_config(config_json)):
        return
    config_path = os.path.join(path, "config.json")
    if not os.path.exists(config_path):
        what = "missing"
    elif set(config_json) <= {"dfloat11_config"}:
        what = ("has no model config, only dfloat11_config (as the dfloat11 encoder writes "
                "it)")
    else:
        what = ("has no transformers model config (no model_type or architectures) nor a "
                "diffusers one (no _class_name and _diffusers_version)")
    if _has_diffusers_weights(path):
        raise ValueError(f"df11: {config_path}: {what}, so the diffusers model's class is "
                         "unknown: pass bfloat16_model=, the model built from the original "
                         f"model's config without its weights: {_DIFFUSERS_SKELETON}")
    raise ValueError(f"df11: {config_path}: {what}: pass bfloat16_model=, the model built "
                     "from the original model's config (its weights are replaced)")


def _build_model(path: str, config_json: dict, trust_remote_code: bool, kwargs):
    _require_model_config(path, config_json)
    from accelerate import init_empty_weights
    from transformers import AutoConfig
    config = AutoConfig.from_pretrained(path, trust_remote_code=trust_remote_code)
    build = _model_builder(config, os.path.join(path, "config.json"))
    with init_empty_weights(include_buffers=False):
        model = build(config, dtype=torch.bfloat16, trust_remote_code=trust_remote_code,
                      **kwargs)
    return model.eval()


def _model_builder(config, config_path: str):
    """What builds the model of `config`: the transformers class config.json's
    `architectures` names, the model the checkpoint was saved from (LlamaForCausalLM; a LLaVA or
    Qwen2.5-VL ...ForConditionalGeneration; a base model such as BertModel or Qwen3Model; a
    T5EncoderModel), else AutoModelForCausalLM where it maps the config (or remote code names
    it), else AutoModelForImageTextToText's class for the config."""
    import transformers
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText
    for name in getattr(config, "architectures", None) or []:
        cls = getattr(transformers, name, None) if isinstance(name, str) else None
        if (isinstance(cls, type) and issubclass(cls, transformers.PreTrainedModel)
                and isinstance(config, cls.config_class)):
            return lambda config, trust_remote_code, **kw: cls._from_config(config, **kw)
    auto_map = getattr(config, "auto_map", None) or {}
    if "AutoModelForCausalLM" in auto_map or type(config) in AutoModelForCausalLM._model_mapping:
        return AutoModelForCausalLM.from_config
    if type(config) in AutoModelForImageTextToText._model_mapping:
        return AutoModelForImageTextToText.from_config
    raise ValueError(f"df11: {config_path}: no transformers class for model_type "
                     f"{getattr(config, 'model_type', None)!r} (architectures "
                     f"{getattr(config, 'architectures', None)}) that df11 builds itself: pass "
                     "bfloat16_model=, the model built from this config (its weights are "
                     "replaced)")


_DTYPE_LOCK = threading.Lock()


@contextlib.contextmanager
def _default_dtype(dtype: torch.dtype):
    """torch's default dtype for the model's construction, as diffusers' from_pretrained sets
    it: the buffers a model computes in __init__ (not in the folder) take the dtype they have
    in a model diffusers loads."""
    with _DTYPE_LOCK:
        saved = torch.get_default_dtype()
        torch.set_default_dtype(dtype)
        try:
            yield
        finally:
            torch.set_default_dtype(saved)


def _diffusers_class(path: str, config_json: dict):
    config_path = os.path.join(path, "config.json")
    name = config_json["_class_name"]
    try:
        import diffusers
    except ImportError:
        raise ImportError(f"df11: {config_path}: a diffusers model ({name}): install diffusers "
                          "(pip install df11[diffusers])") from None
    cls = getattr(diffusers, name, None) if isinstance(name, str) else None
    if not (isinstance(cls, type) and issubclass(cls, diffusers.ModelMixin)):
        raise ValueError(f"df11: {config_path}: _class_name {name!r} is not a model class of "
                         f"diffusers {diffusers.__version__}: pass bfloat16_model=, the model "
                         "built from the original model's config without its weights")
    return cls


def _build_diffusers_model(path: str, config_json: dict, kwargs):
    """The model of config.json's _class_name, its parameters on the meta device (the folder's
    tensors replace them), built as diffusers' from_pretrained(torch_dtype=torch.bfloat16)
    loads it: BF16, but the tensors of the class's _keep_in_fp32_modules in float32."""
    from accelerate import init_empty_weights
    cls = _diffusers_class(path, config_json)
    config = {k: v for k, v in config_json.items()
              if k not in ("quantization_config", "dfloat11_config", "df11")}
    with _default_dtype(torch.bfloat16), init_empty_weights(include_buffers=False):
        model = cls.from_config(config, **kwargs)
    # diffusers' load (model_loading_utils.load_model_dict_into_meta) gives every floating
    # tensor of the checkpoint (parameters and persistent buffers) torch_dtype, but those of the
    # class's _keep_in_fp32_modules (a name part) float32; a tensor the class builds in float32
    # itself (SD3's positional table) is BF16 after the load.
    keep = getattr(cls, "_keep_in_fp32_modules", None) or []
    for name, t in model.state_dict(keep_vars=True).items():
        if not t.is_floating_point():
            continue
        dtype = torch.float32 if any(k in name.split(".") for k in keep) else torch.bfloat16
        if t.dtype == dtype:
            continue
        module_name, _, attr = name.rpartition(".")
        module = model.get_submodule(module_name) if module_name else model
        if attr in module._parameters:
            module._parameters[attr] = torch.nn.Parameter(
                torch.empty(t.shape, dtype=dtype, device="meta"), requires_grad=t.requires_grad)
        else:
            module._buffers[attr] = t.to(dtype)
    model.register_to_config(_name_or_path=path)  # as diffusers' from_pretrained records it
    return model.eval()


def from_pretrained(dfloat11_model_name_or_path: str, device: Optional[str] = None,
                    device_map: Union[str, Dict, None] = "auto",
                    max_memory: Optional[Dict[Union[int, str], Union[int, str]]] = None,
                    bfloat16_model=None, cpu_offload: bool = False,
                    cpu_offload_blocks: Optional[int] = None, pin_memory: bool = True,
                    mode: str = "decode", *, dtype=None, torch_dtype=None,
                    revision: Optional[str] = None, cache_dir=None, token=None,
                    local_files_only: bool = False, trust_remote_code: bool = False, **kwargs):
    """Loads a DF11 model folder (written by `df11 compress` or published by the dfloat11
    tools) or a Hub id ("ORG/NAME", pulled into the Hugging Face cache by df11) into a model
    that decodes its weights just before use.

    device: "cuda", "cuda:1", "cpu"; default: the first GPU, or the CPU without one.
    device_map: "auto" (default; used when `device` is not given and several GPUs are
        visible: blocks spread over them through accelerate, sized by their coded bytes), an
        accelerate device map {module: device}, or one device ("cpu", "cuda:1", 0).
    max_memory: per-device budget for device_map="auto", as accelerate takes it.
    bfloat16_model: a model to load the weights into (built from its config; its weights are
        replaced). Needed for folders whose config.json holds dfloat11_config alone (the
        official encoder's default output: the coded weights' shapes are its parameters');
        default: the model config.json describes, built without allocating weights, in
        bfloat16: for transformers the class config.json's `architectures` names (the model
        the checkpoint was saved from), else AutoModelForCausalLM.from_config (remote code
        too), else AutoModelForImageTextToText's; for diffusers the class config.json's
        _class_name names (its from_config).
    cpu_offload: keep the coded blocks in (pinned, pin_memory=True) host memory; each is
        copied to the GPU just before its decode. cpu_offload_blocks: only the first N.
    mode: "decode" (default: decode + torch's matmuls, logits bit-identical to BF16's), or
        "exec" (CUDA only: coded Linear layers transcoded at load into the execution layout,
        12 bits per weight, and multiplied from it by df11's fused GEMM at up to 16 tokens;
        logits then equal the reference GEMM's on BF16 weights (df11.exec_reference), not
        cuBLAS's; docs/running/transformers.md, "Modes"), or "compact" (the same from the
        compact execution layout: about 10.7 bits per weight, no more than DF11's; slower).
    dtype (or torch_dtype): bfloat16, "auto" or None; DF11 weights are BF16.
    revision, cache_dir, token, local_files_only: for a Hub id, as transformers takes them
        (df11's Hub client pulls "org/name@revision" into cache_dir, default the shared HF
        cache). trust_remote_code: as transformers takes it, for the model's code.
    **kwargs: passed to the model class's from_config (diffusers: to the class's
        from_config, as config values).
    """
    path = _resolve(dfloat11_model_name_or_path, revision=revision, cache_dir=cache_dir,
                    token=token, local_files_only=local_files_only)
    _check_dtype(path, torch_dtype if dtype is None else dtype)
    auto_maps = ("auto", "balanced", "balanced_low_0", "sequential", None)
    if device is not None:
        target = loading.single_device(device)
    elif not isinstance(device_map, dict) and device_map not in auto_maps:
        target = loading.single_device(device_map)
    else:
        target = None
    config_json = loading.read_config(path)
    t0 = time.perf_counter()
    model = bfloat16_model
    if model is None and _is_diffusers_config(config_json):
        # Built before the folder is opened: its parameters give the coded weights' shapes,
        # which the C library derives from config.json for the architectures it knows only.
        model = _build_diffusers_model(path, config_json, kwargs)
    t_model = time.perf_counter() - t0
    t0 = time.perf_counter()
    try:
        folder = _open_folder(path, config_json, model)
    except _capi.Df11Error as e:
        if model is not None or not loading.shapes_unknown(e):
            raise
        model = _build_model(path, config_json, trust_remote_code, kwargs)
        folder = _capi.Model(path, shapes=loading.model_shapes(model, path))
    t_open = time.perf_counter() - t0
    # The stored checksums are checked on threads from here, beside the model's construction.
    checks = engine.started_checks(folder, target, mode)
    try:
        if model is None:
            t0 = time.perf_counter()
            model = _build_model(path, config_json, trust_remote_code, kwargs)
            t_model = time.perf_counter() - t0
        device_of = loading.placement(model, folder, target, device_map, max_memory)
    except BaseException:
        if checks is not None:
            checks.wait()
        raise
    t0 = time.perf_counter()
    eng = engine.attach(model, folder, device_of, cpu_offload=cpu_offload,
                        cpu_offload_blocks=cpu_offload_blocks, pin_memory=pin_memory, mode=mode,
                        stored_checks=checks)
    eng.load_seconds = {"open": t_open, "model": t_model,
                        "attach": time.perf_counter() - t0, **eng.load_seconds}
    object.__setattr__(model, "df11", eng)
    if _is_transformers_model(model):
        from . import hf_quantizer
        hf_quantizer.attach(model, eng)  # save_pretrained writes the coded groups
    else:
        from . import diffusers_quantizer
        if diffusers_quantizer.is_diffusers_model(model):
            diffusers_quantizer.attach(model, eng, config_json)  # the same for diffusers
    loading.wrap_generate(model, eng)
    _attach_accelerate_hooks(model, device_of)
    gen_path = os.path.join(path, "generation_config.json")
    if os.path.exists(gen_path) and hasattr(model, "generation_config"):
        from transformers import GenerationConfig
        model.generation_config = GenerationConfig.from_pretrained(path)
    return model.eval()


def _is_transformers_model(model) -> bool:
    try:
        from transformers import PreTrainedModel
    except ImportError:
        return False
    return isinstance(model, PreTrainedModel)


def _open_folder(path: str, config_json: dict, bfloat16_model) -> _capi.Model:
    """The folder, with the shapes of bfloat16_model's parameters where one is given: the
    dfloat11 encoder's own config.json records no shapes for the weights it coded."""
    if bfloat16_model is None:
        _require_model_config(path, config_json)  # before any shard is read
        return _capi.Model(path)
    return _capi.Model(path, shapes=loading.model_shapes(bfloat16_model, path))


def _attach_accelerate_hooks(model, device_of) -> None:
    """With modules on several GPUs, accelerate's AlignDevicesHook moves each block's inputs to
    the block's device, as dispatch_model does, without touching the weights: one hook on each
    largest subtree that runs on one device; the root's outputs come back to its inputs'
    device."""
    devices = {str(device_of(n)) for n, _ in model.named_modules()}
    if len(devices) <= 1:
        return
    from accelerate.hooks import AlignDevicesHook, add_hook_to_module

    def visit(name, module):
        own = {str(device_of(n)) for n, _ in module.named_modules(prefix=name)}
        if len(own) == 1:
            add_hook_to_module(module, AlignDevicesHook(execution_device=device_of(name)),
                               append=True)
            return
        for child_name, child in module.named_children():
            visit(f"{name}.{child_name}" if name else child_name, child)

    add_hook_to_module(model, AlignDevicesHook(io_same_device=True), append=True)
    for child_name, child in model.named_children():
        visit(child_name, child)


class DFloat11Model:
    """The official loader's entry point, for users who change one import:
    `from df11 import DFloat11Model`."""

    @classmethod
    def from_pretrained(cls, dfloat11_model_name_or_path: str, device: Optional[str] = None,
                        device_map: Union[str, Dict, None] = "auto",
                        max_memory=None, bfloat16_model=None, cpu_offload: bool = False,
                        cpu_offload_blocks: Optional[int] = None, pin_memory: bool = True,
                        **kwargs):
        return from_pretrained(dfloat11_model_name_or_path, device=device,
                               device_map=device_map, max_memory=max_memory,
                               bfloat16_model=bfloat16_model, cpu_offload=cpu_offload,
                               cpu_offload_blocks=cpu_offload_blocks, pin_memory=pin_memory,
                               **kwargs)
