"""Host time of df11's per-block decode hook (issue 19: eager generate is CPU-bound on the GPU
machine, so what the hook costs on the CPU is what eager speed loses). On a small df11 model
on the GPU, microseconds of host time per block for:
  - "hook":      DecodeMode.pre_forward as shipped (one foreign call per block:
                 df11_cuda_decode_and_copy_status, torch's raw current stream);
  - "before":    the hook as it was (torch.cuda.current_stream() object, a zero_() of the
                 tail-pool counters, df11_cuda_decode and df11_cuda_status_copy: two calls);
  - "custom op": torch.ops.df11.decode_group through the dispatcher (the traced path).
Median of 7 rounds of 200 passes over every block; the GPU work is drained between rounds."""
import os
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import df11  # noqa: E402
import models  # noqa: E402
from df11 import _capi  # noqa: E402


def timed(fn, units, passes=200, rounds=7):
    results = []
    for _ in range(rounds):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(passes):
            for u in units:
                fn(u)
        t = time.perf_counter() - t0
        torch.cuda.synchronize()
        results.append(1e6 * t / (passes * len(units)))
    return sorted(results)[len(results) // 2]


def main():
    with tempfile.TemporaryDirectory() as work:
        bf16_dir, df11_dir = os.path.join(work, "bf16"), os.path.join(work, "df11")
        models.build_llm("llama").save_pretrained(bf16_dir)
        models.df11_compress(bf16_dir, df11_dir)
        model = df11.from_pretrained(df11_dir, device="cuda")
        units = model.df11.units
        L = _capi.lib()
        counters = {id(rt): rt.workspace[16:] for u in units for rt in u.groups}

        def before(u):
            for rt in u.groups:
                d = rt.decoder
                stream = torch.cuda.current_stream(rt.out.device).cuda_stream
                counters[id(rt)].zero_()
                rc = L.df11_cuda_decode(d._plan, d.ws_ptr, d.ws_bytes, stream)
                if rc == 0:
                    rc = L.df11_cuda_status_copy(d._plan, d.ws_ptr, d.h_status, d.status_bytes,
                                                 stream)
                assert rc == 0

        def op(u):
            for rt in u.groups:
                torch.ops.df11.decode_group(rt.out, rt.workspace, rt.key)

        rows = [("hook", timed(lambda u: u.mode.pre_forward(), units)),
                ("before", timed(before, units)),
                ("custom op", timed(op, units))]
        model.df11.check_status(wait=True)
        for name, us in rows:
            print(f"hook overhead: {name:10} {us:7.1f} us of host time per block "
                  f"({len(units)} blocks)", flush=True)


if __name__ == "__main__":
    main()
