"""Where the execution modes switch from the fused GEMM to decode + F.linear, as measured on
the GPU at hand: the switch file that `python -m df11.tune` writes and exec_mode reads.

A mode's Linears run the fused GEMM at up to fused_max_tokens(mode) tokens and decode their
blob to BF16 for F.linear above (df11.exec_mode). Where that switch pays depends on the GPU, the
build's kernels and the matrices' shapes, so it is measured: df11 carries the switches measured
on its benchmark GPUs (exec_mode.FUSED_MAX_TOKENS_BY_GPU), and `python -m df11.tune` measures the
GPU at hand and writes its switch here, which then takes precedence over the carried table for
that GPU (by the name torch gives it) and that df11 version.

The file: $DF11_SWITCH_FILE if set, else $XDG_CACHE_HOME/df11/switches.json (~/.cache when
XDG_CACHE_HOME is unset). JSON:

    {"format": "df11-switches", "version": 1,
     "gpus": {"<torch.cuda.get_device_name()>": {
         "<mode>": {"max_tokens": <int >= 0>, "df11": "<df11.version()>", ...}}}}

Each entry also keeps what was measured (tokens, times, command, date): df11 reads only
max_tokens and df11. An entry written by another df11 version is not used (its kernels may
differ): the carried table or the default applies, and a warning says to measure again. A file
that exists but cannot be read as above raises Df11Error naming it, rather than being skipped.

This module touches no GPU and imports none of df11's other modules but _capi.
"""
from __future__ import annotations

import json
import os
import tempfile
import threading
import warnings
from typing import Dict, List, Optional, Sequence, Tuple

from ._capi import Df11Error, version

FORMAT = "df11-switches"
FORMAT_VERSION = 1
MODES = ("exec", "compact")

_lock = threading.Lock()
_cache: Dict[str, dict] = {}  # path -> the parsed "gpus" object
_warned: set = set()


def path() -> str:
    """The switch file's path (it may not exist)."""
    explicit = os.environ.get("DF11_SWITCH_FILE")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "df11", "switches.json")


def _invalid(where: str, what: str, status: str = "bad_config") -> Df11Error:
    return Df11Error.named(status, f"{where}: {what} (a df11 switch file, which `python -m "
                           "df11.tune` writes: delete it, then measure again)")


def _parse(where: str, text: str) -> dict:
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as e:  # RecursionError: nested beyond the parser
        raise _invalid(where, f"not JSON ({type(e).__name__}: {e})", "bad_json") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise _invalid(where, f"'format' is not {FORMAT!r}")
    if doc.get("version") != FORMAT_VERSION:
        raise _invalid(where, f"'version' is {doc.get('version')!r}, this df11 reads "
                       f"{FORMAT_VERSION}")
    gpus = doc.get("gpus")
    if not isinstance(gpus, dict):
        raise _invalid(where, "'gpus' is not an object")
    for gpu, modes in gpus.items():
        if not isinstance(modes, dict):
            raise _invalid(where, f"gpus[{gpu!r}] is not an object")
        for mode, entry in modes.items():
            at = f"gpus[{gpu!r}][{mode!r}]"
            if mode not in MODES:
                raise _invalid(where, f"{at}: {mode!r} is not one of {list(MODES)}")
            if not isinstance(entry, dict):
                raise _invalid(where, f"{at} is not an object")
            n = entry.get("max_tokens")
            if not isinstance(n, int) or isinstance(n, bool) or n < 0:
                raise _invalid(where, f"{at}['max_tokens'] = {n!r}, must be an integer >= 0")
            if not isinstance(entry.get("df11"), str):
                raise _invalid(where, f"{at}['df11'] = {entry.get('df11')!r}, must be the "
                               "df11 version that measured it")
    return gpus


def _read(where: str) -> dict:
    """The file's "gpus" object ({} where there is no file)."""
    try:
        with open(where, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise _invalid(where, f"cannot be read ({e.strerror or e})", "io") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _invalid(where, f"not UTF-8 text (byte {e.start})", "bad_json") from None
    return _parse(where, text)


def _load(where: str) -> dict:
    with _lock:
        gpus = _cache.get(where)
        if gpus is None:
            gpus = _cache[where] = _read(where)
        return gpus


def reload() -> None:
    """Forget what was read: the next lookup reads the file again (df11 reads it once per
    process; models loaded before keep the switch they were given)."""
    with _lock:
        _cache.clear()
        _warned.clear()


def measured(mode: str, gpu: str) -> Optional[int]:
    """The switch the file holds for `mode` on the GPU named `gpu`, measured by this df11
    version; None where it holds none (or one of another version: a warning, once)."""
    where = path()
    entry = _load(where).get(gpu, {}).get(mode)
    if entry is None:
        return None
    if entry["df11"] != version():
        key = (where, gpu, mode)
        if key not in _warned:
            _warned.add(key)
            warnings.warn(f"{where}: the {mode} switch of {gpu} was measured by df11 "
                          f"{entry['df11']}, this is df11 {version()}: not used. Run "
                          f"`python -m df11.tune --mode {mode}` to measure it again",
                          stacklevel=3)
        return None
    return entry["max_tokens"]


def save(gpu: str, mode: str, entry: dict, where: Optional[str] = None) -> str:
    """Writes `entry` (max_tokens and what was measured; df11 is set here) as `mode`'s switch on
    `gpu` into the switch file (`where`, else path()), keeping its other entries; atomic (a
    temporary file renamed). Returns the file's path."""
    where = where or path()
    if mode not in MODES:
        raise ValueError(f"mode {mode!r} is not one of {list(MODES)}")
    entry = dict(entry, df11=version())
    gpus = _read(where)
    gpus.setdefault(gpu, {})[mode] = entry
    _parse(where, json.dumps({"format": FORMAT, "version": FORMAT_VERSION, "gpus": gpus}))
    folder = os.path.dirname(os.path.abspath(where))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".switches-", suffix=".json", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"format": FORMAT, "version": FORMAT_VERSION, "gpus": gpus}, f, indent=1,
                      sort_keys=True)
            f.write("\n")
        os.replace(tmp, where)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    with _lock:
        _cache.pop(where, None)
    return where


def choose(fused: Sequence[Dict[int, float]], decode: Sequence[Dict[int, float]]
           ) -> Tuple[int, List[Tuple[int, float, float]]]:
    """The switch from measured step times (ms by token count): several runs with the fused
    GEMM at every count and several with decode + F.linear, over the counts every run measured.
    Each count compares the slowest fused run with the fastest decode run; the switch is the
    largest count up to which the fused GEMM is faster at every count (0 where it is slower at
    the lowest one). Returns (the switch, [(tokens, slowest fused ms, fastest decode ms)])."""
    runs = list(fused) + list(decode)
    if not fused or not decode:
        raise ValueError("both the fused GEMM's runs and decode + F.linear's are needed")
    counts = sorted(set.intersection(*(set(r) for r in runs)))
    if not counts:
        raise ValueError("no token count is measured by every run")
    rows = [(t, max(r[t] for r in fused), min(r[t] for r in decode)) for t in counts]
    best = 0
    for t, f, d in rows:
        if f >= d:
            break
        best = t
    return best, rows
