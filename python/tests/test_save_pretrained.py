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
    # Nothing the groups code is written again in BF16: a member's name holds at most its
    # group's guard (spec/DF11.md 6.5), an empty U8 tensor, one per group, as in the source.
    folder = model.df11.folder
    members = {folder.tensor_name(t) for g in range(folder.group_count())
               for t in folder.group_members(g)}
    guards = members & set(saved)
    assert all(saved[k].dtype == torch.uint8 and saved[k].shape == (0,) for k in guards), guards
    assert guards == members & set(source)
    assert len(guards) == sum(1 for g in range(folder.group_count())
                              if folder.group_members(g))  # a tied head's alias group: none


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


def test_a_save_that_splits_groups_between_shards_loads(tmp_path, llama_folders):
    """save_pretrained(max_shard_size=...) shards as transformers does, tensor by tensor, so a
    coded group's stored tensors land in two shards; DF11 readers accept that in this layout
    (spec/DF11.md 7.8): df11.from_pretrained and transformers' from_pretrained load the folder
    with the same logits."""
    _, _, df11_dir = llama_folders
    model = df11.from_pretrained(df11_dir, device="cpu")
    out = str(tmp_path / "small")
    model.save_pretrained(out, max_shard_size="20KB")
    assert models.split_groups(out)
    from transformers import AutoModelForCausalLM
    ids = models.llm_inputs(model.config.vocab_size, 2)
    with torch.no_grad():
        want = model(input_ids=ids).logits
        for again in (df11.from_pretrained(out, device="cpu"),
                      AutoModelForCausalLM.from_pretrained(out)):
            assert torch.equal(again(input_ids=ids).logits, want)