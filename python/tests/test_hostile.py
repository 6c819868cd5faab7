"""Hostile folders are refused at load with the C API's message naming the file and the
group (CPU: the folder is opened, and every group checked by a first decode)."""
import os

import pytest

import df11
import models


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    work = tmp_path_factory.mktemp("hostile")
    bf16_dir, df11_dir = str(work / "bf16"), str(work / "df11")
    models.build_llm("llama").save_pretrained(bf16_dir)
    models.df11_compress(bf16_dir, df11_dir)
    return work, bf16_dir, df11_dir


@pytest.mark.parametrize("tensor", ["model.layers.1.output_positions",
                                    "model.layers.1.encoded_exponent"])
def test_corrupt_df11_group_is_refused_naming_it(llama, tensor):
    work, _, df11_dir = llama
    if tensor.endswith("output_positions"):
        how = models.bump_last_output_position
    else:
        def how(data):  # the bitstream: caught by the decode or the recorded checksums
            for i in range(len(data) // 4, len(data) // 2):
                data[i] ^= 0x5A
    bad = models.corrupt_copy(df11_dir, str(work / "bad"), tensor, how)
    with pytest.raises(df11.Df11Error) as e:
        df11.from_pretrained(bad, device="cpu")
    assert "model.safetensors" in str(e.value)
    assert "group 'model.layers.1'" in str(e.value), str(e.value)


def test_corrupt_official_group_is_refused_naming_it(tmp_path):
    official = os.path.join(models.FIXTURES, "phi3", "official")
    bad = models.corrupt_copy(official, str(tmp_path / "bad"), "model.layers.1.output_positions",
                              models.bump_last_output_position)
    with pytest.raises(df11.Df11Error) as e:
        df11.from_pretrained(bad, device="cpu")
    assert "model.safetensors: group 'model.layers.1'" in str(e.value), str(e.value)


def test_plain_bf16_folder_is_not_a_df11_folder(llama):
    _, bf16_dir, _ = llama
    with pytest.raises(df11.Df11Error) as e:
        df11.from_pretrained(bf16_dir, device="cpu")
    assert e.value.status == "bad_metadata"
    assert "not a folder written by df11" in str(e.value)
