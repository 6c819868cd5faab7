"""Hub ids for from_pretrained: df11's own Hub client (`df11 pull`, hub/ in C++), which
downloads into the cache transformers and huggingface_hub share and prints the snapshot folder.
The wheel carries the decode-only libdf11, not the HTTP client: the df11 tool is found at
$DF11_CLI or on PATH."""
from __future__ import annotations

import os
import shutil
import subprocess


def pull(repo: str) -> str:
    tool = os.environ.get("DF11_CLI") or shutil.which("df11")
    if not tool:
        raise FileNotFoundError(f"df11: {repo!r} is no folder here, and pulling it from the Hub "
                                "needs the df11 tool (build it: scripts/build.sh; then set "
                                "DF11_CLI=build/cli/df11 or put it on PATH)")
    proc = subprocess.run([tool, "pull", repo, "-q"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"df11 pull {repo}: {(proc.stderr or proc.stdout).strip()}")
    folder = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    if not os.path.isdir(folder):
        raise RuntimeError(f"df11 pull {repo}: no snapshot folder in its output {proc.stdout!r}")
    return folder
