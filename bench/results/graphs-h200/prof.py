"""Kernel time of 1-token forward passes: df11 mode="exec" and BF16, torch.profiler."""
import sys
import torch
import df11
from transformers import AutoModelForCausalLM, DynamicCache
torch.set_grad_enabled(False)
w = sys.argv[1]
for name in ("exec", "bf16"):
    if name == "bf16":
        m = AutoModelForCausalLM.from_pretrained(f"{w}/bf16", dtype=torch.bfloat16, device_map="cuda").eval()
    else:
        m = df11.from_pretrained(f"{w}/df11", device="cuda", mode="exec").eval()
    ids = torch.randint(0, 1000, (1, 16), device="cuda")
    cache = DynamicCache()
    out = m(ids, past_key_values=cache, use_cache=True)
    nxt = out.logits[:, -1:].argmax(-1)
    for _ in range(3):
        out = m(nxt, past_key_values=cache, use_cache=True); nxt = out.logits[:, -1:].argmax(-1)
    torch.cuda.synchronize()
    emb = m.get_input_embeddings()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(50):
        s.record(); emb(nxt); e.record(); torch.cuda.synchronize(); ts.append(s.elapsed_time(e))
    ts.sort(); print(f"{name}: embedding lookup of 1 token {ts[25]*1000:.1f} us (median of 50)")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(5):
            out = m(nxt, past_key_values=cache, use_cache=True); nxt = out.logits[:, -1:].argmax(-1)
        torch.cuda.synchronize()
    print(f"== {name}: 5 one-token forward passes, CUDA kernels")
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=22, max_name_column_width=70))
    del m, out, cache; torch.cuda.empty_cache()
