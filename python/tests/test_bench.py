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
