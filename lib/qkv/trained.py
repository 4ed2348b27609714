"""Trained weights, cached: train a model once per setting, load it every other time (D2L 11.4, 11.7, 11.8).

A section that shows a trained model (the Bahdanau translator of 11.4, the Transformer of 11.7, the ViT of 11.8)
is executed many times: by both editions of the book, by nbval, by the tests and, for every submission, by the
grader. Training each time would cost minutes; :func:`fit_or_load` trains once and then loads the weights.

The weights are stored under a **key** that holds everything that determines them:

- the model's name and configuration (a dataclass or a dict), and the seed it is built and trained with;
- the trainer's settings: epochs, gradient clipping, optimiser, learning rate, scheduler, device type;
- a fingerprint of the data (:func:`fingerprint`: every tensor, array, vocabulary and setting of the data module;
  an attribute of a type it cannot hash is an error, never left out);
- the torch version;
- a hash of the source of every ``qkv`` module that defines the model, its trainer and its data
  (:func:`source_hash`), so that editing the model's code or its recipe retrains it.

The file is ``trained_dir() / "<name>-<first 16 hex digits of the key's SHA-256>.pt"``; ``trained_dir()`` is
``$QKV_TRAINED_DIR`` or ``qkv.data.cache_dir() / "trained"``. It holds the key itself, the state dict, a SHA-256 of
every tensor's bytes, the training history, its wall time, date and machine (CPUs, torch threads, load). A file
that cannot be read, whose key differs or whose tensors do not match their checksum is reported and the model
trained again. Files are written atomically (a temporary file in the same folder, then :func:`os.replace`),
readable by all (the grader's sandbox runs as another user), under a lock, so that two processes that start
together train once. Where training must not happen (the grader's sandbox, which sets ``NBGRADER_EXECUTION``, or
``QKV_NO_TRAIN=1``), a missing file is an error that says how to make it.

**Smoke runs.** With ``QKV_TRAIN_SMOKE=N`` (a positive integer) every model is trained for one epoch of at most ``N``
training batches (and evaluated on at most ``N`` validation batches), under a key that records ``N``, so a smoke model
is never taken for a real one. The test suite sets it: its notebooks, its release and its own build of the book prove
that every cell runs without paying for every model's full training; the results are meaningless there, and the
benchmarks (``benchmarks/mt.py``, ``benchmarks/vit.py``, ...) and ``make book`` check the real ones. Such a book is
built under ``_build/smoke/`` (``publish.build_book``), never where ``make book`` builds.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import hashlib
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

__all__ = [
    "Fitted",
    "NotCached",
    "fit_or_load",
    "fingerprint",
    "source_hash",
    "trained_dir",
    "make_key",
    "smoke_batches",
    "WARM",
]

FORMAT = 1
TRAINED_ENV = "QKV_TRAINED_DIR"
NO_TRAIN_ENV = "QKV_NO_TRAIN"
SMOKE_ENV = "QKV_TRAIN_SMOKE"
#: qkv modules that every trained model depends on (the trainer); the model's and the data's own are added.
BASE_MODULES = ("qkv.training", "qkv.trained")
#: The recipes ``make release`` runs before the course is graded, so that the grader only loads weights:
#: ``"module:function"``, each function callable without arguments. Section 11.8 adds its own.
WARM = (
    "qkv.translate:train_bahdanau",
    "qkv.figures.multihead_attention:trained_offset_reader",
    "qkv.translate:train_transformer",
    "qkv.lm:warm",
    "qkv.recipes.vit:train_fashion_mnist",
    "qkv.recipes.vit:train_cnn",
)


class NotCached(RuntimeError):
    """The weights are not cached and this process must not train (the grader's sandbox)."""


@dataclass
class Fitted:
    """A trained model and where it came from."""

    model: nn.Module
    history: dict = field(repr=False)
    seconds: float  # wall time of the original training
    trained_at: str  # when it was trained (ISO 8601, UTC)
    trained: bool  # True if this call trained it, False if it was loaded
    path: Path
    key: dict = field(repr=False)
    machine: str = ""  # where and how it was trained: CPU count, torch threads, load average
    smoke: int = 0  # > 0: a smoke run (QKV_TRAIN_SMOKE): one epoch of at most this many batches, results meaningless

    @property
    def complete(self) -> bool:
        """Whether the model was trained as its recipe says (not a shortened smoke run): what a page's claims about
        a trained model are asserted on."""
        return not self.smoke


def trained_dir() -> Path:
    """Where trained weights live: ``$QKV_TRAINED_DIR``, else ``qkv.data.cache_dir() / "trained"``."""
    env = os.environ.get(TRAINED_ENV)
    if env:
        return Path(env).expanduser()
    from qkv.data import cache_dir

    return cache_dir() / "trained"


def smoke_batches() -> int:
    """``$QKV_TRAIN_SMOKE`` as a number of batches (0 when unset: train for real); see the module's docstring."""
    value = os.environ.get(SMOKE_ENV, "").strip()
    if value in ("", "0"):
        return 0
    try:
        n = int(value)
    except ValueError:
        n = -1
    if n < 1:
        raise ValueError(
            f"{SMOKE_ENV}={value!r} must be a positive number of batches (or unset, or 0, to train for real)"
        )
    return n


class _FirstBatches:
    """A data loader cut to its first ``n`` batches (a smoke run)."""

    def __init__(self, loader, n: int):
        self.loader, self.n = loader, n

    def __iter__(self):
        batches = iter(self.loader)
        for _ in range(self.n):  # fetch no batch beyond the n-th (a loader may do work per batch)
            try:
                yield next(batches)
            except StopIteration:
                return

    def __len__(self) -> int:
        try:
            return min(self.n, len(self.loader))
        except TypeError:  # a loader without a length
            return self.n


class _SmokeData:
    """``data`` with every loader cut to ``n`` batches; other attributes are ``data``'s own."""

    def __init__(self, data, n: int):
        self._data, self._n = data, n

    def __getattr__(self, name):
        return getattr(self._data, name)

    def train_dataloader(self):
        return _FirstBatches(self._data.train_dataloader(), self._n)

    def val_dataloader(self):
        if not callable(getattr(self._data, "val_dataloader", None)):
            return None
        loader = self._data.val_dataloader()
        return None if loader is None else _FirstBatches(loader, self._n)


def _smoke(trainer, data, n: int):
    """The trainer (a copy, one epoch) and the data (loaders cut to ``n`` batches) of a smoke run."""
    import copy

    trainer = copy.copy(trainer)
    trainer.max_epochs = 1
    return trainer, _SmokeData(data, n)


def _training_forbidden() -> str | None:
    if os.environ.get(NO_TRAIN_ENV, "") not in ("", "0"):
        return f"{NO_TRAIN_ENV} is set"
    if os.environ.get("NBGRADER_EXECUTION"):
        return "this is a grading run (NBGRADER_EXECUTION is set)"
    return None


def _module_file(name: str) -> Path:
    module = sys.modules.get(name)
    if module is None:
        import importlib

        module = importlib.import_module(name)
    path = getattr(module, "__file__", None)
    if not path:
        raise ValueError(f"module {name} has no source file to hash")
    return Path(path)


def _source_of(name: str) -> bytes:
    """The source that counts for module ``name``: its whole file, except for this module, of which only
    :func:`fit_or_load` (the seeding, the build and the training) determines weights; an edit of :data:`WARM` or
    of a message must not throw every cached model away."""
    if name == __name__:
        import inspect

        return inspect.getsource(fit_or_load).encode()
    return _module_file(name).read_bytes()


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


def _digest(key: dict) -> str:
    return hashlib.sha256(json.dumps(key, sort_keys=True, default=repr).encode()).hexdigest()


def _state_checksum(state: dict) -> str:
    h = hashlib.sha256()
    for k in sorted(state):
        h.update(k.encode() + b"\0")
        _hash_value(h, state[k], set())
    return h.hexdigest()


@contextlib.contextmanager
def _lock(path: Path):
    """An exclusive lock on ``path`` + ".lock" where the folder is writable (nothing where it is not)."""
    try:
        import fcntl

        path.parent.mkdir(parents=True, exist_ok=True)
        f = open(str(path) + ".lock", "a")  # noqa: SIM115
    except (ImportError, OSError):
        yield
        return
    try:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield
    finally:
        f.close()


def _read(path: Path, key: dict) -> dict:
    """The payload of ``path`` if it is whole and of this key; else ValueError saying what is wrong."""
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # noqa: BLE001 (a damaged file raises many kinds)
        first = (str(err).strip().splitlines() or [""])[0][:160]
        raise ValueError(f"it cannot be read ({type(err).__name__}: {first})") from err
    if not isinstance(payload, dict) or not {"key", "state", "checksum"} <= payload.keys():
        raise ValueError("it is not a file of trained weights")
    if payload["key"] != key:
        raise ValueError("its key differs from this setting's")
    if _state_checksum(payload["state"]) != payload["checksum"]:
        raise ValueError("its weights do not match their checksum")
    return payload


def _write(path: Path, payload: dict, log) -> bool:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as err:
        log(f"could not save the weights in {path.parent} ({err}); they are kept in memory only")
        return False
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(payload, f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # readable by the grader's sandbox, which runs as another user
        os.replace(tmp, path)
        return True
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def fit_or_load(
    name: str,
    build: Callable[[], nn.Module],
    data,
    trainer,
    *,
    config,
    modules=(),
    log: Callable[[str], None] = print,
) -> Fitted:
    """Train ``build()`` on ``data`` with ``trainer``, or load the weights of an identical earlier run.

    Args:
        name: a short name for the model, used in the file name and the messages ("bahdanau").
        build: makes the untrained model; it is called after ``torch.manual_seed(trainer.seed)``, so the initial
            weights repeat. (The trainer must have a seed: without one the weights would not be reproducible.)
        data: the data module (``train_dataloader()``, ...); see :func:`fingerprint`.
        trainer: a :class:`qkv.training.Trainer`.
        config: the model's hyper-parameters, a dataclass or a dict, part of the key.
        modules: more module names whose source the weights depend on (the model's ``qkv`` modules, the data's
            and the trainer's are found by themselves).
        log: where the one-line message goes (``print``).

    Returns a :class:`Fitted`: the model (in evaluation mode, on ``trainer.device``), the training history, the
    original training's wall time and date, whether this call trained, the file and the key.
    """
    if trainer.seed is None:
        raise ValueError("fit_or_load needs a Trainer with a seed (Trainer(..., seed=0)): its weights must repeat")
    torch.manual_seed(trainer.seed)
    model = build()
    if not isinstance(model, nn.Module):
        raise TypeError(f"build() must return a torch.nn.Module, got {type(model).__name__}")
    smoke = smoke_batches()
    key = make_key(name, config, trainer, data, model, modules)
    if smoke:
        trainer, data = _smoke(trainer, data, smoke)
        key["smoke"] = smoke
        name = f"{name}-smoke"
    path = trained_dir() / f"{name}-{_digest(key)[:16]}.pt"
    with _lock(path):
        if path.exists():
            try:
                payload = _read(path, key)
                model.load_state_dict(payload["state"])
            except (ValueError, RuntimeError) as err:
                log(f"{name}: the cached weights {path} are damaged ({err}); training again")
            else:
                model.to(trainer.device).eval()
                log(
                    f"{name}: loaded trained weights from {path} (trained {payload['trained_at']} in "
                    f"{payload['seconds']:.1f} s on {key['trainer']['device']}); nothing was trained now"
                )
                machine = payload.get("machine", "")
                return Fitted(
                    model,
                    payload["history"],
                    payload["seconds"],
                    payload["trained_at"],
                    False,
                    path,
                    key,
                    machine,
                    smoke,
                )
        forbidden = _training_forbidden()
        if forbidden:
            raise NotCached(
                f"{name}: no trained weights at {path}, and {forbidden}, so nothing is trained here. "
                "Build them first where training is allowed: run the section's notebook once, or `make release`."
            )
        if smoke:
            log(f"{name}: smoke run ({SMOKE_ENV}={smoke}): one epoch of {smoke} batches, results meaningless")
        else:
            log(f"{name}: no cached weights for this setting; training ({trainer.max_epochs} epochs)")
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        start = time.perf_counter()
        history = trainer.fit(model, data)
        seconds = time.perf_counter() - start
        trained_at = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
        machine = (
            f"{platform.machine()}, {os.cpu_count()} CPUs, {torch.get_num_threads()} torch threads, "
            f"load average {load:.1f} when training started"
        )
        state = {k: v.detach().to("cpu").clone() for k, v in model.state_dict().items()}
        payload = {
            "key": key,
            "state": state,
            "checksum": _state_checksum(state),
            "history": {k: [float(x) for x in v] for k, v in history.items()},
            "seconds": seconds,
            "trained_at": trained_at,
            "machine": machine,
        }
        saved = _write(path, payload, log)
        model.eval()
        log(f"{name}: trained in {seconds:.1f} s" + (f"; weights saved to {path}" if saved else ""))
        return Fitted(model, payload["history"], seconds, trained_at, True, path, key, machine, smoke)
