"""Mixture-of-experts layers in vLLM (imported by df11.vllm_plugin, only where vLLM is installed).

vLLM's fused MoE layers (RoutedExperts: every expert's gate/up weights stacked in `w13_weight`
(experts, 2 x intermediate, hidden), their down weights in `w2_weight` (experts, hidden,
intermediate)) are not Linear layers, so DF11LinearMethod never sees them. DF11MoEMethod is
vLLM's own unquantized method (UnquantizedFusedMoEMethod: the same weights, the same kernel
and its choice of tile shapes) with the two weights kept DF11-coded on the GPU:

  - Load. The weights are created on the meta device and filled through vLLM's layer-wise
    loading (as its online FP8 MoE method does): once vLLM's loader has written every expert
    of a layer (this rank's slices of them), process_weights_after_loading codes each of the
    two tensors on the GPU as one group with a row per expert (coded.GpuGroup.encoded, df11's
    GPU encoder), decodes it back and compares it bit for bit with the tensor, and drops the
    tensor. So no more than one layer's experts exist in BF16 at a time, whatever the
    parallelism, and a layer that cannot be coded (an Inf or NaN, a tensor of 2^32 weights or
    more, no GPU encoder) keeps its BF16 weights, with a warning.
  - Forward. The layers of a device share one BF16 buffer per weight kind, of the largest
    layer's shape; a layer's `w13_weight` and `w2_weight` are views of them. Just before the
    experts run (apply: vLLM has routed the step's tokens, `topk_ids` on the GPU) the experts
    that the step routed to are decoded into the buffers (coded.ExpertsWeight: one launch per
    weight, the routing read on the GPU, the launch sized by the step's token count:
    ExpertsWeight.launch_rows), and vLLM's unquantized apply runs on them; the
    experts no token chose are neither decoded nor read. A step at batch 1 of a model with 128
    experts and top 8 decodes 8 of them. Where the routing is not at hand (a monolithic
    kernel, or an expert map for expert parallelism) every expert is decoded.

The experts' kernel reads the same bits as vLLM serving the BF16 model, with the same shapes,
so its outputs are the same. The layer runs inside vLLM's opaque MoE op (torch.compile does not
trace into it), so the decodes are captured in vLLM's CUDA graphs with the rest of the op.
"""
from __future__ import annotations

import weakref
from typing import Dict, List, Optional, Tuple

import torch

from vllm.logger import init_logger
from vllm.model_executor.layers.fused_moe.unquantized_fused_moe_method import (
    UnquantizedFusedMoEMethod)
from vllm.model_executor.model_loader.reload.layerwise import initialize_online_processing

from . import _capi, _tools, coded

logger = init_logger("vllm.df11")

KINDS = ("w13_weight", "w2_weight")


class ExpertBuffers:
    """One BF16 buffer per (device, weight kind) that every coded MoE layer of that device
    decodes its experts into; each layer's weight is a view of it, of the layer's shape. A
    layer larger than the buffer makes a larger one, and every layer already attached is
    pointed at it (all of this at load, before any CUDA graph is captured)."""

    def __init__(self):
        self._buffers: Dict[Tuple[torch.device, str], torch.Tensor] = {}
        # Weak: a model dropped (an engine shut down in a process that builds another) is freed.
        self._layers: Dict[Tuple[torch.device, str], List[weakref.ref]] = {}

    def layers(self, device: torch.device, kind: str) -> List[torch.nn.Module]:
        """The live layers attached to the buffer of (`device`, `kind`)."""
        return [m for m in (r() for r in self._layers.get((device, kind), [])) if m is not None]

    def view(self, layer: torch.nn.Module, kind: str, shape: Tuple[int, ...],
             device: torch.device) -> torch.Tensor:
        """`layer`'s view of the buffer for `kind` (growing it if need be)."""
        at = (device, kind)
        numel = 1
        for n in shape:
            numel *= n
        buf = self._buffers.get(at)
        if buf is None or buf.numel() < numel:
            self._buffers.pop(at, None)
            buf = torch.empty(numel, dtype=torch.bfloat16, device=device)
            self._buffers[at] = buf
            for other in self.layers(device, kind):
                _set(other, kind, buf[:getattr(other, kind).numel()].view(
                    getattr(other, kind).shape))
        self._layers[at] = [weakref.ref(m) for m in self.layers(device, kind)]
        self._layers[at].append(weakref.ref(layer))
        return buf[:numel].view(shape)

    def forget(self, layer: torch.nn.Module) -> None:
        """`layer` no longer decodes into the buffers (it keeps BF16 weights of its own)."""
        for at, refs in self._layers.items():
            self._layers[at] = [r for r in refs if r() is not None and r() is not layer]

    def nbytes(self) -> int:
        return sum(2 * b.numel() for b in self._buffers.values())


BUFFERS = ExpertBuffers()


def _set(layer: torch.nn.Module, kind: str, tensor: torch.Tensor) -> None:
    """The layer's weight `kind` becomes `tensor`, a plain attribute (not a parameter: vLLM's
    post-load steps then neither move nor replace it)."""
    layer._parameters.pop(kind, None)
    object.__setattr__(layer, kind, tensor)


class DF11MoEMethod(UnquantizedFusedMoEMethod):
    """vLLM's unquantized MoE method with its experts' weights DF11-coded (the module's
    docstring)."""

    uses_meta_device = True  # vLLM's loader then finalizes the layer-wise loads

    @property
    def supports_eplb(self) -> bool:
        # vLLM's expert load balancing moves experts' weights between ranks at run time; these
        # are coded, so vLLM refuses --enable-eplb with this method, naming it.
        return False

    def create_weights(self, layer, num_experts, hidden_size, intermediate_size_per_partition,
                       params_dtype, **extra_weight_attrs):
        with torch.device("meta"):
            super().create_weights(layer, num_experts, hidden_size,
                                   intermediate_size_per_partition, params_dtype,
                                   **extra_weight_attrs)
        layer.df11_experts = None
        initialize_online_processing(layer)

    def process_weights_after_loading(self, layer) -> None:
        if getattr(layer, "df11_experts", None) is not None or getattr(layer, "df11_done", False):
            return  # vLLM calls it again after the layer-wise load
        super().process_weights_after_loading(layer)
        layer.df11_done = True
        code_layer(layer)

    def apply(self, layer, x, topk_weights, topk_ids, shared_experts, shared_experts_input):
        decode_experts(layer, topk_ids)
        return super().apply(layer, x, topk_weights, topk_ids, shared_experts,
                             shared_experts_input)

    def apply_monolithic(self, layer, x, router_logits, input_ids=None):
        decode_experts(layer, None)
        return super().apply_monolithic(layer, x, router_logits, input_ids)


def _name(layer: torch.nn.Module) -> str:
    return str(getattr(layer, "layer_name", None) or getattr(layer, "prefix", None) or "experts")


def code_layer(layer: torch.nn.Module) -> bool:
    """Codes the layer's two weights on the GPU (the module's docstring); True if it then runs
    from them. Where it cannot, the layer keeps its BF16 weights, on the GPU, with a warning."""
    name = _name(layer)
    weights = {kind: getattr(layer, kind).data for kind in KINDS}
    why = None
    if not torch.cuda.is_available():
        why = "no GPU"
    elif not _tools.has_cuda_encoder():
        why = "df11's GPU encoder (libdf11-tools built with CUDA) is not installed"
    elif any(w.dtype != torch.bfloat16 for w in weights.values()):
        why = "its weights are not BF16"
    if why is not None:
        return _keep(layer, weights, why)
    device = torch.device("cuda", torch.cuda.current_device())
    top_k = int(getattr(layer, "top_k", 0) or 8)
    made = {}
    for kind, w in weights.items():
        w = w.to(device).contiguous()
        what = f"'{name}' (experts coded on the GPU)"
        try:
            group = coded.GpuGroup.encoded(w, f"{name}.{kind}", what)
            made[kind] = (coded.ExpertsWeight(group, tuple(w.shape), top_k), w)
        except (_capi.Df11Error, ValueError) as e:
            if isinstance(e, _capi.Df11Error) and e.status not in ("uncodable",
                                                                   "invalid_argument"):
                raise
            return _keep(layer, weights, f"df11's encoder cannot code its {kind}: {e}")
    for kind, (experts, w) in made.items():
        out = BUFFERS.view(layer, kind, tuple(w.shape), device)
        experts.decode_into(out)
        experts.group.check()  # Df11Error naming the layer and block
        if not torch.equal(out.view(torch.int16), w.view(torch.int16)):
            return _keep(layer, weights, f"its {kind} decodes to other values once coded")
        _set(layer, kind, out)
    layer.df11_experts = {kind: experts for kind, (experts, _) in made.items()}
    layer.df11_num_experts = next(iter(made.values()))[0].experts
    return True


def _keep(layer: torch.nn.Module, weights: Dict[str, torch.Tensor], why: str) -> bool:
    BUFFERS.forget(layer)
    logger.warning("df11: MoE layer '%s' runs from BF16 weights: %s", _name(layer), why)
    if torch.cuda.is_available():
        for kind, w in weights.items():
            _set(layer, kind, w.to(torch.device("cuda", torch.cuda.current_device())))
    return False


def decode_experts(layer: torch.nn.Module, topk_ids: Optional[torch.Tensor]) -> None:
    """Decodes the layer's experts that `topk_ids` names (all of them without it, or where the
    layer maps experts for expert parallelism) into its weights' buffers."""
    experts = getattr(layer, "df11_experts", None)
    if experts is None:
        return
    mask, picks = None, None
    if topk_ids is not None and getattr(layer, "expert_map", None) is None:
        mask = coded.ExpertsWeight.routed_mask(topk_ids, layer.df11_num_experts)
        picks = topk_ids.numel()  # the step's tokens (as captured) times its top k
    for kind, weight in experts.items():
        weight.decode_into(getattr(layer, kind), mask, picks)


def summary(model: torch.nn.Module) -> str:
    """A line on the model's MoE layers served coded ("" where it has none so far)."""
    layers = [m for m in model.modules() if isinstance(getattr(m, "quant_method", None),
                                                       DF11MoEMethod)]
    if not layers:
        return ""
    coded_layers = [m for m in layers if getattr(m, "df11_experts", None)]
    nbytes = sum(w.group.nbytes for m in coded_layers for w in m.df11_experts.values())
    return (f"{len(coded_layers)} of {len(layers)} MoE layers' experts coded on the GPU "
            f"({nbytes / 2**30:.3f} GiB), decoded as routed into {BUFFERS.nbytes() / 2**30:.3f} "
            "GiB of buffers")
