"""python/tests/gpu/device_env.sh, the setup every GPU run's script sources: it installs the
copied wheels without the network, lays the checkout's Python over them on request, and
exports the environment the run's steps use. Checked here with a hand-made wheel (no GPU)."""
import base64
import hashlib
import os
import subprocess
import sys
import zipfile

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gpu", "device_env.sh")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def make_wheel(folder, name, files):
    """A minimal pure-Python wheel (PEP 427) holding `files` ({path: text})."""
    dist = f"{name}-0.0.1.dist-info"
    entries = dict(files)
    entries[f"{dist}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.0.1\n"
    entries[f"{dist}/WHEEL"] = ("Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                "Tag: py3-none-any\n")
    record = []
    for path, text in entries.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{path},sha256={digest.decode()},{len(text.encode())}")
    record.append(f"{dist}/RECORD,,")
    entries[f"{dist}/RECORD"] = "\n".join(record) + "\n"
    path = os.path.join(folder, f"{name}-0.0.1-py3-none-any.whl")
    with zipfile.ZipFile(path, "w") as z:
        for p, text in entries.items():
            z.writestr(p, text)
    return path


def source(files, out, site, overlay):
    env = dict(os.environ, DF11_SITE=str(site), DF11_OVERLAY="1" if overlay else "0",
               PYTHON=sys.executable)
    env.pop("PYTHONPATH", None)
    script = (f'source "{SCRIPT}" "{files}" "{out}" || exit $?\n'
              '"$PYTHON" -c "import df11, probe; print(df11.MARK, probe.MARK)"\n'
              'echo "LD=$LD_LIBRARY_PATH"; echo "CLI=${DF11_CLI:-}"; echo "PP=$PYTHONPATH"\n')
    return subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True)


def test_installs_the_copied_wheels_and_exports_the_environment(tmp_path):
    files = tmp_path / "files"
    for d in ("wheel", "whl", "lib", "bin"):
        (files / d).mkdir(parents=True)
    make_wheel(files / "wheel", "df11", {"df11/__init__.py": "MARK = 'df11 wheel'\n"})
    make_wheel(files / "whl", "probe", {"probe.py": "MARK = 'probe'\n"})
    (files / "bin" / "df11").write_text("#!/bin/sh\n")
    (files / "bin" / "df11").chmod(0o755)
    site, out = tmp_path / "site", tmp_path / "out"
    (site / "stale").mkdir(parents=True)  # a previous run's install is removed
    r = source(files, out, site, overlay=False)
    assert r.returncode == 0, r.stderr
    assert "df11 wheel probe" in r.stdout
    assert f"LD={files}/lib:{site}/df11/lib" in r.stdout
    assert f"CLI={files}/bin/df11" in r.stdout
    assert f"PP={site}" in r.stdout
    assert not (site / "stale").exists()
    assert (out / "gpu.txt").read_text().strip() and (out / "pip.log").exists()

    # DF11_OVERLAY=1: the checkout's python/df11/*.py over the installed package.
    r = source(files, out, site, overlay=True)
    for name in os.listdir(os.path.join(REPO, "python", "df11")):
        if name.endswith(".py"):
            assert (site / "df11" / name).read_text() == \
                open(os.path.join(REPO, "python", "df11", name)).read()


def test_a_failed_install_returns_non_zero_with_pips_log(tmp_path):
    files = tmp_path / "files"
    (files / "wheel").mkdir(parents=True)  # no wheel in it
    r = source(files, tmp_path / "out", tmp_path / "site", overlay=False)
    assert r.returncode == 3
    assert "df11.whl" in r.stderr or "whl" in r.stderr
    assert "df11 wheel" not in r.stdout
