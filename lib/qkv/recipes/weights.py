"""Trained weights, cached: train a model once per setting, load it every other time (D2L 11.4, 11.7, 11.8).

Part of the course's machinery beside the library (:mod:`qkv.recipes`), never imported by a concept module. A
section that shows a trained model (the Bahdanau translator of 11.4, the Transformer of 11.7, the ViT of 11.8)
is executed many times: by both editions of the book, by nbval, by the tests and, for every submission, by the
grader. Training each time would cost minutes; :func:`fit_or_load` trains once and then loads the weights.

The weights are stored under a **key** that holds everything that determines them (:mod:`qkv.recipes.keys`):
the model's name and configuration, the seed, the trainer's settings, a fingerprint of the data, the torch version
and a hash of the code (not the docstrings or comments) of every ``qkv`` module that defines the model, its trainer
and its data, so that editing what the model computes, or its recipe, retrains it.

The file is ``trained_dir() / "<name>-<first 16 hex digits of the key's SHA-256>.pt"``; ``trained_dir()`` is
``$QKV_TRAINED_DIR`` or ``qkv.data.cache_dir() / "trained"``. It holds the key itself, the state dict, a SHA-256 of
every tensor's bytes, the training history, its wall time, date and machine (CPUs, torch threads, load). A file
that cannot be read, whose key differs or whose tensors do not match their checksum is reported and the model
trained again. Files are written atomically (a temporary file in the same folder, then :func:`os.replace`),
readable by all (the grader's sandbox runs as another user), under a lock, so that two processes that start
together train once. Where training must not happen (``QKV_NO_TRAIN=1``, which the grader's sandbox sets), a
missing file is an error that says how to make it.

**Smoke runs.** With ``QKV_TRAIN_SMOKE=N`` (a positive integer) every model is trained for one epoch of at most ``N``
training batches (and evaluated on at most ``N`` validation batches), under a key that records ``N``, so a smoke model
is never taken for a real one. The test suite sets it: its notebooks, its release and its own build of the book prove
that every cell runs without paying for every model's full training; the results are meaningless there, and the
benchmarks (``benchmarks/mt.py``, ``benchmarks/vit.py``, ...) and ``make book`` check the real ones. Such a book is
built under ``_build/smoke/`` (``publish.build_book``), never where ``make book`` builds.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import platform
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from qkv._lock import locked
from qkv.recipes.keys import digest, make_key, state_checksum

__all__ = ["Fitted", "NotCached", "fit_or_load", "trained_dir", "smoke_batches", "TRAINED_ENV", "NO_TRAIN_ENV"]

TRAINED_ENV = "QKV_TRAINED_DIR"
#: Set (to anything but "" or "0") where no model may be trained: the grader's sandbox only loads weights.
NO_TRAIN_ENV = "QKV_NO_TRAIN"
SMOKE_ENV = "QKV_TRAIN_SMOKE"


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
    return None


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
    if state_checksum(payload["state"]) != payload["checksum"]:
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
    path = trained_dir() / f"{name}-{digest(key)[:16]}.pt"
    with locked(path):
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
        threads = getattr(trainer, "threads_used", torch.get_num_threads())
        machine = (
            f"{platform.machine()}, {os.cpu_count()} CPUs, {threads} torch threads, "
            f"load average {load:.1f} when training started"
        )
        state = {k: v.detach().to("cpu").clone() for k, v in model.state_dict().items()}
        payload = {
            "key": key,
            "state": state,
            "checksum": state_checksum(state),
            "history": {k: [float(x) for x in v] for k, v in history.items()},
            "seconds": seconds,
            "trained_at": trained_at,
            "machine": machine,
        }
        saved = _write(path, payload, log)
        model.eval()
        log(f"{name}: trained in {seconds:.1f} s" + (f"; weights saved to {path}" if saved else ""))
        return Fitted(model, payload["history"], seconds, trained_at, True, path, key, machine, smoke)
