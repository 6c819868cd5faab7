"""Greedy generation with a static KV cache, one decode step captured in a CUDA graph.

Works for any transformers causal LM (BF16 or DF11): the DF11 model's decodes are kernel
launches on torch's stream (the body of torch.ops.df11.decode_into), so the capture records
them with the matmuls, and each replay runs the whole step (decodes included) with no Python,
no allocation and no host synchronisation. `cuda_graph=False` runs the same steps eagerly,
the reference the graph's tokens must equal.
"""
from __future__ import annotations

import torch


def _cache_counters(cache):
    """The device tensors a cache's layers advance on every update (their write position)."""
    out = []
    for layer in getattr(cache, "layers", []) or []:
        for name in ("cumulative_length", "_cumulative_length"):
            t = getattr(layer, name, None)
            if isinstance(t, torch.Tensor):
                out.append(t)
    return out


@torch.no_grad()
def greedy_static(model, input_ids: torch.Tensor, max_new_tokens: int, cuda_graph: bool = True,
                  warmup: int = 2, forced: torch.Tensor = None, step_logits: list = None):
    """Returns (new tokens [batch, max_new_tokens], the step's callable for timing).

    forced [batch, max_new_tokens - 1]: feed these tokens instead of the argmax (teacher
    forcing, for comparing two models step by step); step_logits: a list that receives each
    step's last-position logits (a copy)."""
    from transformers import StaticCache
    device = input_ids.device
    batch, length = input_ids.shape
    cache = StaticCache(config=model.config, max_cache_len=length + max_new_tokens)
    positions = torch.arange(length, device=device)
    logits = model(input_ids=input_ids, past_key_values=cache, cache_position=positions,
                   use_cache=True).logits
    token = logits[:, -1].argmax(-1, keepdim=True)
    static_token = token.clone()
    static_position = torch.tensor([length], device=device)

    def forward():
        return model(input_ids=static_token, past_key_values=cache,
                     cache_position=static_position, use_cache=True).logits

    # Warm-up (as torch.cuda.graphs recommends, on a side stream for a capture): it writes the
    # cache at the first new position, which the first real step rewrites with the same
    # values. Cache layers that count the tokens they hold on the device (transformers 5's
    # StaticLayer.cumulative_length, which decides where update() writes) are set back after
    # it, so that the first step writes where the prompt ends.
    counters = _cache_counters(cache)
    saved = [c.clone() for c in counters]
    side = torch.cuda.Stream() if cuda_graph else None
    if side is not None:
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(warmup):
                forward()
        torch.cuda.current_stream().wait_stream(side)
    else:
        for _ in range(warmup):
            forward()
    for c, v in zip(counters, saved):
        c.copy_(v)
    if cuda_graph:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_logits = forward()

        def step():
            graph.replay()
            return static_logits
    else:
        step = forward

    tokens = [token]
    for i in range(max_new_tokens - 1):
        if forced is not None:
            static_token.copy_(forced[:, i:i + 1])
        logits = step()
        if step_logits is not None:
            step_logits.append(logits[:, -1].clone())
        token = logits[:, -1].argmax(-1, keepdim=True)
        tokens.append(token)
        if forced is None:
            static_token.copy_(token)
        static_position.add_(1)
    df11 = getattr(model, "df11", None)
    if df11 is not None:  # the deferred status of the replays' decodes
        df11._mark_forward_end()
        df11.check_status(wait=True)
    return torch.cat(tokens, dim=1), step
