"""One block's gate_up and q/k/v through ExecWeight.linear at 1 token, for ncu."""
import sys
import tempfile

import torch

sys.path.insert(0, "bench")  # run from the repository root
import exec_step  # noqa: E402

torch.set_grad_enabled(False)
with tempfile.TemporaryDirectory(dir="/dev/shm") as w:
    layers, keep = exec_step.build(2, w)
t = int(sys.argv[1]) if len(sys.argv) > 1 else 1
x = {k: torch.randn(t, 4096 if k != "down" else 14336, device="cuda").to(torch.bfloat16) for k in exec_step.LAYERS}
for r in range(6):
    for blk in layers:
        for k in ("gate_up", "qkv"):
            blk[k][0].linear(x[k], None)
torch.cuda.synchronize()
print("ok")
