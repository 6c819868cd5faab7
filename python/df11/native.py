"""A DF11 folder loaded by transformers' own from_pretrained, through the "df11" quantizer
(hf_quantizer.py): `AutoModelForCausalLM.from_pretrained(folder)` after `import df11`.

transformers builds the model on the meta device and calls the quantizer before it reads any
weight. df11 then loads the whole folder into the model, as df11.from_pretrained does
(engine.attach: raw tensors set, coded groups decoded just before use), and leaves transformers
a model whose state dict holds the raw tensors alone:
- the weights the groups code are plain tensor attributes, not parameters (those decoded at
  load too, until finish() makes them parameters again), so transformers neither allocates
  them as missing keys nor initializes them;
- every tensor df11 set is marked initialized (`_is_hf_initialized`), so `_init_weights` keeps
  its values;
- the ties are df11's (made on the loaded tensors), so transformers has none left to make;
- the groups' stored tensors (`<group>.luts`, ...) are keys transformers expects to see unused.
A base model (AutoModel) loads from the folder of a model with a head as transformers loads it
from the BF16 checkpoint: the folder's names lose the base model's prefix and the head is left
out (engine.attach). transformers then reads the raw tensors again (the same bytes, onto the
same devices: the device map is df11's) and computes the buffers it always computes (rotary tables).
"""
from __future__ import annotations

import os
import re
from typing import Dict, Optional

import torch

from . import _capi, engine, loading
from ._tensors import _set_view
from .modules import list_weights

_PART_NAMES = ("luts", "encoded_exponent", "sign_mantissa", "output_positions", "gaps",
               "split_positions")


def check_dtype(dtype) -> torch.dtype:
    """transformers' resolved dtype: DF11 weights decode to bfloat16 exactly."""
    if dtype in (None, torch.bfloat16):
        return torch.bfloat16
    raise ValueError(f"df11: dtype={dtype} (given, or the config's dtype where dtype is 'auto', "
                     "transformers' default): DF11 weights decode to bfloat16 exactly; load "
                     "with dtype=torch.bfloat16")


def folder_of(checkpoint_files) -> str:
    if not checkpoint_files:
        raise ValueError("df11: transformers found no checkpoint files for this model")
    path = os.path.dirname(os.path.abspath(checkpoint_files[0]))
    if not checkpoint_files[0].endswith(".safetensors"):
        raise ValueError(f"df11: {checkpoint_files[0]}: a DF11 folder holds .safetensors shards")
    return path


def _open(path: str, model) -> _capi.Model:
    """The folder; where its config.json holds dfloat11_config alone (the dfloat11 encoder's
    default output, loaded with config= given), the coded weights' shapes are the model's."""
    config_json = loading.read_config(path)
    if "model_type" in config_json or "architectures" in config_json:
        return loading.open_folder(path, model)
    return _capi.Model(path, shapes=loading.model_shapes(model, path))


def _device_of(model, folder: _capi.Model, device_map):
    """device_of(module_name) for transformers' device_map argument (None: the CPU, as
    transformers loads without one)."""
    if device_map is None:
        return lambda name: torch.device("cpu")
    if isinstance(device_map, dict):
        return loading.placement(model, folder, None, device_map, None)
    if device_map in loading.AUTO_MAPS:
        return loading.placement(model, folder, None, "auto", None)
    target = loading.single_device(device_map)
    return lambda name: target


def _full_map(model, device_of) -> Dict[str, str]:
    """The device map transformers places the raw tensors by: each top-level module's device
    (all of the model where one device holds it)."""
    devices = {str(device_of(n)) for n, _ in model.named_modules()}
    if len(devices) == 1:
        return {"": devices.pop()}
    out = {}

    def visit(name, module):
        own = {str(device_of(n)) for n, _ in module.named_modules(prefix=name)}
        if len(own) == 1:
            out[name] = own.pop()
            return
        for child_name, child in module.named_children():
            visit(f"{name}.{child_name}" if name else child_name, child)
    for child_name, child in model.named_children():
        visit(child_name, child)
    return out


def _coded_out_of_state_dict(model, eng) -> list:
    """The weights the groups code that are parameters (a resident head or embedding, decoded
    at load) become plain tensor attributes until finish(), as the per-forward ones already
    are: transformers loads only what the state dict names. Returns (module, attr, parameter)
    for finish() to restore."""
    folder = eng.folder
    names = {eng.model_name(folder.tensor_name(t)) for g in range(folder.group_count())
             for t in folder.group_members(g)}
    plain = {}  # one tensor per parameter object, so that ties stay the same object
    for name, p in model.named_parameters(remove_duplicate=False):
        if name in names and p.device.type != "meta":
            plain[id(p)] = p.detach()
    out = []
    for module in model.modules():
        for attr, p in list(module._parameters.items()):
            if p is not None and id(p) in plain:
                out.append((module, attr, p))
                _set_view(module, attr, plain[id(p)])
    return out


def _restore_parameters(taken: list) -> None:
    """Puts back the parameters _coded_out_of_state_dict took out, each object where it was
    (a tie stays one parameter): the model's parameters and state dict then list them, as
    df11.from_pretrained's models and the BF16 model do."""
    for module, attr, p in taken:
        module.__dict__.pop(attr, None)
        module._parameters[attr] = p


def _mark_initialized(model) -> None:
    for module in model.modules():
        for t in list(module._parameters.values()) + list(module._buffers.values()):
            if t is not None and t.device.type != "meta":
                t._is_hf_initialized = True
        for value in list(vars(module).values()):
            if isinstance(value, torch.Tensor) and value.device.type != "meta":
                value._is_hf_initialized = True


def _raw_transformers_skips(model, eng, checkpoint_files) -> list:
    """The raw tensors df11 set from files of the folder that transformers does not read:
    (model name, tensor). The dfloat11 encoder's `save_single_file=False` writes each coded
    module's group with its other tensors (a block's norms) into a file of its own beside
    model.safetensors, with no index, and transformers reads model.safetensors alone: it would
    take those tensors for missing and initialize them anew, over df11's. They are left out of
    its missing keys (no "newly initialized" report) and put back by finish()."""
    from safetensors import safe_open
    read = set()
    for file in checkpoint_files:
        with safe_open(file, "pt") as f:
            read.update(f.keys())
    folder, out = eng.folder, []
    for t in range(folder.tensor_count()):
        stored = folder.tensor_name(t)
        if folder.tensor_group(t) is not None or stored in read:
            continue
        name = eng.model_name(stored)
        if name is None:
            continue
        try:
            out.append((name, model.get_parameter(name)))
        except AttributeError:
            try:
                out.append((name, model.get_buffer(name)))
            except AttributeError:
                continue  # a tensor the model does not have
    if out:
        missing = set(getattr(model, "_keys_to_ignore_on_load_missing", None) or [])
        missing.add("^(?:" + "|".join(re.escape(name) for name, _ in out) + ")$")
        model._keys_to_ignore_on_load_missing = missing
    return out


def _stored_keys_expected(model, eng) -> None:
    """The groups' stored tensors are read by df11, not by transformers: not unexpected (under
    the names transformers gives them: a base model's without its prefix). Nor are the groups'
    guards, the empty tensors under a member's name (spec/DF11.md 6.5) that make a loader
    without df11 refuse the folder: the weights they name are df11's, not parameters, here."""
    folder = eng.folder
    parts = "|".join(_PART_NAMES)
    names = [folder.group_name(g) for g in range(folder.group_count())]
    groups = "|".join(re.escape(n) for n in names + [eng.model_name(n) for n in names]
                      if n is not None)
    if not groups:
        return
    members = [folder.tensor_name(t) for g in range(folder.group_count())
               for t in folder.group_members(g)]
    guards = "|".join(re.escape(n) for n in members + [eng.model_name(n) for n in members]
                      if n is not None)
    ignored = set(getattr(model, "_keys_to_ignore_on_load_unexpected", None) or [])
    ignored.add(rf"^(?:{groups})\.(?:{parts})$")
    ignored.add(rf"^(?:{guards})$")
    model._keys_to_ignore_on_load_unexpected = ignored


def _new_head(model, path: str):
    """new_parameters(name) for engine.attach: the parameters transformers initializes anew,
    as it does from the BF16 checkpoint, where a class with another head than the folder's
    model loads the folder (AutoModelForSequenceClassification on a causal LM's folder:
    `score`). Those are the parameters outside the base model, where config.json names
    architectures and the model's class is not one of them; a parameter of the folder's own
    model that the folder lacks stays an error."""
    architectures = loading.read_config(path).get("architectures") or []
    prefix = getattr(model, "base_model_prefix", "")
    if (not architectures or type(model).__name__ in architectures or not prefix
            or getattr(model, prefix, None) is None):
        return lambda name: False
    return lambda name: not name.startswith(prefix + ".")


def load(model, checkpoint_files, device_map, placed: dict, mode: str = "decode"):
    """Loads the folder of `checkpoint_files` into transformers' meta-device `model` (before
    transformers reads any weight) and fills `placed`, the device map transformers will use,
    with df11's placement. Returns the engine."""
    path = folder_of(checkpoint_files)
    folder = _open(path, model)
    try:
        device_of = _device_of(model, folder, device_map)
        # transformers builds the model under a meta-device default; df11's host buffers are
        # CPU tensors.
        with torch.device("cpu"):
            eng = engine.attach(model, folder, device_of, mode=mode,
                                new_parameters=_new_head(model, path))
    except BaseException:
        folder.close()
        raise
    placed.clear()
    placed.update(_full_map(model, device_of))
    eng.native_unread = _raw_transformers_skips(model, eng, checkpoint_files)
    eng.native_taken = _coded_out_of_state_dict(model, eng)
    list_weights(model, False)  # until finish(): transformers would take them for missing
    if isinstance(getattr(model, "all_tied_weights_keys", None), dict):
        model.all_tied_weights_keys = {}  # made by engine.attach on the loaded tensors
    _mark_initialized(model)
    _stored_keys_expected(model, eng)
    object.__setattr__(model, "df11", eng)
    return eng


def finish(model, eng) -> None:
    """After transformers' load: generate() checks the decode status at its end, as
    df11.from_pretrained's models do; state_dict() lists the coded weights again, and the
    weights decoded at load are parameters again."""
    _restore_parameters(eng.native_taken)
    eng.native_taken = []
    for name, tensor in eng.native_unread:
        module_name, _, attr = name.rpartition(".")
        module = model.get_submodule(module_name)
        table = module._parameters if attr in module._parameters else module._buffers
        table[attr] = tensor
    eng.native_unread = []
    list_weights(model, True)
    loading.wrap_generate(model, eng)


def placed_map(device_map) -> Optional[dict]:
    """The dict transformers is given as its device map, filled by load()."""
    loading.check_device_map(device_map)
    return {}
