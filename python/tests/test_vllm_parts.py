"""python/tests/gpu/vllm_parts.sh, which splits vLLM's wheels again into parts that fit one GPU
call beside the checkout and packs df11's files into the last: checked on a hand-made .vllm of
random bytes (no GPU, no vLLM)."""
import hashlib
import os
import subprocess
import tarfile

import pytest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gpu", "vllm_parts.sh")
MIB = 1 << 20


def make_tree(root, data, piece_bytes, checksum=None):
    """root/.vllm as prepare.sh leaves it (`data` in pieces of piece_bytes, one part each, the
    last part with wheels.sha256 and device-install.sh) and root/files as device_env.sh takes."""
    pieces = [data[i:i + piece_bytes] for i in range(0, len(data), piece_bytes)]
    for k, piece in enumerate(pieces):
        part = root / ".vllm" / f"part{k}"
        part.mkdir(parents=True)
        (part / f"piece_{k:02d}").write_bytes(piece)
    last = root / ".vllm" / f"part{len(pieces) - 1}"
    (last / "wheels.sha256").write_text((checksum or hashlib.sha256(data).hexdigest()) + "\n")
    (last / "device-install.sh").write_text("# installs the wheels\n")
    files = root / "files"
    for sub in ("wheel", "lib", "bin"):
        (files / sub).mkdir(parents=True)
    (files / "wheel" / "df11-0.1.0-py3-none-linux_x86_64.whl").write_bytes(b"wheel bytes")
    (files / "lib" / "libtbb.so.12").write_bytes(b"library bytes")
    (files / "bin" / "df11").write_bytes(b"tool bytes")
    return files


def run(root, *args):
    return subprocess.run(["bash", SCRIPT, *map(str, args)], cwd=root, capture_output=True,
                          text=True, timeout=300)


def listing(root):
    return sorted(str(p.relative_to(root)) for p in (root / ".vllm").rglob("*"))


def test_parts_join_to_the_wheels_and_the_last_carries_df11(tmp_path):
    data = os.urandom(3 * MIB + 12345)
    files = make_tree(tmp_path, data, 700_000)
    r = run(tmp_path, files, 1)
    assert r.returncode == 0, r.stderr
    assert "parts: 4" in r.stdout
    parts = sorted((tmp_path / ".vllm").glob("part*"), key=lambda p: int(p.name[4:]))
    assert [p.name for p in parts] == ["part0", "part1", "part2", "part3"]
    joined = b""
    for p in parts:
        pieces = sorted(p.glob("piece_*"))
        assert len(pieces) == 1 and pieces[0].stat().st_size <= MIB
        joined += pieces[0].read_bytes()
    assert joined == data
    last = parts[-1]
    assert (last / "wheels.sha256").read_text().strip() == hashlib.sha256(data).hexdigest()
    assert (last / "device-install.sh").read_text() == "# installs the wheels\n"
    with tarfile.open(last / "run.tar.xz") as t:
        names = set(t.getnames())
        assert t.extractfile("wheel/df11-0.1.0-py3-none-linux_x86_64.whl").read() == b"wheel bytes"
        assert t.extractfile("bin/df11").read() == b"tool bytes"
    assert "lib/libtbb.so.12" in names
    for p in parts[:-1]:
        assert [q.name for q in p.iterdir()] == [next(p.glob("piece_*")).name]
    assert not (tmp_path / ".vllm" / "new").exists()


def test_a_join_that_does_not_match_leaves_the_parts(tmp_path):
    files = make_tree(tmp_path, os.urandom(MIB), 300_000, checksum="0" * 64)
    before = listing(tmp_path)
    r = run(tmp_path, files, 1)
    assert r.returncode == 3
    assert "do not match" in r.stderr and "wheels.sha256" in r.stderr
    assert listing(tmp_path) == before


@pytest.mark.parametrize("damage, message", [
    ("part", ".vllm/part1 is missing"),
    ("install", "device-install.sh is missing"),
    ("files", "files/bin/df11 is missing"),
])
def test_missing_inputs_are_named(tmp_path, damage, message):
    files = make_tree(tmp_path, os.urandom(MIB), 300_000)
    if damage == "part":
        for p in (tmp_path / ".vllm" / "part1").iterdir():
            p.unlink()
        (tmp_path / ".vllm" / "part1").rmdir()
    elif damage == "install":
        next((tmp_path / ".vllm").rglob("device-install.sh")).unlink()
    else:
        (files / "bin" / "df11").unlink()
    before = listing(tmp_path)
    r = run(tmp_path, files, 1)
    assert r.returncode == 2
    assert message in r.stderr
    assert listing(tmp_path) == before
