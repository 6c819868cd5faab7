"""A generate call through the package on a small Llama (run under compute-sanitizer memcheck
by run_gpu.sh): df11 compress, df11.from_pretrained on CUDA, 8 greedy tokens at batch 2, and
the same tokens as the BF16 model."""
import os
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import df11  # noqa: E402
import models  # noqa: E402

with tempfile.TemporaryDirectory() as work:
    bf16_dir, df11_dir = os.path.join(work, "bf16"), os.path.join(work, "df11")
    models.build_llm("llama").save_pretrained(bf16_dir)
    models.df11_compress(bf16_dir, df11_dir)
    model = df11.from_pretrained(df11_dir, device="cuda")
    ids = models.llm_inputs(model.config.vocab_size, 2).cuda()
    kw = dict(attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=8,
              min_new_tokens=8, eos_token_id=None, pad_token_id=0)
    with torch.no_grad():
        got = model.generate(input_ids=ids, **kw)
        from transformers import AutoModelForCausalLM
        ref = AutoModelForCausalLM.from_pretrained(bf16_dir, dtype=torch.bfloat16).cuda()
        want = ref.generate(input_ids=ids, **kw)
    torch.cuda.synchronize()
    print("memcheck generate: tokens equal BF16's:", torch.equal(got, want))
    sys.exit(0 if torch.equal(got, want) else 1)
