"""One block's q/k/v, o, gate_up and down through ExecWeight.linear at T tokens, for ncu."""
import sys

import torch

sys.path.insert(0, "bench")
import exec_step  # noqa: E402

torch.set_grad_enabled(False)
bf16, packed = exec_step.build(2, ["exec"])
t = int(sys.argv[1]) if len(sys.argv) > 1 else 1
x = {k: torch.randn(t, 14336 if k == "down" else 4096, device="cuda").to(torch.bfloat16)
     for k in exec_step.LAYERS}
for r in range(4):
    for blk in packed["exec"]:
        for k in ("qkv", "o", "gate_up", "down"):
            blk[k].linear(x[k], None)
torch.cuda.synchronize()
print("ok")
