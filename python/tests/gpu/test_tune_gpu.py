"""`python -m df11.tune` on a CUDA GPU (skipped without): it measures the step on both sides
of the switch at a few token counts (small blocks, so that the test is quick; the figures are
not asserted), checks both paths' outputs first, writes this GPU's entry into the switch file
(the test's own, conftest.py), and a weight made afterwards runs the fused GEMM exactly up to
that switch: equal to df11's reference GEMM there, to F.linear one token above."""
import json

import pytest
import torch

from df11 import exec_mode, switches, tune

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")


@pytest.mark.parametrize("mode, tokens", [("exec", "1,16,64,128"), ("compact", "1,8,32")])
def test_tune_measures_writes_and_is_used(tmp_path, capsys, mode, tokens):
    cfg = {"hidden_size": 1024, "num_attention_heads": 8, "num_key_value_heads": 2,
           "intermediate_size": 2816}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    switches.reload()
    assert tune.main(["--mode", mode, "--model", str(tmp_path), "--layers", "2", "--tokens",
                      tokens, "--runs", "5", "--warmup", "2"]) == 0
    out = capsys.readouterr().out
    gpu = torch.cuda.get_device_name()
    saved = json.load(open(switches.path()))["gpus"][gpu][mode]
    assert saved["tokens"] == [int(t) for t in tokens.split(",")]
    assert all(f > 0 and d > 0 for f, d in zip(saved["fused_ms"], saved["decode_ms"]))
    best = saved["max_tokens"]
    assert best == 0 or best in saved["tokens"]
    assert f"switch: {best} tokens" in out
    assert exec_mode.fused_max_tokens(mode) == best
    gen = torch.Generator(device="cuda").manual_seed(1)
    w = (torch.randn(512, 1024, device="cuda", generator=gen) * 0.02).to(torch.bfloat16)
    blob, mats = exec_mode.pack_bf16([w], "test", exec_mode.LAYOUTS[mode])
    ew = exec_mode.ExecWeight(blob, mats, "test")
    for t in sorted({max(best, 1), best + 1}):
        x = torch.randn(t, 1024, device="cuda", generator=gen).to(torch.bfloat16)
        want = (exec_mode.reference_linear(x, w, max_tokens=best) if t <= best
                else torch.nn.functional.linear(x, w))
        assert torch.equal(ew.linear(x, None), want), t
