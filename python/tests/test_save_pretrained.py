"""save_pretrained of a DF11 model writes a DF11 folder (the coded groups as stored, the raw
tensors, config.json with its dfloat11_config) that loads again with the same logits; each
coded tensor's bytes are the source folder's. Every family of the interop suite, on the CPU."""
import os

import pytest
import torch

import df11
import models

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.mark.parametrize("family", models.FAMILIES)
def test_save_pretrained_round_trip(tmp_path, family):
    bf16_dir, df11_dir, out = (str(tmp_path / "bf16"), str(tmp_path / "df11"),
                               str(tmp_path / "saved"))
    models.build_llm(family).save_pretrained(bf16_dir)
    models.df11_compress(bf16_dir, df11_dir)
    model = df11.from_pretrained(df11_dir, device="cpu")
    model.save_pretrained(out)
    again = df11.from_pretrained(out, device="cpu")
    ids = models.llm_inputs(model.config.vocab_size, 2)
    with torch.no_grad():
        assert torch.equal(again(input_ids=ids).logits, model(input_ids=ids).logits)
    source, saved = models.saved_tensors(df11_dir), models.saved_tensors(out)
    coded = {k for k in source if k.endswith(".encoded_exponent")}
    assert coded and coded <= set(saved)
    for key, value in source.items():  # every stored tensor of the source, byte for byte
        if key in saved:
            assert torch.equal(saved[key].view(torch.uint8), value.view(torch.uint8)), key
    # Nothing the groups code is written again in BF16.
    folder = model.df11.folder
    members = {folder.tensor_name(t) for g in range(folder.group_count())
               for t in folder.group_members(g)}
    assert not members & set(saved)


def test_official_folder_saves_too(tmp_path):
    fixture = os.path.join(models.FIXTURES, "llama")
    model = df11.from_pretrained(os.path.join(fixture, "official"), device="cpu")
    model.save_pretrained(str(tmp_path / "saved"))
    again = df11.from_pretrained(str(tmp_path / "saved"), device="cpu")
    ids = models.llm_inputs(model.config.vocab_size, 2)
    with torch.no_grad():
        assert torch.equal(again(input_ids=ids).logits, model(input_ids=ids).logits)


def test_transformers_loads_what_save_pretrained_wrote(tmp_path, llama_folders):
    """save_pretrained of a model df11.from_pretrained loaded names the df11 method in
    config.json: transformers' own from_pretrained loads the folder, with the same logits."""
    _, _, df11_dir = llama_folders
    model = df11.from_pretrained(df11_dir, device="cpu")
    model.save_pretrained(str(tmp_path / "saved"))
    from transformers import AutoModelForCausalLM
    again = AutoModelForCausalLM.from_pretrained(str(tmp_path / "saved"))
    ids = models.llm_inputs(model.config.vocab_size, 2)
    with torch.no_grad():
        assert torch.equal(again(input_ids=ids).logits, model(input_ids=ids).logits)


def test_a_save_that_would_split_a_group_is_refused(tmp_path, llama_folders):
    """save_pretrained(max_shard_size=...) shards as transformers does; a size at which a coded
    group's stored tensors would land in two shards (which no DF11 reader takes) is refused
    before anything is written, saying the size that works (one shard), which then loads with
    the same logits."""
    import re
    _, _, df11_dir = llama_folders
    model = df11.from_pretrained(df11_dir, device="cpu")
    message = models.refused_save(model, str(tmp_path / "small"), "20KB")
    enough = int(re.search(r"at least (\d+) bytes", message).group(1))
    out = str(tmp_path / "one")
    model.save_pretrained(out, max_shard_size=enough)
    assert [f for f in os.listdir(out) if f.endswith(".safetensors")] == ["model.safetensors"]
    again = df11.from_pretrained(out, device="cpu")
    ids = models.llm_inputs(model.config.vocab_size, 2)
    with torch.no_grad():
        assert torch.equal(again(input_ids=ids).logits, model(input_ids=ids).logits)
