"""python -m df11.bench's argument checks (no GPU needed: they come before any variant runs)."""
import pytest

from df11 import bench


def test_unknown_variant_is_refused(capsys):
    with pytest.raises(SystemExit) as e:
        bench.main(["folder", "--compare", "bf16,no-such-variant"])
    assert e.value.code == 2
    assert "unknown variant 'no-such-variant'" in capsys.readouterr().err


def test_every_variant_is_documented():
    # python -m df11.bench --help prints the module's docstring: it describes every variant.
    for v in bench.VARIANTS:
        assert f" {v} (" in bench.__doc__, v


def test_before_load_warms_the_page_cache_and_imports_the_model_class(tmp_path):
    # Each worker reads its folder and imports the model's modeling module before it times
    # the load, so the load rows do not depend on which variant's process ran first.
    import argparse
    import sys

    import models
    model = models.build_llm("llama", seed=1)
    bf16 = tmp_path / "bf16"
    model.save_pretrained(bf16)
    args = argparse.Namespace(model=str(tmp_path / "absent"), bf16=str(bf16))
    size = sum(p.stat().st_size for p in bf16.rglob("*") if p.is_file())
    before = bench._before_load("bf16", args)
    assert before["bytes read"] == size > 0
    assert before["model class"] == type(model).__name__
    assert type(model).__module__ in sys.modules
    assert before["page cache"] >= 0 and before["imports"] >= 0
    assert bench._folder("df11", args) == args.model
    assert bench._folder("glyd", args) == args.bf16
