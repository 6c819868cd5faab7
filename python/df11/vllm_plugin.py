"""The vLLM side of df11 (imported by df11.vllm.register, only where vLLM is installed).

Decode mode: each Linear layer's weight stays DF11-coded on the GPU and is decoded into a fresh
BF16 tensor just before its matmul (its members' spans of the block's group, one launch:
coded.SpansWeight; a decoder layer's o_proj and gate_up_proj in one launch together:
chain_layers), which is the call vLLM's own BF16 layers make
(dispatch_unquantized_gemm) on the same bits: the outputs are meant to equal vLLM serving the
BF16 model bit for bit, which python/tests/gpu/vllm_check.sh checks.

Execution mode (vLLM's additional_config {"df11_mode": "exec"}): each Linear layer's members
are served from the execution layout (df11.exec_mode.ExecWeight, 12.01 bits per weight,
transcoded from the folder's groups at load), through torch.ops.df11.exec_weight_linear: at up
to exec_mode.fused_max_tokens() tokens per step (64 for "exec", 128 on an H100 80GB HBM3; 32 for
"compact"; on a GPU where `python -m df11.tune` ran, the switch it measured) the layout's
fused GEMM (equal bit for bit to df11's reference GEMM, not to cuBLAS), above that the weight
decoded into a new BF16 tensor and F.linear, as in decode mode. A layer the layout cannot
serve is served in decode mode. {"df11_mode": "compact"} is the same from the compact
execution layout (about 10.7 bits per weight, no more than DF11's, plus a 16 KB decode table
per matrix; its GEMM has the same products and order, so the same guarantee, and is slower
than the 12-bit layout's).

Loading (DF11ModelLoader.load_weights):
  1. Every coded group of the folder is uploaded to the GPU once and decoded there, and every
     tensor handed by its original name to the model's own `load_weights`, as a BF16
     checkpoint's tensors would be (coded.decoded_tensors with coded.GpuUploads: every stream
     checked; the stored checksums of df11 folders are compared before any layer is served:
     hashed on the GPU, GpuUploads.check_stored, where the load keeps the groups there, else
     on host threads meanwhile, decoders.StoredChecks): vLLM's name mapping,
     q/k/v and gate/up fusing stay vLLM's. DF11LinearMethod allocates the Linear weights that
     take them on the GPU where the device has room for the model's BF16 weights beside its
     coded groups (load_device; its free memory, not vLLM's budget, which is about what stays
     after the load), else in host memory; either way they are dropped in step 2.
  2. Each Linear weight is then matched to spans of one coded group (the members its
     packed_modules_mapping names, in that order), the group is uploaded once, and the weight
     decoded on the GPU is compared with the host tensor vLLM's loader built: equal, the host
     tensor is dropped and the layer decodes from the group from then on (in the execution
     mode: the group is transcoded once, and the layer's members' blobs are decoded and
     compared the same way). A layer the folder's
     groups cannot give as it is (a tensor-parallel rank's slice, a weight the model's loader
     transforms, members in several groups) is coded again from that tensor (in decode mode,
     on the GPU where the tensor is: coded.GpuGroup.encoded; in the execution modes packed
     into the layout there: exec_mode.pack_bf16; else coded.encode_batches) and checked the same
     way; one that cannot be coded either way keeps the
     tensor as an ordinary BF16 weight on the GPU, with a warning. A corrupt stream raises
     Df11Error naming the file, group and block.
  In decode mode at tensor and pipeline parallel 1 (and wherever DF11_VLLM_LOAD_VIA=layer asks
  for it), step 2 happens inside step 1, layer by layer, through vLLM's layer-wise loading
  (LayerwiseCoder): about one Linear weight is in BF16 at a time. DF11_VLLM_LOAD_VIA=gpu or
  host keeps steps 1 and 2 apart.
Fused MoE layers (their experts' weights) are coded again on the GPU as each is loaded, and
decode only the experts a step routes to (df11.vllm_moe).
The input embedding, where the model's head does not share its weight, is coded again on the
GPU at the end of the load and its lookups decode the rows they name (DF11EmbeddingMethod).
Other layers (the head, norms) are loaded as BF16, decoded from the folder.
The dfloat11 encoder's single-file folder (config.json: dfloat11_config alone) is served with
the original model's config (--hf-config-path) and --quantization df11: the coded weights'
shapes are then the parameters' of the model that config describes (checkpoint_shapes).
"""
from __future__ import annotations

import copy
import os
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

import huggingface_hub
import torch
from transformers import PretrainedConfig

import vllm.envs as envs
from vllm.logger import init_logger
from vllm.model_executor.layers.batch_invariant import linear_batch_invariant
from vllm.model_executor.layers.fused_moe import RoutedExperts
from vllm.model_executor.layers.linear import (LinearBase, LinearMethodBase,
                                               register_weight_loader_v2_supported_method)
from vllm.model_executor.layers.quantization import register_quantization_config
from vllm.model_executor.layers.quantization.base_config import QuantizationConfig
from vllm.model_executor.layers.utils import dispatch_unquantized_gemm
from vllm.model_executor.layers.vocab_parallel_embedding import (ParallelLMHead,
                                                                 UnquantizedEmbeddingMethod,
                                                                 VocabParallelEmbedding)
from vllm.model_executor.model_loader import register_model_loader
from vllm.model_executor.model_loader.default_loader import DefaultModelLoader
from vllm.model_executor.model_loader.reload.layerwise import (finalize_layerwise_processing,
                                                               get_layerwise_info,
                                                               initialize_online_processing)
from vllm.model_executor.parameter import ModelWeightParameter
from vllm.model_executor.utils import set_weight_attrs
from vllm.platforms import current_platform
from vllm.transformers_utils.config import HFConfigParser, register_config_parser

from . import _capi, _ops, _tools, coded, exec_mode, loading, vllm_moe
from .decoders import RowsDecoder, StoredChecks
from .device_lock import DeviceLock
from .vllm_moe import DF11MoEMethod
from .vllm_config import (QUANT_METHOD, lacks_model_config, member_names, member_spans,
                          quantization_config, serving_mode, single_file_hint)

# Under "vllm." so that vLLM's logging configuration shows df11's lines with its own.
logger = init_logger("vllm.df11")


class DF11Config(QuantizationConfig):
    """The quantization method "df11": Linear layers through DF11LinearMethod, fused MoE layers'
    experts through DF11MoEMethod (df11.vllm_moe), everything else as vLLM's BF16 layers. The folder itself is read by DF11ModelLoader, so the config needs
    no file of its own."""

    def __init__(self, dfloat11_config: Optional[dict] = None):
        super().__init__()
        self.dfloat11_config = dict(dfloat11_config or {})
        # Where DF11LinearMethod allocates the Linear weights that vLLM's loader fills (set by
        # DF11ModelLoader.load_model before the model is built; see load_device), and whether
        # each layer is coded as soon as vLLM's loader has filled it (layerwise_load).
        self.weights_device = torch.device("cpu")
        self.layerwise = False

    def get_name(self) -> str:
        return QUANT_METHOD

    def get_supported_act_dtypes(self) -> List[torch.dtype]:
        return [torch.bfloat16]

    @classmethod
    def get_min_capability(cls) -> int:
        return 80  # BF16 matmuls

    @staticmethod
    def get_config_filenames() -> List[str]:
        return []

    @classmethod
    def from_config(cls, config: Dict[str, Any]) -> "DF11Config":
        return cls(config.get("dfloat11_config"))

    @classmethod
    def override_quantization_method(cls, hf_quant_cfg, user_quant, hf_config=None):
        if hf_quant_cfg.get("quant_method") == QUANT_METHOD and user_quant in (None,
                                                                               QUANT_METHOD):
            return QUANT_METHOD
        return None

    def get_quant_method(self, layer: torch.nn.Module, prefix: str):
        if isinstance(layer, LinearBase):
            return DF11LinearMethod(self.weights_device, self.layerwise)
        if isinstance(layer, RoutedExperts):
            return DF11MoEMethod(layer.moe_config)  # experts coded, decoded as routed
        if type(layer) is VocabParallelEmbedding:  # the input embedding, not the head
            return DF11EmbeddingMethod()
        return None  # the head, attention: vLLM's unquantized methods


class DF11LinearMethod(LinearMethodBase):
    """A Linear layer in decode mode. Its `weight` is created on `device` (the GPU or host
    memory: DF11ModelLoader.load_model chooses) for vLLM's loader to fill; once coded, the
    layer has no `weight` and `df11_key` names its SpansWeight. `layerwise`: the weight is
    created on the meta device instead and loaded through vLLM's layer-wise online processing
    (as its online FP8 methods are), which materializes it once its first tensor arrives and
    calls process_weights_after_loading once all of them did: the layer is coded there, so that
    no more than the layers being loaded exist in BF16 at once."""

    def __init__(self, device: torch.device = torch.device("cpu"), layerwise: bool = False):
        super().__init__()
        self.device = device
        self.layerwise = layerwise
        self.uses_meta_device = layerwise  # what vLLM's loader reads to finalize such layers

    def create_weights(self, layer, input_size_per_partition, output_partition_sizes, input_size,
                       output_size, params_dtype, **extra_weight_attrs):
        weight_loader = extra_weight_attrs.pop("weight_loader")
        weight = ModelWeightParameter(
            data=torch.empty(sum(output_partition_sizes), input_size_per_partition,
                             dtype=params_dtype,
                             device="meta" if self.layerwise else self.device),
            input_dim=1, output_dim=0, weight_loader=weight_loader)
        layer.register_parameter("weight", weight)
        set_weight_attrs(weight, extra_weight_attrs)
        layer.df11_key = None
        layer.df11_exec_key = None
        layer.df11_loaded = False
        if self.layerwise:
            initialize_online_processing(layer)

    def process_weights_after_loading(self, layer) -> None:
        if self.layerwise and not layer.df11_loaded and _layerwise_coder is not None:
            _layerwise_coder(layer)  # a layer-wise load: vLLM's loader has filled the layer
            return
        if not layer.df11_loaded:
            raise RuntimeError(
                f"df11: layer '{getattr(layer, 'prefix', '?')}' was not loaded by df11's model "
                "loader: serve a DF11 folder with --load-format auto (the default) or df11")

    def apply(self, layer, x: torch.Tensor, bias: Optional[torch.Tensor] = None) -> torch.Tensor:
        if layer.df11_exec_key is not None:
            return torch.ops.df11.exec_weight_linear(x, bias, layer.df11_exec_key)
        key = layer.df11_key
        weight = layer.weight if key is None else torch.ops.df11.decode_weight(x, key)
        # What UnquantizedLinearMethod.apply does with its weight.
        if envs.VLLM_BATCH_INVARIANT and current_platform.is_cuda_alike():
            return linear_batch_invariant(x, weight, bias)
        return dispatch_unquantized_gemm()(layer, x, weight, bias)


class DF11EmbeddingMethod(UnquantizedEmbeddingMethod):
    """An input embedding (vLLM's VocabParallelEmbedding; the head is a ParallelLMHead and keeps
    vLLM's method). vLLM's loader fills its BF16 weight as it would an unquantized model's; at
    the end of the load (attach: _code_embeddings) the weight is coded on the GPU where nothing
    else reads it, and each lookup then decodes only the rows its ids name
    (torch.ops.df11.embed_rows, decoders.RowsDecoder): the bits of the BF16 lookup. Returned as
    F.embedding(positions, rows), so that a traced step gathers the output where the BF16
    model's graph gathers it from its weight. An embedding left uncoded (a tied head reads its
    weight, or no GPU encoder) looks up its BF16 weight as vLLM's own method does."""

    def embedding(self, layer: torch.nn.Module, input_: torch.Tensor) -> torch.Tensor:
        key = getattr(layer, "df11_rows_key", None)
        if key is None:
            return super().embedding(layer, input_)
        rows, positions = torch.ops.df11.embed_rows(input_, key)
        return torch.nn.functional.embedding(positions, rows)

    def apply(self, layer: torch.nn.Module, x: torch.Tensor,
              bias: Optional[torch.Tensor] = None) -> torch.Tensor:
        """The embedding used as the head (a model that multiplies by its embedding without
        saying that its head is tied, which _code_embeddings leaves uncoded): a coded weight is
        decoded whole, into a new tensor, for the product."""
        key = getattr(layer, "df11_rows_key", None)
        if key is None:
            return super().apply(layer, x, bias)
        rows = layer.num_embeddings_per_partition
        weight, _ = torch.ops.df11.embed_rows(torch.arange(rows, device=x.device), key)
        return dispatch_unquantized_gemm()(layer, x, weight, bias)


class DF11ModelLoader(DefaultModelLoader):
    """vLLM's default loader, which loads a model quantized with "df11" from its DF11 folder
    (see the module's docstring) and any other model as vLLM does."""

    def __init__(self, load_config):
        if load_config.load_format == QUANT_METHOD:
            # The files are found as for "auto", which vLLM's file listing knows.
            load_config = copy.copy(load_config)
            load_config.load_format = "auto"
        super().__init__(load_config)

    def load_model(self, vllm_config, model_config, prefix: str = ""):
        self.lora = getattr(vllm_config, "lora_config", None) is not None
        if model_config.quantization == QUANT_METHOD and self.lora and model_config.is_moe:
            # vLLM's LoRA layer for fused experts reads and replaces the experts' weights,
            # which a DF11 MoE layer decodes into shared buffers: refused before any weight
            # is loaded.
            raise ValueError(
                f"df11: {model_config.model}: LoRA adapters (--enable-lora) are not supported "
                "on a DF11 mixture-of-experts model in vLLM (its experts stay coded and are "
                "decoded as routed). Merge the adapter into the BF16 model and compress that, "
                "or serve the BF16 model with the adapter")
        self.mode = serving_mode(vllm_config.additional_config)
        parallel = vllm_config.parallel_config
        # A rank of several keeps no uploaded group: its layers are slices the folder's groups
        # cannot give, and the whole folder's coded bytes need not fit one GPU.
        self.keep_groups = parallel.tensor_parallel_size * parallel.pipeline_parallel_size == 1
        self.folder = None
        self.layerwise = False
        quant = vllm_config.quant_config
        if model_config.quantization == QUANT_METHOD and isinstance(quant, DF11Config):
            path = self._folder_path(model_config)
            self.folder = (path, open_folder(path, model_config))  # Df11Error naming the file
            self.layerwise = quant.layerwise = layerwise_load(self.keep_groups, self.mode)
            if quant.layerwise:
                logger.info("df11: Linear weights load layer by layer, each coded on the GPU "
                            "once vLLM's loader has filled it")
            else:
                quant.weights_device = load_device(self.folder[1],
                                                   parallel.tensor_parallel_size, self.keep_groups)
                logger.info("df11: Linear weights pass through %s memory at load",
                            "GPU" if quant.weights_device.type == "cuda" else "host")
        return super().load_model(vllm_config, model_config, prefix)

    def _folder_path(self, model_config) -> str:
        path, _, _ = self._prepare_weights(model_config.model, None, model_config.revision,
                                           False, None)
        return path

    def load_weights(self, model: torch.nn.Module, model_config) -> None:
        if model_config.quantization != QUANT_METHOD:
            return super().load_weights(model, model_config)
        t0 = time.perf_counter()
        path, folder = getattr(self, "folder", None) or (None, None)
        if folder is None:
            path = self._folder_path(model_config)
            folder = open_folder(path, model_config)  # Df11Error naming the file and group
        self.folder = None
        device = torch.device("cuda", torch.cuda.current_device())
        state = _Attach(os.path.realpath(path), getattr(self, "mode", "decode"))
        keep = getattr(self, "keep_groups", True)
        # Kept groups are hashed on the GPU after the load; a rank that drops each group once
        # decoded has its stored checksums hashed on host threads meanwhile.
        checks = None if keep else StoredChecks(folder, list(range(folder.group_count())))
        global _layerwise_coder
        try:
            t1 = time.perf_counter()
            uploads = coded.GpuUploads(device, keep)
            if getattr(self, "layerwise", False):
                _layerwise_coder = LayerwiseCoder(state, folder, path, plan_layers(model, folder),
                                                  uploads.groups)
            expected = {name for name, _ in model.named_parameters()}
            loaded = model.load_weights(coded.decoded_tensors(folder, uploads))
            if loaded is not None:
                missing = expected - set(loaded)
                if missing:
                    raise ValueError(f"df11: {path}: the folder has no weights for "
                                     f"{sorted(missing)[:8]} ({len(missing)} in all)")
            if _layerwise_coder is not None:
                # The layers vLLM's loader has not finalized yet, while the coder is set.
                finalize_layerwise_processing(model, model_config)
                logger.info("df11: %d of %d Linear layers coded as vLLM's loader filled them",
                            _layerwise_coder.n_coded, len(_layerwise_coder.plans))
            t2 = time.perf_counter()
            if checks is None:
                uploads.check_stored(folder)  # Df11Error naming the file, tensor and group
            else:
                checks.join()
        finally:
            _layerwise_coder = None
            if checks is not None:
                checks.wait()
        t3 = time.perf_counter()
        attach(model, folder, state.folder_id, state.mode, uploads.groups, state,
               tied=bool(getattr(model_config.hf_text_config, "tie_word_embeddings", False)),
               lora=getattr(self, "lora", False))
        uploads = None  # the groups no layer decodes from are freed
        torch.cuda.empty_cache()
        logger.info("df11: load phases: folder opened %.2f s, uploaded and decoded on the GPU "
                    "into vLLM's load_weights %.2f s, stored checksums %s %.2f s, layers "
                    "coded (decode and comparison) %.2f s", t1 - t0, t2 - t1,
                    "hashed on the GPU" if checks is None else "(host threads) waited",
                    t3 - t2, time.perf_counter() - t3)


LOAD_VIA_ENV = "DF11_VLLM_LOAD_VIA"  # "gpu", "host" or "layer": how the Linear weights load


def layerwise_load(tp_pp_one: bool, mode: str = "decode") -> bool:
    """Whether each Linear layer is coded as soon as vLLM's loader has filled it
    (DF11LinearMethod's `layerwise`), from the folder's coded groups kept on the GPU, which needs
    tensor and pipeline parallel 1 (`tp_pp_one`): by default in decode mode there;
    DF11_VLLM_LOAD_VIA=layer asks for it in any mode (refused at several ranks), =gpu or =host
    for the load through every Linear weight in BF16 (load_device)."""
    via = os.environ.get(LOAD_VIA_ENV, "")
    if via not in ("", "gpu", "host", "layer"):
        raise ValueError(f"df11: {LOAD_VIA_ENV}={via!r}: expected 'gpu', 'host' or 'layer'")
    if via == "layer" and not tp_pp_one:
        raise ValueError(f"df11: {LOAD_VIA_ENV}=layer codes each layer from the folder's coded "
                         "groups kept on the GPU, which needs tensor and pipeline parallel 1")
    return via == "layer" or (via == "" and tp_pp_one and mode == "decode")


# Set by DF11ModelLoader.load_weights for the layer-wise load of one model: what
# DF11LinearMethod.process_weights_after_loading calls once vLLM's loader has filled a layer.
_layerwise_coder = None


class LayerwiseCoder:
    """Codes each Linear layer of a layer-wise load (DF11LinearMethod's `layerwise`) once vLLM's
    loader has filled it: from the spans of the folder's group its plan names (on the GPU,
    compared bit for bit with the filled weight, as attach does). A layer that does not decode
    so keeps its weight for attach, which codes it again afterwards. A layer vLLM's loader did
    not fill whole raises ValueError naming it. `uploaded`: the load's groups on the GPU
    (coded.GpuUploads.groups), by index, filled as the load goes."""

    def __init__(self, state: "_Attach", folder: _capi.Model, path: str,
                 plans: List["LayerPlan"], uploaded: Dict[int, coded.GpuGroup]):
        self.state = state
        self.folder = folder
        self.path = path
        self.plans = {id(p.layer): p for p in plans}
        self.uploaded = uploaded
        self.by_group: Dict[Tuple[int, int], coded.GpuGroup] = {}
        self.n_coded = 0  # layers coded during the load

    def __call__(self, layer: torch.nn.Module) -> None:
        info = get_layerwise_info(layer)
        total = info.load_numel_total or 0
        if info.load_numel < total or total == 0:
            raise ValueError(f"df11: {self.path}: vLLM's loader filled {info.load_numel} of the "
                             f"{total} weights of layer '{getattr(layer, 'prefix', '?')}'")
        plan = self.plans.get(id(layer))
        if plan is None or plan.group is None:
            return
        key = (id(self.folder), plan.group)
        if key not in self.by_group and plan.group in self.uploaded:
            self.by_group[key] = self.uploaded[plan.group]
        self.n_coded += self.code(plan)

    def code(self, plan: "LayerPlan") -> bool:
        """Serves `plan`'s layer from its group if it decodes to exactly the filled weight."""
        return self.state.code(plan, self.folder, plan.group, plan.spans, self.by_group)


def load_device(folder: _capi.Model, tp_size: int, keep_groups: bool) -> torch.device:
    """Where vLLM's loader builds the Linear weights of `folder` at load: torch's current GPU
    if its free memory holds a rank's share of the model's BF16 weights, the coded groups the
    load keeps there (all of them, or one at a time), two decoded groups and 1 GiB to spare;
    host memory otherwise. DF11_VLLM_LOAD_VIA=gpu or host decides instead."""
    via = os.environ.get(LOAD_VIA_ENV, "")
    if via not in ("", "gpu", "host", "layer"):
        raise ValueError(f"df11: {LOAD_VIA_ENV}={via!r}: expected 'gpu', 'host' or 'layer'")
    if via == "host":
        return torch.device("cpu")
    gpu = torch.device("cuda", torch.cuda.current_device())
    if via == "gpu":
        return gpu
    coded_bytes, bf16_bytes, largest_coded, largest_bf16 = 0, 0, 0, 0
    for g in range(folder.group_count()):
        nbytes = sum(folder.group_part(g, part)[1] for part in _capi.DEVICE_PARTS)
        coded_bytes += nbytes
        largest_coded = max(largest_coded, nbytes)
        largest_bf16 = max(largest_bf16, 2 * folder.group_element_count(g))
        bf16_bytes += 2 * folder.group_element_count(g)
    need = (bf16_bytes // max(1, tp_size) + (coded_bytes if keep_groups else largest_coded)
            + 2 * largest_bf16 + (1 << 30))
    free, _ = torch.cuda.mem_get_info()
    return gpu if need <= free else torch.device("cpu")


def open_folder(path: str, model_config) -> _capi.Model:
    """The DF11 folder at `path`. Where its config.json holds dfloat11_config alone (the
    dfloat11 encoder's single-file output, served with --hf-config-path), the coded weights'
    shapes are those of the model vLLM's config describes (checkpoint_shapes)."""
    if not lacks_model_config(loading.read_config(path)):
        return _capi.Model(path)
    return _capi.Model(path, shapes=checkpoint_shapes(
        model_config.hf_config, getattr(model_config, "trust_remote_code", False)))


def checkpoint_shapes(hf_config, trust_remote_code: bool = False) -> Dict[str, Tuple[int, ...]]:
    """{checkpoint name: shape} of every parameter of the transformers model `hf_config`
    describes (its `architectures` class, else AutoModelForCausalLM), built on the meta device:
    the names and shapes a BF16 checkpoint of it holds, tied ones included."""
    import transformers
    arch = next((getattr(transformers, a) for a in getattr(hf_config, "architectures", None) or []
                 if hasattr(transformers, a)), None)
    with torch.device("meta"):
        if arch is not None:
            model = arch._from_config(hf_config)
        else:
            model = transformers.AutoModelForCausalLM.from_config(
                hf_config, trust_remote_code=trust_remote_code)
    return {name: tuple(p.shape) for name, p in model.named_parameters(remove_duplicate=False)}


def _same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal bit for bit (torch.equal on BF16 takes -0 for +0 and no NaN for itself)."""
    return a.shape == b.shape and a.dtype == b.dtype and torch.equal(
        a.view(torch.int16), b.view(torch.int16))


@dataclass
class LayerPlan:
    """How one DF11 Linear layer gets its weight: from spans of the folder's coded group `group`
    (the members' (offset, numel) spans in the layer's order), or, where `group` is None, not
    from the folder's groups, for the reason `why`."""
    prefix: str
    layer: torch.nn.Module
    group: Optional[int]
    spans: List[Tuple[int, int]]
    why: str


def plan_layers(model: torch.nn.Module, folder: _capi.Model) -> List[LayerPlan]:
    """A plan for every DF11 Linear layer of `model` (host only: nothing decoded)."""
    mapper = getattr(model, "hf_to_vllm_mapper", None)
    packed = getattr(model, "packed_modules_mapping", None) or {}
    names: Dict[str, int] = {}
    for t in range(folder.tensor_count()):
        name = folder.tensor_name(t)
        mapped = mapper.apply_list([name]) if mapper is not None else [name]
        if mapped:
            names[mapped[0]] = t
    plans = []
    for prefix, layer in model.named_modules():
        if not isinstance(getattr(layer, "quant_method", None), DF11LinearMethod):
            continue
        if getattr(layer, "df11_loaded", False):
            continue  # coded already, during a layer-wise load
        members = [names.get(n) for n in member_names(prefix, packed)]
        if None in members:
            g, spans, why = None, [], "the folder has no tensor for some of its members"
        else:
            g, spans, why = coded.layer_spans(folder, members, tuple(layer.weight.shape))
        plans.append(LayerPlan(prefix, layer, g, spans, why))
    return plans


class _Attach:
    """What attach() does to each layer, and its counts for the log line."""

    def __init__(self, folder_id: str, mode: str, device: Optional[torch.device] = None):
        self.folder_id = folder_id
        self.mode = mode
        self.device = device or torch.device("cuda", torch.cuda.current_device())
        self.groups: Dict[int, coded.GpuGroup] = {}  # id -> a group some layer decodes from
        self.exec_groups: Dict[Tuple[int, int], Tuple[torch.Tensor, list, List[int]]] = {}
        self.exec_bytes = 0
        self.n_coded = self.n_exec = self.n_plain = self.bf16_bytes = 0
        self.rows_bf16 = self.rows_coded = 0  # the coded input embeddings' bytes

    def code(self, plan: LayerPlan, folder: _capi.Model, g: int, spans: List[Tuple[int, int]],
             by_group: Dict[int, coded.GpuGroup]) -> bool:
        """Serves the layer from group `g` of `folder` in the loader's mode, if its members
        decode to exactly its weight."""
        if self.mode in exec_mode.LAYOUTS and self.try_exec(plan, folder, g, spans,
                                                 by_group.get((id(folder), g))):
            return True
        if (id(folder), g) not in by_group:
            by_group[(id(folder), g)] = coded.GpuGroup(folder, g, self.device)
        return self.try_spans(plan, by_group[(id(folder), g)], spans)

    def _accept(self, plan: LayerPlan, packed: torch.Tensor) -> None:
        """The layer runs from `packed` (the coded bytes it decodes or multiplies from, on the
        GPU) from now on: its BF16 weight is dropped. `packed` is kept as the layer's
        `weight_packed`, where vLLM's LoRA layers look for the device of a layer whose weight
        is packed (vllm.lora.layers.utils._get_lora_device), as for compressed-tensors'."""
        plan.layer._parameters.pop("weight")
        plan.layer.weight_packed = packed
        plan.layer.df11_loaded = True

    def try_spans(self, plan: LayerPlan, group: coded.GpuGroup,
                  spans: List[Tuple[int, int]]) -> bool:
        """Codes the layer from spans of `group` if they decode to exactly its weight."""
        weight = plan.layer.weight
        shape = tuple(weight.shape)
        cw = coded.SpansWeight(group, spans, shape)
        got = cw.decode()
        group.check()  # Df11Error naming the file, group and block
        if not _same_bits(got, weight.data.to(self.device)):
            return False
        key = coded.weight_key(self.folder_id, plan.prefix)
        coded.register_weight(key, cw)
        plan.layer.df11_key = key
        self._accept(plan, group.coded)
        self.groups[id(group)] = group
        self.n_coded += 1
        self.bf16_bytes += 2 * shape[0] * shape[1]
        return True

    def try_exec(self, plan: LayerPlan, folder: _capi.Model, g: int,
                 spans: List[Tuple[int, int]], uploaded: Optional[coded.GpuGroup]) -> bool:
        """Serves the layer from the execution layout of group `g`'s members that its spans
        name (the group transcoded once, from `uploaded` where the load has it on the GPU),
        if those decode to exactly its weight."""
        at = (id(folder), g)
        if at not in self.exec_groups:
            blob, mats, _ = exec_mode.transcode_group(
                folder, g, self.device, uploaded.parts if uploaded is not None else None,
                exec_mode.LAYOUTS[self.mode])
            self.exec_groups[at] = (blob, mats, [m.rows * m.cols for m in mats])
            self.exec_bytes += blob.numel()
        blob, mats, sizes = self.exec_groups[at]
        picked = member_spans(sizes, spans)
        if picked is None:
            logger.warning("df11: layer '%s' is not whole members of its group: decode mode",
                           plan.prefix)
            return False
        what = f"{folder.group_file(g)}: group '{folder.group_name(g)}': '{plan.prefix}'"
        return self.try_exec_weight(plan, exec_mode.ExecWeight(blob, [mats[k] for k in picked],
                                                               what))

    def try_exec_weight(self, plan: LayerPlan, ew: exec_mode.ExecWeight) -> bool:
        """Serves the layer from `ew` if it decodes to exactly the layer's weight."""
        weight = plan.layer.weight
        if ew.shape != tuple(weight.shape):
            return False
        got = ew.decode()
        ew.check()
        if not _same_bits(got, weight.data.to(self.device)):
            return False
        key = coded.weight_key(self.folder_id, plan.prefix, "exec")
        exec_mode.register_weight(key, ew)
        plan.layer.df11_exec_key = key
        self._accept(plan, ew.blob)
        self.n_exec += 1
        self.bf16_bytes += 2 * ew.rows * ew.cols
        return True

    def keep_bf16(self, plan: LayerPlan, why: str) -> None:
        """The layer keeps the weight vLLM's loader built, uncoded, on the GPU."""
        logger.warning("df11: layer '%s' runs from BF16 weights: %s", plan.prefix, why)
        plan.layer.weight.data = plan.layer.weight.data.to(self.device)
        plan.layer.df11_loaded = True
        self.n_plain += 1


def attach(model: torch.nn.Module, folder: _capi.Model, folder_id: str,
           mode: str = "decode", uploaded: Optional[Dict[int, coded.GpuGroup]] = None,
           state: Optional[_Attach] = None, tied: bool = False, lora: bool = False) -> None:
    """Step 2 of the module's docstring, on torch's current CUDA device, in `mode` ("decode":
    spans of the coded groups, decoded per call; "exec" / "compact": that layout, transcoded from
    the groups here). A layer the folder's groups cannot give as it is (a tensor-parallel
    rank's slice, a weight vLLM's loader transformed, members spread over groups) is coded
    again from the tensor vLLM built: on the GPU where the tensor is there, in decode mode
    and in the execution modes (_attach_on_gpu), else through
    df11.compress into temporary folders, a batch of
    about 1 GiB each (coded.encode_batches). `uploaded`: groups of
    `folder` already on the GPU, by index. `state`: the load's _Attach, whose layers a
    layer-wise load (LayerwiseCoder) coded already; those are left as they are. Then the input
    embeddings are coded (_code_embeddings), unless `tied` (the model's config ties its head to
    its input embedding) or `lora` (the engine serves LoRA adapters: vLLM's LoRA layer of an
    input embedding reads its weight)."""
    state = state or _Attach(folder_id, mode)
    by_group: Dict[Tuple[int, int], coded.GpuGroup] = {
        (id(folder), g): group for g, group in (uploaded or {}).items()}
    again: List[Tuple[LayerPlan, str]] = []
    for plan in plan_layers(model, folder):
        if plan.group is None:
            again.append((plan, plan.why))
        elif not state.code(plan, folder, plan.group, plan.spans, by_group):
            again.append((plan, "its members decode to other values than vLLM's loader made"))
    if again:
        _attach_encoded(state, again, by_group)
    del by_group  # groups no layer decodes from are freed
    split = _code_sparse_groups_apart(model, state)
    if split:
        logger.info("df11: %d Linear layers coded again on their own: their groups hold mostly "
                    "weights no Linear layer uses (an MoE block's experts, which are coded apart)",
                    split)
    embeddings = _code_embeddings(model, state, tied, lora)
    if embeddings:
        logger.info("df11: %d input embedding%s coded on the GPU (%.3f GiB of BF16 for %.3f "
                    "GiB), each lookup decoding the rows its ids name", embeddings,
                    "s" if embeddings > 1 else "", state.rows_bf16 / 2**30,
                    state.rows_coded / 2**30)
    chains = chain_layers(model)
    coded_bytes = sum(g.nbytes for g in state.groups.values())
    state.exec_groups.clear()  # the blobs stay alive through the layers' ExecWeights
    torch.cuda.empty_cache()
    logger.info("df11: %d Linear layers decode from %d coded groups (%.3f GiB on the GPU), "
                "%d run from the %s (%.3f GiB); %.3f GiB of BF16 in all; %d run "
                "from BF16", state.n_coded, len(state.groups), coded_bytes / 2**30,
                state.n_exec, exec_mode.LAYOUTS.get(state.mode, exec_mode.EXEC).title,
                state.exec_bytes / 2**30, state.bf16_bytes / 2**30, state.n_plain)
    if state.n_exec and state.mode in exec_mode.LAYOUTS:
        limit, source = exec_mode.switch_source(state.mode, torch.cuda.current_device())
        logger.info("df11: the %s's fused GEMM serves up to %d tokens per step, decode + "
                    "F.linear above (%s; `python -m df11.tune` measures this GPU's)",
                    exec_mode.LAYOUTS[state.mode].title, limit, source)
    if chains:
        logger.info("df11: %d decoder layers decode the weights of %s in one launch",
                    chains, ", ".join(CHAIN[:chain_length()]))
    moe = vllm_moe.summary(model)
    if moe:
        logger.info("df11: %s", moe)


EMBEDDING_CHECK_ROWS = 8192  # rows decoded and compared per step of an embedding's check


def _code_embeddings(model: torch.nn.Module, state: _Attach, tied: bool,
                     lora: bool = False) -> int:
    """Each input embedding served by DF11EmbeddingMethod whose weight nothing else reads (not
    `tied`, the model's config saying that its head is its input embedding; no ParallelLMHead
    holding the same tensor) is coded on the GPU (coded.GpuGroup.encoded), every row decoded
    and compared with the weight vLLM's loader built, and its lookups served from the group
    (DF11EmbeddingMethod.embedding); its BF16 weight is dropped. One that cannot be coded, or
    that decodes to other values, keeps its BF16 weight, with a warning. With `lora` (the
    engine serves LoRA adapters) none is coded: vLLM wraps each input embedding in a LoRA layer
    that reads its weight. Returns how many were coded."""
    if tied or not _tools.has_cuda_encoder():
        return 0
    if lora:
        logger.info("df11: the input embeddings keep their BF16 weights: vLLM's LoRA layers "
                    "(--enable-lora) read them")
        return 0
    heads = {id(m._parameters.get("weight")) for m in model.modules()
             if isinstance(m, ParallelLMHead)}
    n = 0
    for prefix, layer in model.named_modules():
        if not isinstance(getattr(layer, "quant_method", None), DF11EmbeddingMethod):
            continue
        weight = layer._parameters.get("weight")
        if weight is None or getattr(layer, "df11_rows_key", None) is not None:
            continue
        if id(weight) in heads:
            logger.info("df11: '%s' keeps its BF16 weight: the head reads it", prefix)
            continue
        rows = _embedding_rows(prefix, weight.data.to(state.device), state)
        if isinstance(rows, str):
            logger.warning("df11: input embedding '%s' keeps its BF16 weight: %s", prefix, rows)
            continue
        # A key stable across processes: vLLM's compile cache keeps it in the graph.
        layer.df11_rows_key = _ops.register_at(
            coded.weight_key(state.folder_id, prefix, "rows"), rows)
        layer._parameters.pop("weight")
        state.rows_bf16 += 2 * weight.numel()
        state.rows_coded += rows.group.nbytes
        n += 1
    return n


def _embedding_rows(prefix: str, weight: torch.Tensor, state: _Attach):
    """The rows decoder of `weight` (an embedding's, BF16 on the GPU) coded there, with the
    group it decodes from as its `group`, if every row decodes to exactly the weight's; else
    why not (a str)."""
    what = f"{state.folder_id}: '{prefix}' (coded on the GPU)"
    name = f"{prefix}.weight"
    try:
        group = coded.GpuGroup.encoded(weight, name, what)
    except _capi.Df11Error as e:
        if e.status != "uncodable":
            raise
        return "df11's encoder stores it raw"
    rows = RowsDecoder(group.plan, name, weight.shape[1], state.device, DeviceLock(state.device))
    rows.group = group  # the coded bytes the plan reads
    total = weight.shape[0]
    for start in range(0, total, EMBEDDING_CHECK_ROWS):
        end = min(total, start + EMBEDDING_CHECK_ROWS)
        got = rows.lookup(torch.arange(start, end, device=state.device))
        if state.device.type == "cuda":
            torch.cuda.current_stream(state.device).synchronize()
        rows.check()  # Df11Error naming the group, if its stream does not decode
        if not _same_bits(got, weight[start:end]):
            return f"coded, rows {start}..{end - 1} decode to other values"
    return rows


def _code_sparse_groups_apart(model: torch.nn.Module, state: _Attach) -> int:
    """The Linear layers served from a coded group (a DF11 group, or its execution-layout blob)
    of which they use less than half, each coded again on its own from its decoded weight, so
    that the group is freed: an MoE block's group is mostly its experts, which
    df11.vllm_moe codes apart, and would otherwise stay on the GPU beside them. A group whose
    layers cannot all be coded so is kept. Returns how many layers were coded again."""
    if not _tools.has_cuda_encoder() and state.mode not in exec_mode.LAYOUTS:
        return 0
    users: Dict[int, List[Tuple[str, torch.nn.Module, int, Any]]] = {}
    for prefix, layer in model.named_modules():
        key = getattr(layer, "df11_key", None)
        w = coded.registered_weight(key) if key is not None else None
        if w is not None and getattr(w.group, "n_elements", 0):
            users.setdefault(id(w.group), []).append((prefix, layer, key, w))
        key = getattr(layer, "df11_exec_key", None)
        ew = exec_mode._WEIGHTS.get(key) if key is not None else None
        if ew is not None:
            users.setdefault(id(ew.blob), []).append((prefix, layer, key, ew))
    n = 0
    for at, layers in users.items():
        first = layers[0][3]
        if isinstance(first, coded.SpansWeight):
            used, total = sum(c for *_, w in layers for _, c in w.spans), first.group.n_elements
        else:
            used, total = sum(ew.nbytes for *_, ew in layers), first.blob.numel()
        if 2 * used >= total:
            continue
        made = []
        for prefix, layer, key, w in layers:
            again = _code_apart(prefix, w, state)
            if again is None:
                break
            made.append((key, again))
        if len(made) < len(layers):
            continue
        for key, again in made:
            if isinstance(again, coded.SpansWeight):
                coded.register_weight(key, again)
                state.groups[id(again.group)] = again.group
            else:
                exec_mode.register_weight(key, again)
                state.exec_bytes += again.blob.numel()
        if isinstance(first, coded.SpansWeight):
            state.groups.pop(at, None)
        else:
            state.exec_bytes -= first.blob.numel()
        n += len(made)
    return n


def _code_apart(prefix: str, weight: Any, state: _Attach) -> Any:
    """`weight` (a SpansWeight or an ExecWeight) decoded and coded again alone, as the same
    kind, if it decodes back to the same bits; else None."""
    what = f"{state.folder_id}: '{prefix}' (coded again on the GPU)"
    bf16 = weight.decode()
    if isinstance(weight, coded.SpansWeight):
        weight.group.check()
        try:
            group = coded.GpuGroup.encoded(bf16, f"{prefix}.weight", what)
        except _capi.Df11Error as e:
            if e.status != "uncodable":
                raise
            return None
        again = coded.SpansWeight(group, [(0, bf16.numel())], weight.shape)
        got = again.decode()
        group.check()
    else:
        weight.check()
        try:
            again = exec_mode.ExecWeight(*exec_mode.pack_bf16([bf16], what, weight.layout), what)
        except _capi.Df11Error:
            return None
        got = again.decode()
        again.check()
    return again if _same_bits(got, bf16) else None


# The decode-mode Linear layers of one decoder layer (their prefixes' ends, in the order a
# forward pass calls them) whose weights can decode in one launch (coded.SpansChain): after the
# attention, the output projection and the MLP's, with no other coded layer between them.
CHAIN = ("self_attn.o_proj", "mlp.gate_up_proj", "mlp.down_proj")
# Unset or "2" (the default): chain o_proj with gate_up_proj; "3": all of CHAIN; "0": a launch
# per weight.
CHAINS_ENV = "DF11_VLLM_DECODE_CHAINS"
CHAIN_LENGTHS = {"": 2, "0": 0, "2": 2, "3": 3}


def chain_length() -> int:
    """How many of CHAIN's layers DF11_VLLM_DECODE_CHAINS chains (0: none)."""
    via = os.environ.get(CHAINS_ENV, "")
    if via not in CHAIN_LENGTHS:
        raise ValueError(f"df11: {CHAINS_ENV}={via!r}: expected '0', '2' or '3'")
    return CHAIN_LENGTHS[via]


def chain_layers(model: torch.nn.Module) -> int:
    """Makes a coded.SpansChain of the first chain_length() of each decoder layer's CHAIN
    layers where all are served in decode mode from spans of one group (and fit one launch);
    returns how many. Their matmuls and outputs stay as they are; a step makes one launch where
    it made two or three. By default o_proj with gate_up_proj: both are freed before the MLP's
    activations, whose peak in vLLM's profile run sizes the KV cache, so the KV cache stays as
    it is (on an H200, Llama-3.1-8B shapes: 0.97x the latency at batch 1, 1.02x the
    throughput). With down_proj too ("3"): 0.93x and 1.05x, but its weight lives through that
    peak, and the KV cache was 3% smaller (docs/running/vllm.md)."""
    length = chain_length()
    if length == 0:
        return 0
    members = CHAIN[:length]
    weights: Dict[str, coded.SpansWeight] = {}
    for prefix, layer in model.named_modules():
        key = getattr(layer, "df11_key", None)
        weight = coded.registered_weight(key) if key is not None else None
        if weight is not None:
            weights[prefix] = weight
    n = 0
    for prefix in weights:
        if not (prefix == members[0] or prefix.endswith("." + members[0])):
            continue
        base = prefix[:len(prefix) - len(members[0])]
        chain = [weights.get(base + suffix) for suffix in members]
        if None not in chain and coded.SpansChain.eligible(chain) is None:
            coded.SpansChain(chain)
            n += 1
    return n


def _attach_on_gpu(state: _Attach, names: Dict[str, Tuple[LayerPlan, str]]
                   ) -> Dict[str, Tuple[LayerPlan, str]]:
    """Each layer whose weight vLLM's loader built on the GPU is coded again there, decoded and
    compared as every layer is, and served from what it was coded to: in decode mode a group
    (coded.GpuGroup.encoded: df11's GPU encoder, the CPU encoder's bytes), in the execution
    modes their layout packed straight from the BF16 weight (exec_mode.pack_bf16: the blob a
    DF11 group of the same weight transcodes to). Every layer is coded before any BF16 weight is dropped,
    so that the coded memory is not carved from the weights' freed blocks (which torch's
    allocator could then not hand back). Returns the layers left (host weights)."""
    t0 = time.perf_counter()
    decode = state.mode not in exec_mode.LAYOUTS
    layout = exec_mode.LAYOUTS.get(state.mode, exec_mode.EXEC)
    left: Dict[str, Tuple[LayerPlan, str]] = {}
    made: List[Tuple[LayerPlan, str, Any]] = []
    nbytes = 0
    together = 0
    if decode:
        on_gpu = {name: plan for name, (plan, _) in names.items()
                  if plan.layer.weight.device.type == "cuda"}
        for members in chain_sets(on_gpu):
            group = _encoded_together([on_gpu[n] for n in members], state)
            if group is None:
                continue
            offset = 0
            for n in members:
                plan, why = names.pop(n)
                numel = plan.layer.weight.numel()
                made.append((plan, why, (group, [(offset, numel)])))
                offset += numel
                nbytes += 2 * numel
            together += 1
    for name, (plan, why) in names.items():
        weight = plan.layer.weight.data
        if weight.device.type != "cuda":
            left[name] = (plan, why)
            continue
        try:
            if decode:
                group = coded.GpuGroup.encoded(
                    weight, name, f"{state.folder_id} (coded again on the GPU)")
                made.append((plan, why, (group, [(0, weight.numel())])))
            else:
                what = f"{state.folder_id}: '{plan.prefix}' (packed on the GPU)"
                made.append((plan, why, exec_mode.ExecWeight(
                    *exec_mode.pack_bf16([weight], what, layout), what)))
        except _capi.Df11Error as e:
            if e.status != "uncodable":
                raise
            state.keep_bf16(plan, why + ("; df11's encoder stores it raw" if decode else
                                         "; the execution layout cannot hold it"))
            continue
        nbytes += 2 * weight.numel()
    for plan, why, it in made:
        if decode:
            served = state.try_spans(plan, *it)
        else:
            served = state.try_exec_weight(plan, it)
            state.exec_bytes += it.blob.numel() if served else 0
        if not served:
            state.keep_bf16(plan, why + "; coded again, it decodes to other values")
    torch.cuda.synchronize()
    logger.info("df11: %d Linear layers %s on the GPU (%.3f GiB of BF16), %s, decoded and "
                "compared in %.2f s", len(made),
                "coded again" if decode else f"packed into the {layout.title}",
                nbytes / 2**30, "encoded" if decode else "from their BF16 weights",
                time.perf_counter() - t0)
    if together:
        logger.info("df11: %d decoder layers' %s coded as one group each, to decode in one "
                    "launch", together, ", ".join(CHAIN[:chain_length()]))
    return left


def chain_sets(names: Dict[str, LayerPlan]) -> List[List[str]]:
    """The weights among `names` (a weight's name: its layer's plan) that decode mode chains
    (chain_layers: the first chain_length() of CHAIN in one decoder layer), as lists of names in
    CHAIN's order, each list complete: what a load that codes these weights itself (a
    tensor-parallel rank's slices) codes as one group, so that they can form a chain."""
    length = chain_length()
    if length < 2:
        return []
    members = CHAIN[:length]
    by_prefix = {plan.prefix: name for name, plan in names.items()}
    sets = []
    for prefix, name in by_prefix.items():
        if not (prefix == members[0] or prefix.endswith("." + members[0])):
            continue
        base = prefix[:len(prefix) - len(members[0])]
        found = [by_prefix.get(base + suffix) for suffix in members]
        if None in found:
            continue
        plans = [names[n] for n in found]
        weights = [p.layer.weight for p in plans]
        if any(w.dtype != torch.bfloat16 or w.device != weights[0].device for w in weights):
            continue
        if any(2 * w.numel() % coded.ALIGN_BYTES for w in weights[:-1]):
            continue
        sets.append(found)
    return sets


def _encoded_together(plans: List[LayerPlan], state: _Attach) -> Optional[coded.GpuGroup]:
    """The weights of `plans` (BF16, on one GPU) coded as one group, one after another in the
    plans' order; None where the encoder cannot code them (an Inf or NaN), which then codes each
    alone and reports it."""
    joined = torch.cat([p.layer.weight.data.reshape(-1) for p in plans])
    name = "+".join(f"{p.prefix}.weight" for p in plans)
    try:
        return coded.GpuGroup.encoded(joined, name,
                                      f"{state.folder_id} (coded again on the GPU)")
    except _capi.Df11Error as e:
        if e.status != "uncodable":
            raise
        return None


def _attach_encoded(state: _Attach, layers: List[Tuple[LayerPlan, str]],
                    by_group: Dict[Tuple[int, int], coded.GpuGroup]) -> None:
    import tempfile
    if not _tools.available():
        for plan, why in layers:
            state.keep_bf16(plan, f"{why}; df11's encoder (libdf11-tools) is not installed")
        return
    names = {}
    for plan, why in layers:
        if plan.layer.weight.dtype == torch.bfloat16:
            names[f"{plan.prefix}.weight"] = (plan, why)
        else:
            state.keep_bf16(plan, f"{why}; its weight is {plan.layer.weight.dtype}, not BF16")
    on_gpu = any(plan.layer.weight.device.type == "cuda" for plan, _ in names.values())
    if on_gpu and (state.mode in exec_mode.LAYOUTS or _tools.has_cuda_encoder()):
        names = _attach_on_gpu(state, names)
    if not names:
        return
    nbytes = sum(plan.layer.weight.numel() * 2 for plan, _ in names.values())
    t0, cpu0 = time.perf_counter(), time.process_time()
    with tempfile.TemporaryDirectory(prefix="df11-vllm-", dir=coded.scratch_dir(nbytes)) as tmp:
        # The weights where vLLM's loader put them, coded a batch at a time (a GPU's through
        # pinned host buffers, the next batch's copy beside this one's encode).
        threads = _encoder_threads()
        folders = coded.encode_batches(
            {name: plan.layer.weight.data for name, (plan, _) in names.items()}, tmp,
            threads=threads)
        t1, cpu1 = time.perf_counter(), time.process_time()
        try:
            for folder, batch in folders:
                for name in batch:
                    plan, why = names[name]
                    t = folder.find_tensor(name)
                    found = None if t is None else coded.tensor_spans(folder, t)
                    if found is None:
                        state.keep_bf16(plan, why + "; df11's encoder stores it raw")
                    elif not state.code(plan, folder, found[0], found[1], by_group):
                        state.keep_bf16(plan, why + "; coded again, it decodes to other values")
        finally:
            for folder, _ in folders:
                folder.close()
        logger.info("df11: %d Linear layers coded again (%.3f GiB of BF16, in %s, %d batches): "
                    "copied and encoded %.2f s (%.1f CPU-s, %d cores allowed, %s threads), "
                    "uploaded, decoded and compared %.2f s", len(names), nbytes / 2**30,
                    os.path.dirname(tmp), len(folders), t1 - t0, cpu1 - cpu0,
                    len(os.sched_getaffinity(0)), threads or "all", time.perf_counter() - t1)


def _encoder_threads() -> int:
    """The encoder's threads in this rank: its share of the cores it may use, where vLLM runs
    several ranks on this host (they code their slices at the same time); 0 (all) where the
    ranks per host are unknown."""
    try:
        from vllm.distributed.parallel_state import get_node_count, get_world_group
        local = get_world_group().world_size // max(1, get_node_count())
    except Exception:  # no vLLM process group (a caller outside vLLM's workers)
        return 0
    if local <= 1:
        return 0
    return max(1, len(os.sched_getaffinity(0)) // local)


class DF11HFConfigParser(HFConfigParser):
    """vLLM's "hf" config parser, which marks a DF11 folder's config as quantized with "df11"
    (df11.vllm.quantization_config) and leaves every other config as it is."""

    def parse(self, model, trust_remote_code, revision=None, code_revision=None, **kwargs):
        try:
            config_dict, config = super().parse(model, trust_remote_code, revision=revision,
                                                code_revision=code_revision, **kwargs)
        except Exception as e:
            # The dfloat11 encoder's single-file folder names no model: say what to pass.
            try:
                raw, _ = PretrainedConfig.get_config_dict(
                    model, revision=revision,
                    local_files_only=huggingface_hub.constants.HF_HUB_OFFLINE)
            except Exception:
                raise e from None
            if lacks_model_config(raw):
                raise ValueError(single_file_hint(str(model))) from e
            raise
        quant = quantization_config(config_dict)
        if quant is not None:
            config_dict = dict(config_dict, quantization_config=quant)
            config.quantization_config = quant
        return config_dict, config


_registered = False


def register() -> None:
    global _registered
    if _registered:
        return
    _registered = True
    register_weight_loader_v2_supported_method(DF11LinearMethod)
    register_quantization_config(QUANT_METHOD)(DF11Config)
    register_model_loader(QUANT_METHOD)(DF11ModelLoader)
    # The default load format and config format: DF11 folders then need no flag. Both classes
    # defer to vLLM's own for every model that is not DF11.
    register_model_loader("auto")(DF11ModelLoader)
    register_config_parser("hf")(DF11HFConfigParser)
