"""df11.compress: a model or state dict in memory -> a DF11 folder, through the tools library
(libdf11-tools, df11_tools.h: the same C++ pipeline as `df11 compress`), without writing the
BF16 files first.

A transformers or diffusers model is described exactly as its save_pretrained would write it:
save_pretrained runs (config.json, generation_config.json and the index are written to a
temporary folder as usual) with the safetensors writer it calls replaced by one that keeps the
shard's tensors instead of writing them; so tied weights are dropped, weight conversions are
reverted, shards are split and named, as save_pretrained does. Each shard's tensors are then
ordered as the safetensors library orders them in a file. The DF11 folder is the one
`df11 compress` writes for the folder save_pretrained would have written, byte for byte.

CPU tensors are read where they are (contiguous bytes, no copy); tensors elsewhere (CUDA) are
copied to host memory by the library's reader calls, at most 64 MiB at a time, only the groups
being coded (transformer blocks) staged at once.
"""
from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import json
import os
import struct
import tempfile
import warnings
from typing import Callable, Dict, List, Mapping, Optional, Tuple, Union

import torch

from . import _tools
from ._tensors import SAFETENSORS_DTYPES


@dataclasses.dataclass
class CompressResult:
    """What df11.compress wrote (the figures `df11 compress` prints)."""
    out_dir: str
    input_bytes: int      # the BF16 .safetensors files, as they would be on disk
    output_bytes: int     # the DF11 .safetensors files
    shards: int
    tensors: int
    tensors_coded: int
    groups_coded: int
    groups_raw: int
    warnings: List[str]   # groups stored unchanged, Inf/NaN tensors, notes (also warned)

    @property
    def ratio(self) -> float:
        return self.output_bytes / self.input_bytes if self.input_bytes else 0.0


# A shard as the library takes it: file name, {tensor name: tensor}, __metadata__.
_Shard = Tuple[str, Dict[str, torch.Tensor], Dict[str, str]]


def compress(model_or_state_dict, out_dir: Union[str, os.PathLike], *, config=None,
             files: Optional[Mapping[str, Union[bytes, str]]] = None, tokenizer=None,
             max_shard_size: Union[int, str, None] = None, group_by: str = "block",
             threads: int = 0, force: bool = False, source_sha256: bool = False,
             progress: Optional[Callable[[str, int, int], object]] = None) -> CompressResult:
    """Writes the DF11 folder `out_dir` for a model or a state dict, as `df11 compress` writes
    it for the same checkpoint saved as files, without writing those files.

    model_or_state_dict: a transformers PreTrainedModel or a diffusers ModelMixin (its
        save_pretrained decides what is saved: tied weights, names, shards, config files), or
        a state dict {name: tensor} with `config`.
    config: for a state dict, the model's config: a dict, JSON text, or a transformers /
        diffusers config object (written as its save_pretrained / save_config writes it).
    files: more files of the folder by relative path (tokenizer files, a README...).
    tokenizer: a tokenizer (or processor) whose save_pretrained files join the folder.
    max_shard_size: as save_pretrained takes it ("5GB", bytes); default: save_pretrained's
        own default for a model, one shard for a state dict.
    group_by: "block" (default: one group per transformer block) or "tensor".
    threads: worker threads (0: all cores). force: replace an existing out_dir (only once the
        new one is complete).
    source_sha256: also record each shard file's SHA-256, as `df11 compress --source-sha256`
        (provenance; restoring is checked without it; a third read of every byte).
    progress: progress(phase, done, total) in bytes; returning True stops (Df11Error).

    A state dict: tensors sharing memory (a tied lm_head and the embedding) are stored once,
    under the name that comes first (model.state_dict() lists the input embedding before the
    head, so the head is dropped as save_pretrained drops it; df11 then writes the head's coded
    copy if config.json says tie_word_embeddings, as `df11 compress` does); shards are split in
    order at max_shard_size as huggingface_hub splits them, each shard's tensors in the state
    dict's order, __metadata__ {"format": "pt"}.

    Raises Df11Error (status and a message naming the tensor or file) for unusable input or an
    I/O failure; the folder is then not created. Returns a CompressResult.
    """
    out_dir = os.fspath(out_dir)
    if group_by not in ("block", "tensor"):
        raise ValueError(f"df11.compress: group_by must be 'block' or 'tensor', not {group_by!r}")
    extra: Dict[str, bytes] = {}
    for name, data in (files or {}).items():
        extra[name] = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    if tokenizer is not None:
        extra.update(_saved_files(tokenizer.save_pretrained))

    if isinstance(model_or_state_dict, torch.nn.Module):
        if config is not None:
            raise TypeError("df11.compress: `config` is for a state dict; a model has its own")
        if not hasattr(model_or_state_dict, "save_pretrained"):
            raise TypeError("df11.compress: this module has no save_pretrained (not a "
                            "transformers or diffusers model): pass model.state_dict() and "
                            "config=")
        shards, saved = _capture_save_pretrained(model_or_state_dict, max_shard_size)
        shards = [(file, _safetensors_order(tensors, metadata), metadata)
                  for file, tensors, metadata in shards]
        library_shards = False
    elif isinstance(model_or_state_dict, Mapping):
        if config is None:
            raise TypeError("df11.compress: a state dict needs config= (the model's config.json)")
        saved = {"config.json": _config_text(config)}
        shards = [(None, _unique_storage(model_or_state_dict), {})]
        library_shards = True
    else:
        raise TypeError("df11.compress: expected a model (torch.nn.Module) or a state dict, not "
                        f"{type(model_or_state_dict).__name__}")
    for name, data in extra.items():
        if name in saved:
            raise ValueError(f"df11.compress: file {name!r} is written by save_pretrained already")
        saved[name] = data

    keep = []  # CPU copies made here (non-contiguous tensors) live until the call returns
    with _tools.Checkpoint() as ck:
        for file, tensors, metadata in shards:
            for name, t in tensors.items():
                _add(ck, file, name, t, keep)
            for key, value in metadata.items():
                ck.set_shard_metadata(file, key, value)
        for name, data in sorted(saved.items()):
            ck.add_file(name, data)
        if library_shards and max_shard_size is not None:
            ck.set_option(_tools.COMPRESS_SHARD_BYTES, _size_bytes(max_shard_size))
        ck.set_option(_tools.COMPRESS_GROUP_BY, 0 if group_by == "block" else 1)
        ck.set_option(_tools.COMPRESS_THREADS, int(threads))
        ck.set_option(_tools.COMPRESS_FORCE, 1 if force else 0)
        ck.set_option(_tools.COMPRESS_SOURCE_SHA256, 1 if source_sha256 else 0)
        ck.compress(out_dir, progress)
        said = ck.warnings()
        result = CompressResult(
            out_dir=out_dir, input_bytes=ck.result(_tools.RESULT_INPUT_BYTES),
            output_bytes=ck.result(_tools.RESULT_OUTPUT_BYTES),
            shards=ck.result(_tools.RESULT_SHARDS), tensors=ck.result(_tools.RESULT_TENSORS),
            tensors_coded=ck.result(_tools.RESULT_TENSORS_CODED),
            groups_coded=ck.result(_tools.RESULT_GROUPS_CODED),
            groups_raw=ck.result(_tools.RESULT_GROUPS_RAW), warnings=said)
    for line in said:
        warnings.warn(f"df11.compress: {line}", stacklevel=2)
    return result


def _add(ck: _tools.Checkpoint, file: Optional[str], name: str, t: torch.Tensor,
         keep: list) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"df11.compress: '{name}' is a {type(t).__name__}, not a tensor")
    if t.device.type == "meta":
        raise ValueError(f"df11.compress: tensor '{name}' is on the meta device (its weights "
                         "are not loaded)")
    dtype = SAFETENSORS_DTYPES.get(t.dtype)
    if dtype is None:
        raise ValueError(f"df11.compress: tensor '{name}': dtype {t.dtype} has no safetensors "
                         "name")
    shape = list(t.shape)
    nbytes = t.numel() * t.element_size()
    if _in_host_memory(t):
        if not t.is_contiguous():
            t = t.contiguous()
            keep.append(t)
        ck.add_tensor(file, name, dtype, shape, t.data_ptr(), nbytes)
        return
    # Elsewhere (a GPU): the library asks for bytes when it needs them, 64 MiB at most.
    flat = t.detach().contiguous().reshape(-1).view(torch.uint8)
    keep.append(flat)

    def read(offset: int, dst: int, size: int) -> None:
        out = torch.frombuffer((ctypes.c_uint8 * size).from_address(dst), dtype=torch.uint8)
        out.copy_(flat[offset:offset + size])

    ck.add_tensor_reader(file, name, dtype, shape, nbytes, read)


def _in_host_memory(t: torch.Tensor) -> bool:
    """Bytes the library can read where they are; others (CUDA) go through its reader."""
    return t.device.type == "cpu"


@contextlib.contextmanager
def _kept_save_file(kept: List[_Shard]):
    """transformers and diffusers write each shard with safetensors' save_file (transformers
    as modeling_utils.safe_save_file, diffusers as safetensors.torch.save_file): both keep
    the shard instead, for the duration."""
    import safetensors.torch

    def keep(tensors, filename, metadata=None):
        kept.append((os.path.basename(os.fspath(filename)), dict(tensors),
                     {str(k): str(v) for k, v in (metadata or {}).items()}))

    targets = [(safetensors.torch, "save_file")]
    try:
        import transformers.modeling_utils as modeling_utils
        if hasattr(modeling_utils, "safe_save_file"):
            targets.append((modeling_utils, "safe_save_file"))
    except ImportError:
        pass
    saved = [(module, attr, getattr(module, attr)) for module, attr in targets]
    try:
        for module, attr, _ in saved:
            setattr(module, attr, keep)
        yield
    finally:
        for module, attr, original in saved:
            setattr(module, attr, original)


def _capture_save_pretrained(model, max_shard_size) -> Tuple[List[_Shard], Dict[str, bytes]]:
    """What model.save_pretrained writes: its shards (kept, not written) and its other files."""
    kept: List[_Shard] = []
    kwargs = {} if max_shard_size is None else {"max_shard_size": max_shard_size}
    with tempfile.TemporaryDirectory(prefix="df11-compress-") as tmp:
        with _kept_save_file(kept):
            model.save_pretrained(tmp, **kwargs)
        files = _read_tree(tmp)
    written = [name for name in files if name.endswith(".safetensors")]
    if written or not kept:
        raise RuntimeError("df11.compress: save_pretrained of this model "
                           f"({type(model).__name__}) did not hand its shards to safetensors' "
                           "save_file (it wrote " + (", ".join(written) or "no shard") +
                           "): this version of transformers/diffusers is not supported; pass "
                           "model.state_dict() and config= instead")
    return kept, files


def _saved_files(save: Callable[[str], object]) -> Dict[str, bytes]:
    with tempfile.TemporaryDirectory(prefix="df11-compress-") as tmp:
        save(tmp)
        return _read_tree(tmp)


def _read_tree(root: str) -> Dict[str, bytes]:
    files = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                files[os.path.relpath(path, root).replace(os.sep, "/")] = f.read()
    return files


def _safetensors_order(tensors: Dict[str, torch.Tensor],
                       metadata: Dict[str, str]) -> Dict[str, torch.Tensor]:
    """The shard's tensors in the order the safetensors library lays them out in a file (it
    sorts them: by dtype, then name), asked of the library itself on one-element stand-ins."""
    from safetensors.torch import save
    probe = save({name: torch.zeros(1, dtype=t.dtype) for name, t in tensors.items()},
                 metadata=metadata or None)
    (n,) = struct.unpack("<Q", probe[:8])
    header = json.loads(probe[8:8 + n])
    header.pop("__metadata__", None)
    order = sorted(header, key=lambda name: header[name]["data_offsets"][0])
    return {name: tensors[name] for name in order}


def _unique_storage(state_dict: Mapping[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
    """The state dict with tensors that share memory stored once, under the first name."""
    seen = {}
    out = {}
    for name, t in state_dict.items():
        if isinstance(t, torch.Tensor) and t.device.type != "meta" and t.numel() > 0:
            key = (t.device, t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape),
                   tuple(t.stride()), t.dtype)
            if key in seen:
                continue
            seen[key] = name
        out[name] = t
    return out


def _config_text(config) -> bytes:
    if isinstance(config, (bytes, str)):
        text = config.decode("utf-8") if isinstance(config, bytes) else config
        json.loads(text)  # must be JSON
        return text.encode("utf-8")
    if isinstance(config, Mapping):
        return (json.dumps(dict(config), indent=2, sort_keys=True) + "\n").encode("utf-8")
    save = getattr(config, "save_pretrained", None) or getattr(config, "save_config", None)
    if save is None:
        raise TypeError("df11.compress: config must be a dict, JSON text or a config object "
                        f"with save_pretrained, not {type(config).__name__}")
    files = _saved_files(save)
    if "config.json" not in files:
        raise ValueError("df11.compress: the config object's save wrote no config.json")
    return files["config.json"]


def _size_bytes(size: Union[int, str]) -> int:
    """A size as save_pretrained takes it: bytes, or "5GB" / "500MB" / "10KB" (powers of 10,
    as huggingface_hub parses them)."""
    if isinstance(size, int):
        return size
    text = size.strip().upper()
    for unit, factor in (("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("KB", 10**3)):
        if text.endswith(unit):
            return int(float(text[:-len(unit)]) * factor)
    if text.endswith("B"):
        text = text[:-1]
    return int(text)
