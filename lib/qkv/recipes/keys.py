"""The key of a trained model: everything that determines its weights (D2L 11.4, 11.7, 11.8; the course's cache).

:func:`make_key` gathers the model's name and configuration, the trainer's settings, a fingerprint of the data
(:func:`fingerprint`), the torch version and a hash of the code of every ``qkv`` module the model, its data and its
trainer are defined in (:func:`source_hash`). The code is hashed as a syntax tree without docstrings or comments
(:func:`code_of`), so that editing what a module computes trains its models again, and editing how it is explained
does not. :mod:`qkv.recipes.weights` files the weights under this key.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import json
import sys
import textwrap
from pathlib import Path

import numpy as np
import torch
from torch import nn

__all__ = ["make_key", "fingerprint", "source_hash", "code_of", "digest", "state_checksum"]

#: The version of the key's layout: a change of it makes every earlier file a stranger.
FORMAT = 2
#: The module that trains or loads (:func:`qkv.recipes.weights.fit_or_load`): only that function of it counts.
WEIGHTS_MODULE = "qkv.recipes.weights"
#: qkv modules that every trained model depends on (the trainer and the training function); the model's and the
#: data's own are added.
BASE_MODULES = ("qkv.training", WEIGHTS_MODULE)


def _module_file(name: str) -> Path:
    module = sys.modules.get(name)
    if module is None:
        import importlib

        module = importlib.import_module(name)
    path = getattr(module, "__file__", None)
    if not path:
        raise ValueError(f"module {name} has no source file to hash")
    return Path(path)


def _without_docstrings(tree: ast.AST) -> ast.AST:
    """``tree`` with the docstring of every module, class and function taken out (an empty body gets ``pass``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
                if isinstance(body[0].value.value, str):
                    node.body = body[1:] or [ast.Pass()]
    return tree


def code_of(source: str) -> bytes:
    """What of Python ``source`` determines what it computes: its syntax tree without docstrings, comments,
    layout or line numbers (``ast.dump``), so that a docstring fix or a reflowed line retrains nothing."""
    return ast.dump(_without_docstrings(ast.parse(source)), include_attributes=False).encode()


def _source_of(name: str) -> bytes:
    """The code that counts for module ``name`` (:func:`code_of`): its whole file, except for the module of
    :func:`qkv.recipes.weights.fit_or_load`, of which only that function (the seeding, the build and the training)
    determines weights; an edit of a message there must not throw every cached model away."""
    import inspect

    if name == WEIGHTS_MODULE:
        from qkv.recipes import weights

        return code_of(textwrap.dedent(inspect.getsource(weights.fit_or_load)))
    return code_of(_module_file(name).read_text(encoding="utf-8"))


def source_hash(modules) -> str:
    """SHA-256 over the names and sources of ``modules`` (module names), in sorted order (see :func:`_source_of`)."""
    h = hashlib.sha256()
    for name in sorted(set(modules)):
        h.update(name.encode() + b"\0" + _source_of(name) + b"\0")
    return h.hexdigest()


def _hash_value(h, value, seen: set, where: str = "the value") -> None:
    """Feed a data module's attribute into ``h``: tensors and arrays by dtype, shape and bytes, containers item by
    item, dataclasses and ``qkv`` objects attribute by attribute. Any other type is a TypeError naming ``where``:
    data left out of the key would let a change of it reuse stale weights."""
    if id(value) in seen:
        return
    if isinstance(value, torch.Tensor):
        t = value.detach().to("cpu").contiguous()
        h.update(f"tensor {t.dtype} {tuple(t.shape)}\0".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    elif isinstance(value, (str, int, float, bool, type(None))):
        h.update(f"{type(value).__name__} {value!r}\0".encode())
    elif isinstance(value, (list, tuple)):
        seen.add(id(value))
        h.update(f"seq {len(value)}\0".encode())
        for i, item in enumerate(value):
            _hash_value(h, item, seen, f"{where}[{i}]")
    elif isinstance(value, dict):
        seen.add(id(value))
        h.update(f"dict {len(value)}\0".encode())
        for k in sorted(value, key=repr):
            _hash_value(h, k, seen, f"a key of {where}")
            _hash_value(h, value[k], seen, f"{where}[{k!r}]")
    elif hasattr(value, "idx_to_token"):  # a vocabulary: its numbering
        _hash_value(h, list(value.idx_to_token), seen, f"{where}.idx_to_token")
    elif isinstance(value, Path):
        h.update(f"path {value.name}\0".encode())  # where a file sits does not matter, its content does
    elif isinstance(value, np.ndarray | np.generic):
        a = np.asarray(value)
        if a.dtype.hasobject:  # its bytes would be addresses: hash the objects themselves
            h.update(f"object array {a.shape}\0".encode())
            _hash_value(h, a.reshape(-1).tolist(), seen, where)
        else:
            h.update(f"array {a.dtype.str} {a.shape}\0".encode())
            h.update(np.ascontiguousarray(a).tobytes())
    elif isinstance(value, (set, frozenset)):
        h.update(f"set {len(value)}\0".encode())
        for item in sorted(value, key=repr):
            _hash_value(h, item, seen, f"an item of {where}")
    elif isinstance(value, (bytes, torch.dtype, torch.device)):
        h.update(f"{type(value).__name__} {value!r}\0".encode())
    elif callable(getattr(value, "fingerprint", None)):  # an object that says what determines it
        h.update(f"fingerprint {value.fingerprint()}\0".encode())
    elif (dataclasses.is_dataclass(value) and not isinstance(value, type)) or (
        type(value).__module__.startswith("qkv.") and hasattr(value, "__dict__")
    ):
        seen.add(id(value))  # a dataclass (an OffsetTask) or a data holder of ours (an ImageSet): what it holds
        h.update(f"object {type(value).__module__}.{type(value).__qualname__}\0".encode())
        fields = dataclasses.fields(value) if dataclasses.is_dataclass(value) else ()
        attrs = {f.name: getattr(value, f.name) for f in fields} if fields else vars(value)
        for name in sorted(attrs):
            h.update(f"attr {name}\0".encode())
            _hash_value(h, attrs[name], seen, f"{where}.{name}")
    else:
        raise TypeError(
            f"cannot fingerprint {where}, a {type(value).__module__}.{type(value).__qualname__}: the key of trained "
            "weights holds tensors, arrays, numbers, strings, paths, vocabularies, containers of these, dataclasses "
            "and qkv objects, and leaving it out would reuse stale weights when it changes. Hold the data in one of "
            "those types, or give the data module a fingerprint() method that returns a string of all it holds"
        )


def fingerprint(data) -> str:
    """A SHA-256 of a data module: its ``fingerprint()`` if it has one, else every attribute (tensors and arrays by
    content, vocabularies, numbers, strings, containers, dataclasses and qkv objects, see :func:`_hash_value`; so
    the batch size and the split count count, as do the examples themselves). An attribute of another type is a
    TypeError: leaving it out would reuse stale weights when it changes."""
    own = getattr(data, "fingerprint", None)
    if callable(own):
        return str(own())
    attrs = vars(data) if hasattr(data, "__dict__") else {}
    if not attrs:
        raise TypeError(
            f"cannot fingerprint {type(data).__name__}: give it a fingerprint() method or attributes that hold "
            "its tensors"
        )
    h = hashlib.sha256(f"{type(data).__module__}.{type(data).__qualname__}\0".encode())
    for name in sorted(attrs):
        h.update(f"attr {name}\0".encode())
        _hash_value(h, attrs[name], set(), f"{type(data).__name__}.{name}")
    return h.hexdigest()


def _config_dict(config) -> dict:
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        return {"class": type(config).__qualname__, **dataclasses.asdict(config)}
    if isinstance(config, dict):
        return dict(config)
    raise TypeError(f"config must be a dataclass instance or a dict, got {type(config).__name__}")


def _function_name(function) -> str | None:
    """A function's ``module.qualname`` (a name, not an address, so that the key repeats); None stays None."""
    if function is None or isinstance(function, str):
        return function
    return f"{getattr(function, '__module__', '?')}.{getattr(function, '__qualname__', repr(function))}"


def _trainer_dict(trainer) -> dict:
    return {
        "max_epochs": trainer.max_epochs,
        "gradient_clip_val": trainer.gradient_clip_val,
        "seed": trainer.seed,
        "optimizer": _function_name(trainer.optimizer),
        "lr": trainer.lr,
        "scheduler": _function_name(getattr(trainer, "scheduler", None)),
        "device": trainer.device.type,
    }


def _qkv_modules(model: nn.Module, data, trainer=None) -> set[str]:
    names = set(BASE_MODULES)
    classes = [type(m) for m in model.modules()] + [type(data), type(trainer)]
    for klass in {k for c in classes for k in c.__mro__}:  # a Trainer subclass trains its own way: its module counts
        if klass.__module__.startswith("qkv."):
            names.add(klass.__module__)
    if any(n.startswith("qkv.data") for n in names):
        names |= {"qkv.data.vocab", "qkv.data._fetch"}
    return names


def make_key(name: str, config, trainer, data, model: nn.Module, modules=()) -> dict:
    """The key of a trained model: everything that determines its weights (see the module's docstring)."""
    mods = _qkv_modules(model, data, trainer) | set(modules)
    return {
        "format": FORMAT,
        "name": name,
        "config": _config_dict(config),
        "trainer": _trainer_dict(trainer),
        "data": fingerprint(data),
        "torch": str(torch.__version__),
        "modules": sorted(mods),
        "source": source_hash(mods),
    }


def digest(key: dict) -> str:
    return hashlib.sha256(json.dumps(key, sort_keys=True, default=repr).encode()).hexdigest()


def state_checksum(state: dict) -> str:
    h = hashlib.sha256()
    for k in sorted(state):
        h.update(k.encode() + b"\0")
        _hash_value(h, state[k], set())
    return h.hexdigest()
