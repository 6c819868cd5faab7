"""The `dfloat11` package's own loader (DFloat11Model.from_pretrained, version 0.5.0) on folders
`df11 compress` writes, run on the CPU: its load code runs as it is (which tensors it copies,
which it attaches, which Linear and embedding weights it deletes, the guards of spec/DF11.md
6.5 it meets), and only its CUDA kernel, which it reaches through CuPy, is stood in for by
df11's CPU decode of the same group, found by its stored bytes. Its logits must be BF16's.

On a GPU, tests/interop/interop.py runs the loader whole, CUDA kernel included."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

import models

# dfloat11==0.5.0 and dahuffman==0.4.2, pure Python (pip install --no-deps): CI installs them.
pytestmark = pytest.mark.skipif(
    not os.environ.get("CI") and (importlib.util.find_spec("dfloat11") is None
                                  or importlib.util.find_spec("dahuffman") is None),
    reason="needs the dfloat11 package (pip install --no-deps dfloat11==0.5.0 dahuffman==0.4.2)")

OFFICIAL = r"""
import contextlib, ctypes, importlib.util, os, sys, types
import torch
from df11 import _capi  # the stand-in kernel's decoder only

folder = _capi.Model(sys.argv[1])


class Kernel:
    # The loader's call: _decode(grid=, block=, shared_mem=, args=[luts, encoded_exponent,
    # sign_mantissa, output_positions, gaps, out, n_luts, n_bytes, n_elements]).
    def __call__(self, grid, block, shared_mem, args):
        encoded, out, n_bytes, n = args[1], args[5], args[7], args[8]
        for g in range(folder.group_count()):
            addr, nbytes = folder.group_part(g, _capi.PART_ENCODED_EXPONENT)
            if (nbytes == n_bytes and folder.group_element_count(g) == n
                    and ctypes.string_at(addr, nbytes) == ctypes.string_at(encoded, n_bytes)):
                folder.decode_group(g, out, 2 * n)
                return
        raise AssertionError("the loader decoded a group the folder does not hold")


cupy = types.ModuleType("cupy")
cupy.RawModule = lambda path: types.SimpleNamespace(get_function=lambda name: Kernel())
cupy.cuda = types.SimpleNamespace(Device=lambda index: contextlib.nullcontext())
sys.modules["cupy"] = cupy
if importlib.util.find_spec("pkg_resources") is None:  # setuptools' (gone from new ones)
    resources = types.ModuleType("pkg_resources")
    resources.resource_filename = lambda package, name: os.path.join(
        os.path.dirname(importlib.util.find_spec(package).origin), name)
    sys.modules["pkg_resources"] = resources

from dfloat11 import DFloat11Model
from transformers import AutoConfig, AutoModelForCausalLM

bf16 = AutoModelForCausalLM.from_pretrained(sys.argv[2], dtype=torch.bfloat16).eval()
skeleton = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(sys.argv[2]),
                                            dtype=torch.bfloat16)
model = DFloat11Model.from_pretrained(sys.argv[1], device="cpu", bfloat16_model=skeleton).eval()
guards = [name for name, b in model.named_buffers() if b.dtype == torch.uint8 and b.numel() == 0]
print("GUARDS", len(guards), guards[:2])
ids = torch.arange(1, 17).view(2, 8)
with torch.no_grad():
    a, b = model(input_ids=ids).logits, bf16(input_ids=ids).logits
print("EQUAL" if torch.equal(a.view(torch.int16), b.view(torch.int16)) else "DIFFERENT")
"""


@pytest.mark.parametrize("family", ["llama", "qwen3"])
def test_official_loader_reads_a_df11_folder_with_guards(tmp_path, family):
    bf16_dir, df11_dir = models.llm_folders(tmp_path, family)
    proc = subprocess.run([sys.executable, "-c", OFFICIAL, df11_dir, bf16_dir],
                          env=dict(os.environ), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "EQUAL" in proc.stdout, proc.stdout + proc.stderr
    # Each group's guard became a buffer of the module whose weight the loader replaces.
    count = int(proc.stdout.split("GUARDS ")[1].split()[0])
    assert count >= 3, proc.stdout
