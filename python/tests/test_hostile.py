"""Hostile folders are refused at load with the C API's message naming the file and the
group (CPU: the folder is opened, and every group checked by a first decode)."""
import os

import pytest

import df11
import models


@pytest.fixture(scope="module")
def llama(llama_folders):
    return llama_folders


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


def test_corrupt_single_file_group_is_refused_naming_it(tmp_path):
    """The encoder's default output (config.json: dfloat11_config alone), shapes from
    bfloat16_model=: a group that claims a weight no block decodes is refused at load."""
    fixture = os.path.join(models.FIXTURES, "llama")
    bad = models.corrupt_copy(os.path.join(fixture, "official-single"), str(tmp_path / "bad"),
                              "model.layers.1.output_positions", models.bump_last_output_position)
    with pytest.raises(df11.Df11Error) as e:
        df11.from_pretrained(bad, device="cpu",
                             bfloat16_model=models.llm_skeleton(os.path.join(fixture, "bf16")))
    assert "model.safetensors: group 'model.layers.1'" in str(e.value), str(e.value)


def test_single_file_folder_refuses_another_models_shapes(tmp_path):
    """A bfloat16_model of another size: the first member whose shape holds another number of
    weights is named, with its group and file."""
    from transformers import AutoConfig
    fixture = os.path.join(models.FIXTURES, "llama")
    config = AutoConfig.from_pretrained(os.path.join(fixture, "bf16"))
    config.intermediate_size = 128
    config.save_pretrained(str(tmp_path))
    with pytest.raises(df11.Df11Error) as e:
        df11.from_pretrained(os.path.join(fixture, "official-single"), device="cpu",
                             bfloat16_model=models.llm_skeleton(str(tmp_path)))
    assert e.value.status == "bad_shape"
    assert ("model.safetensors: group 'model.layers.0': member "
            "'model.layers.0.mlp.gate_proj.weight' holds 10240 weights, its shape [128, 64] "
            "(from the shapes the caller gave) has 8192") in str(e.value), str(e.value)


def test_plain_bf16_folder_is_not_a_df11_folder(llama):
    _, bf16_dir, _ = llama
    with pytest.raises(df11.Df11Error) as e:
        df11.from_pretrained(bf16_dir, device="cpu")
    assert e.value.status == "bad_metadata"
    assert "not a folder written by df11" in str(e.value)


def flip_one_byte(data):
    data[len(data) // 2] ^= 0x01


@pytest.mark.parametrize("part", ["sign_mantissa", "encoded_exponent", "gaps", "luts"])
def test_stored_checksums_name_the_tensor_and_group(llama, part):
    """df11_group_check_stored: one flipped byte in any stored tensor of a group is found
    without decoding (what a GPU load relies on: its decoder checks the streams' structure,
    not the members' checksums; a sign/mantissa byte decodes fine to a wrong weight)."""
    work, _, df11_dir = llama
    bad = models.corrupt_copy(df11_dir, str(work / f"flip-{part}"), f"model.layers.1.{part}",
                              flip_one_byte)
    folder = df11._capi.Model(bad)
    try:
        names = [folder.group_name(g) for g in range(folder.group_count())]
        for g, name in enumerate(names):
            if name != "model.layers.1":
                folder.check_stored(g)  # the others are intact
        with pytest.raises(df11.Df11Error) as e:
            folder.check_stored(names.index("model.layers.1"))
    finally:
        folder.close()
    assert e.value.status == "corrupt_data"
    assert f"model.safetensors: group 'model.layers.1': stored tensor 'model.layers.1.{part}'" \
        in str(e.value), str(e.value)
    if part == "luts":  # a table entry no code reaches: the CPU decode's output is intact
        return
    with pytest.raises(df11.Df11Error) as e2:  # the CPU load: the members' checksums
        df11.from_pretrained(bad, device="cpu")
    assert "group 'model.layers.1'" in str(e2.value)


def test_official_folders_record_no_stored_checksums():
    folder = df11._capi.Model(os.path.join(models.FIXTURES, "phi3", "official"))
    try:
        for g in range(folder.group_count()):
            folder.check_stored(g)  # nothing recorded: nothing to compare, no error
    finally:
        folder.close()
