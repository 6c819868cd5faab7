"""One block's four launches through ExecWeight.linear at T tokens (fused wide kernel), for ncu."""
import sys
import torch
sys.path.insert(0, "bench")
sys.path.insert(0, "python")
import exec_step  # noqa: E402
from df11 import exec_mode  # noqa: E402
torch.set_grad_enabled(False)
t = int(sys.argv[1]) if len(sys.argv) > 1 else 64
exec_mode.FUSED_MAX_TOKENS["exec"] = 256
bf16, packed = exec_step.build(1, ["exec"])
x = {k: torch.randn(t, 4096 if k != "down" else 14336, device="cuda").to(torch.bfloat16)
     for k in exec_step.LAYERS}
for r in range(3):
    for k in ("qkv", "o", "gate_up", "down"):
        packed["exec"][0][k].linear(x[k], None)
torch.cuda.synchronize()
print("ok")
