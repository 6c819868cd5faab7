"""CPU decodes on a team of the caller's threads (df11_decode_group_on and
df11_decode_group_range_on, df11.cpu_team): the same bits as on oneTBB's threads, with any
number of threads; torch's own OpenMP runtime found where torch computes on OpenMP; and a
model's logits equal to BF16's on either, DF11_CPU_DECODE_THREADS=tbb choosing oneTBB's."""
import ctypes
import os
import subprocess
import sys
import threading

import pytest
import torch

from df11 import _capi, cpu_team
import models

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    work = tmp_path_factory.mktemp("team")
    bf16_dir, df11_dir = str(work / "bf16"), str(work / "df11")
    models.build_llm("llama", vocab_size=4001).save_pretrained(bf16_dir)
    models.df11_compress(bf16_dir, df11_dir)
    return bf16_dir, df11_dir


# A df11_team_run made of Python threads (ctypes drops the GIL while each runs the decode):
# fn(arg) on `threads` threads, this one among them, as GOMP_parallel runs it.
RUN_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint)
FN_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
calls = []


@RUN_TYPE
def python_team(fn, arg, threads, flags):
    calls.append((threads, flags))
    body = FN_TYPE(fn)
    others = [threading.Thread(target=body, args=(arg,)) for _ in range(threads - 1)]
    for t in others:
        t.start()
    body(arg)
    for t in others:
        t.join()


PYTHON_TEAM = ctypes.cast(python_team, ctypes.c_void_p).value


def test_team_decodes_equal_onetbbs(folders):
    folder = _capi.Model(folders[1])
    try:
        teams = [(PYTHON_TEAM, k) for k in (1, 2, 3, 8)]
        if cpu_team.team() is not None:
            teams += [(cpu_team.team()[0], k) for k in (1, 2, 4)]
        for g in range(folder.group_count()):
            n = folder.group_element_count(g)
            want = torch.empty(n, dtype=torch.int16)
            folder.decode_group(g, want.data_ptr(), 2 * n)
            first, count = n // 3, n - n // 3 - 1
            for team in teams:
                before = len(calls)
                got = torch.full((n,), -1, dtype=torch.int16)
                folder.decode_group(g, got.data_ptr(), 2 * n, team)
                assert torch.equal(got, want), (g, team[1])
                part = torch.full((count,), -1, dtype=torch.int16)
                folder.decode_group_range(g, first, part.data_ptr(), 2 * count, team)
                assert torch.equal(part, want[first:first + count]), (g, team[1])
                if team[0] == PYTHON_TEAM:  # the decodes went through the team
                    assert len(calls) - before == (2 if team[1] >= 2 else 0)
                    assert all(c == (team[1], 0) for c in calls[before:])
    finally:
        folder.close()


def test_team_reports_a_corrupt_stream_as_onetbb_does(folders, tmp_path):
    folder = _capi.Model(folders[1])
    name, file = folder.group_name(0), folder.group_file(0)
    folder.close()

    def flip(data):
        data[100] ^= 0x10

    bad = models.corrupt_copy(folders[1], str(tmp_path / "bad"), name + ".encoded_exponent", flip)
    folder = _capi.Model(bad)
    try:
        n = folder.group_element_count(0)
        out = torch.empty(n, dtype=torch.int16)
        with pytest.raises(_capi.Df11Error) as tbb:
            folder.decode_group(0, out.data_ptr(), 2 * n)
        with pytest.raises(_capi.Df11Error) as team:
            folder.decode_group(0, out.data_ptr(), 2 * n, (PYTHON_TEAM, 4))
        assert str(team.value) == str(tbb.value)
        assert f"{file}: group '{name}'" in str(team.value)
    finally:
        folder.close()


@pytest.mark.skipif(not sys.platform.startswith("linux")
                    or "parallel backend: OpenMP" not in torch.__config__.parallel_info(),
                    reason="torch does not compute on OpenMP here")
def test_torchs_openmp_runtime_is_found():
    run, threads = cpu_team.team()
    assert threads == torch.get_num_threads()
    lib = ctypes.CDLL(cpu_team.openmp_libraries()[0], mode=os.RTLD_NOLOAD)
    assert run == ctypes.cast(lib.GOMP_parallel, ctypes.c_void_p).value


LOGITS = """
import sys, torch, df11
from df11 import cpu_team
from transformers import AutoModelForCausalLM
bf16 = AutoModelForCausalLM.from_pretrained(sys.argv[1], dtype=torch.bfloat16).eval()
model = df11.from_pretrained(sys.argv[2], device="cpu")
ids = torch.randint(0, 4001, (2, 9), generator=torch.Generator().manual_seed(0))
with torch.no_grad():
    a, b = bf16(input_ids=ids).logits, model(input_ids=ids).logits
same = torch.equal(a.view(torch.int16), b.view(torch.int16))
print("team", cpu_team.team() is not None, "equal", same)
"""


@pytest.mark.parametrize("threads", ["default", "tbb"])
def test_logits_equal_bf16_on_either_threads(folders, threads):
    env = dict(os.environ)
    env.pop("DF11_CPU_DECODE_THREADS", None)
    if threads == "tbb":
        env["DF11_CPU_DECODE_THREADS"] = "tbb"
    out = subprocess.run([sys.executable, "-c", LOGITS, *folders], env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    line = out.stdout.strip().splitlines()[-1]
    assert line.endswith("equal True"), line
    if threads == "tbb":
        assert line.startswith("team False"), line
