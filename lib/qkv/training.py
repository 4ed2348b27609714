"""A small trainer for the course's models, after D2L's ``Trainer`` (D2L 3.2.4).

``Trainer(max_epochs, ...).fit(model, data)`` runs the usual loop: for each
batch ``(*inputs, Y)`` from ``data.train_dataloader()`` it computes
``Y_hat = model(*inputs)`` and ``loss = model.loss(Y_hat, Y)``, back-propagates,
optionally clips the gradient's global norm (D2L 9.5.3), steps the
optimiser and, if it has one, the learning-rate scheduler; after each epoch
it measures the loss on ``data.val_dataloader()`` without gradients, in
evaluation mode. The per-epoch losses are kept in
``trainer.history`` and drawn by ``trainer.plot()``. :func:`evaluating` is that
evaluation mode as a ``with`` block, for every ``qkv`` function that evaluates,
generates or decodes: it gives the model back the mode it had.

Unlike D2L's trainer it does not need the model to subclass a course base
class: any ``nn.Module`` works, with ``loss`` and ``configure_optimizers``
optional (cross-entropy over the last axis, and Adam or SGD with ``lr``).
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import sys
import time
import warnings

import torch
from torch import nn
from torch.nn import functional as F
from torch.nn.parameter import is_lazy
from tqdm.auto import tqdm

__all__ = ["resolve_device", "clip_gradients", "evaluating", "fusable", "busy_cores", "training_threads", "Trainer"]

OPTIMIZERS = {"adam": torch.optim.Adam, "sgd": torch.optim.SGD}
#: The lists of ``Trainer.history``, one entry per epoch each.
HISTORY = ("epoch", "train_loss", "val_loss", "seconds", "train_seconds", "cpu_seconds")


def busy_cores(window: float = 0.25) -> float | None:
    """How many of the machine's cores other work keeps busy now, from ``/proc/stat`` over ``window`` seconds
    (Linux; ``None`` where there is no ``/proc/stat``). Called while this process is idle, before training."""

    def sample() -> tuple[int, int]:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:9]]  # user nice system idle iowait irq softirq steal
        return sum(fields), fields[3] + fields[4]

    try:
        total0, idle0 = sample()
        time.sleep(window)
        total1, idle1 = sample()
    except (OSError, ValueError, IndexError):
        return None
    if total1 <= total0:
        return None
    return (os.cpu_count() or 1) * (1 - (idle1 - idle0) / (total1 - total0))


def training_threads(busy: float | None = None) -> int:
    """The CPU threads to train with now: torch's number (``torch.get_num_threads()``, which ``OMP_NUM_THREADS``
    sets), less the cores that other work keeps busy (:func:`busy_cores`), and at least one.

    PyTorch's CPU threads wait for each other at every operation by spinning. On a machine whose cores are busy
    with other work, a thread often waits for a partner that is not running, and two-thread training took 7.5
    times the CPU time of an idle run (a student's walk, 2026-12-06). With one thread there is nobody to wait for:
    training then slows by the load, not by the spinning."""
    threads = torch.get_num_threads()
    if threads == 1:
        return 1  # nothing to leave out (and nothing to measure)
    busy = busy_cores() if busy is None else busy
    if busy is None:
        return threads
    return max(1, min(threads, math.floor((os.cpu_count() or 1) - busy + 0.5)))


def show_progress() -> bool:
    """Whether a training run shows a progress bar when not told: in a notebook's kernel or a terminal, but not
    while the book is built (``QKV_BOOK_BUILD``: :mod:`qkv.widgets`), whose pages show what they print."""
    from qkv.widgets import static_mode

    return not static_mode() and ("ipykernel" in sys.modules or sys.stderr.isatty())


def resolve_device(device=None) -> torch.device:
    """``None`` -> CUDA when available, else CPU; a name or ``torch.device`` is checked (D2L 6.7.1)."""
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(device)
    except (RuntimeError, TypeError) as err:
        raise ValueError(f"unknown device {device!r}; use 'cpu', 'cuda', 'cuda:0' or None (automatic)") from err
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' was asked for but no CUDA GPU is available; use device=None or 'cpu'")
    return device


def fusable(model: nn.Module) -> bool:
    """Whether torch's fused Adam and AdamW (``fused=True``: one kernel updates every parameter) serve ``model``:
    its parameters are all float32 or float64 on the CPU or on CUDA (our addition to the trainer). The update
    is Adam's, up to rounding; on two CPU cores it made a step of a GPT of 11.9's size 15% faster (19.5 against
    22.8 ms). 11.8's recipe and 11.9's GPT and GRU use it."""
    params = list(model.parameters())
    return bool(params) and all(
        p.dtype in (torch.float32, torch.float64) and p.device.type in ("cpu", "cuda") for p in params
    )


def clip_gradients(grad_clip_val: float, model: nn.Module) -> torch.Tensor:
    """Rescale all gradients together so that their global L2 norm is at most ``grad_clip_val`` (D2L 9.5.3).

    When the norm ``||g||`` of all the parameters' gradients, taken as one
    vector, exceeds ``grad_clip_val``, every gradient is multiplied by
    ``grad_clip_val / ||g||``; the direction is kept. Returns the norm before
    clipping (a 0-d tensor; no host-device synchronisation is forced).
    """
    grads = [p.grad for p in model.parameters() if p.requires_grad and p.grad is not None]
    if not grads:
        return torch.tensor(0.0)
    norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
    scale = torch.clamp(grad_clip_val / norm, max=1.0)  # 1 when the norm is within bounds (or 0)
    for g in grads:
        g.mul_(scale.to(g.device))
    return norm


@contextlib.contextmanager
def evaluating(model: nn.Module):
    """``with evaluating(model):`` runs the block in evaluation mode (no dropout) without gradients, then gives
    every submodule back the mode it had, also when the block raises (D2L 3.2.4).

    Each part gets its own mode back: a model that trains with one part held in evaluation mode (a frozen part)
    keeps it so, which ``model.train(was_training)`` would not.
    """
    modes = [(m, m.training) for m in model.modules()]
    model.eval()
    try:
        with torch.no_grad():
            yield model
    finally:
        for m, training in modes:
            m.training = training


def _batch_size(Y) -> int:
    return Y.shape[0] if isinstance(Y, torch.Tensor) and Y.dim() > 0 else 1


class Trainer:
    """Fit a model to a data module, recording the loss per epoch (D2L 3.2.4, 3.4.4).

    Args:
        max_epochs: number of passes over the training data.
        gradient_clip_val: if > 0, clip the gradients' global norm to this value
            before every step (D2L 9.5.3).
        device: "cpu", "cuda", a ``torch.device``, or None for CUDA when
            available, else CPU. The model and every tensor of a batch move there.
        seed: if given, seeds ``torch`` and Python's ``random`` at the start of
            :meth:`fit`, before the first forward pass, so lazy layers, dropout
            and shuffling repeat exactly. (Seed before building a model whose
            layers are not lazy: their weights exist before ``fit``.)
        optimizer: "adam", "sgd" or a function ``(params, lr=...) -> Optimizer``;
            used with ``lr`` when the model has no ``configure_optimizers()``.
        lr: learning rate for that optimiser.
        progress: show a tqdm progress bar over the training steps (the epoch, the last
            epoch's losses, the time so far and the time left); None (the default):
            in a notebook or a terminal, not in the built book (:func:`show_progress`).
        threads: the CPU threads to train with: "auto" (the default) leaves out the
            cores that other work keeps busy when training starts
            (:func:`training_threads`), or a number; torch's setting is restored after.
        scheduler: None, or a function ``(optimizer, total_steps) -> LRScheduler``
            (``torch.optim.lr_scheduler``): :meth:`fit` calls it once the optimiser
            exists, with ``total_steps = max_epochs * len(train_dataloader())``, and
            steps the scheduler after every optimiser step: a schedule per batch,
            such as a warm-up followed by a cosine decay.

    ``fit`` returns, and keeps in ``self.history``, a dict of equal-length
    lists: ``epoch`` (1, 2, ...), ``train_loss`` and ``val_loss`` (means over
    the epoch's examples, each batch weighted by its size; ``val_loss`` is NaN
    without validation data), ``seconds`` (wall time since ``fit`` began,
    at the end of each epoch, so the last entry is the whole run's time), and
    ``train_seconds`` and ``cpu_seconds`` (the wall time and the process's CPU
    time, all threads together, spent in the training epochs so far: the
    evaluations are not counted).
    """

    def __init__(
        self,
        max_epochs: int,
        gradient_clip_val: float = 0.0,
        device=None,
        seed: int | None = None,
        optimizer="adam",
        lr: float | None = None,
        progress: bool | None = None,
        scheduler=None,
        threads: int | str = "auto",
    ):
        if not isinstance(max_epochs, int) or max_epochs < 1:
            raise ValueError(f"max_epochs must be a positive integer, got {max_epochs!r}")
        if not gradient_clip_val >= 0:
            raise ValueError(f"gradient_clip_val must be >= 0 (0 turns clipping off), got {gradient_clip_val!r}")
        if lr is not None and not lr > 0:
            raise ValueError(f"the learning rate lr must be > 0, got {lr!r}")
        if isinstance(optimizer, str):
            if optimizer.lower() not in OPTIMIZERS:
                raise ValueError(f"unknown optimizer {optimizer!r}; use one of {sorted(OPTIMIZERS)} or a function")
            optimizer = optimizer.lower()
        elif not callable(optimizer):
            raise TypeError(f"optimizer must be a name or a function (params, lr=...) -> Optimizer, got {optimizer!r}")
        if threads != "auto" and not (isinstance(threads, int) and threads >= 1):
            raise ValueError(f'threads must be "auto" or a positive integer, got {threads!r}')
        if scheduler is not None and not callable(scheduler):
            raise TypeError(
                f"scheduler must be None or a function (optimizer, total_steps) -> LRScheduler, got {scheduler!r}"
            )
        self.max_epochs = max_epochs
        self.gradient_clip_val = float(gradient_clip_val)
        self.device = resolve_device(device)
        self.seed = seed
        self.optimizer = optimizer
        self.lr = lr
        self.progress = progress
        self.threads = threads
        self.scheduler = scheduler
        self.optim: torch.optim.Optimizer | None = None
        self.lr_scheduler: torch.optim.lr_scheduler.LRScheduler | None = None
        self.history: dict[str, list] = {name: [] for name in HISTORY}
        self._bar = None  # the progress bar of a fit that is running
        self.threads_used: int | None = None  # the CPU threads the last fit trained on

    def prepare_batch(self, batch):
        """Check a batch is ``(*inputs, Y)`` and move its tensors to the device (D2L 6.7.3)."""
        if not isinstance(batch, tuple | list) or len(batch) < 2:
            raise ValueError(
                "each batch must be a tuple (*inputs, Y) whose last element is the label; "
                f"got {type(batch).__name__}" + (f" of length {len(batch)}" if isinstance(batch, tuple | list) else "")
            )
        return tuple(x.to(self.device) if isinstance(x, torch.Tensor) else x for x in batch)

    def clip_gradients(self, grad_clip_val: float, model: nn.Module) -> torch.Tensor:
        """See :func:`clip_gradients` (D2L 9.5.3)."""
        return clip_gradients(grad_clip_val, model)

    def compute_loss(self, model: nn.Module, batch) -> torch.Tensor:
        """``model.loss(model(*inputs), Y)``, or cross-entropy over the last axis without ``model.loss``."""
        Y_hat = model(*batch[:-1])
        Y = batch[-1]
        if hasattr(model, "loss"):
            loss = model.loss(Y_hat, Y)
        else:
            loss = F.cross_entropy(Y_hat.reshape(-1, Y_hat.shape[-1]), Y.reshape(-1))  # (*, V) -> (n, V); (*,) -> (n,)
        if not isinstance(loss, torch.Tensor) or loss.dim() != 0:
            shape = tuple(loss.shape) if isinstance(loss, torch.Tensor) else type(loss).__name__
            raise ValueError(f"the loss must be a scalar tensor (reduce it, e.g. with .mean()); got {shape}")
        return loss

    def configure_optimizer(self, model: nn.Module) -> torch.optim.Optimizer:
        """The model's ``configure_optimizers()`` if it has one, else the Trainer's optimiser with ``lr``."""
        configure = getattr(model, "configure_optimizers", None)
        if callable(configure):
            try:
                optim = configure()
            except NotImplementedError:  # a base class that leaves it to subclasses
                optim = None
            if optim is not None:
                if not isinstance(optim, torch.optim.Optimizer):
                    raise TypeError(f"configure_optimizers() must return a torch.optim.Optimizer, got {optim!r}")
                if self.lr is not None:
                    warnings.warn("the model's configure_optimizers() is used; Trainer's lr is ignored", stacklevel=3)
                return optim
        if self.lr is None:
            raise ValueError(
                f"{type(model).__name__} has no configure_optimizers(), so the Trainer needs a learning rate: "
                "Trainer(..., optimizer='adam' or 'sgd', lr=0.01)"
            )
        factory = OPTIMIZERS[self.optimizer] if isinstance(self.optimizer, str) else self.optimizer
        return factory(model.parameters(), lr=self.lr)

    def fit_epoch(self, model: nn.Module, loader) -> float:
        """One pass over the training data; returns the mean training loss per example."""
        model.train()
        total, count = torch.zeros((), device=self.device), 0
        for batch in loader:
            batch = self.prepare_batch(batch)
            loss = self.compute_loss(model, batch)
            self.optim.zero_grad()
            loss.backward()
            if self.gradient_clip_val > 0:
                self.clip_gradients(self.gradient_clip_val, model)
            self.optim.step()
            if self.lr_scheduler is not None:
                self.lr_scheduler.step()  # the learning rate of the next batch
            n = _batch_size(batch[-1])
            total += loss.detach() * n
            count += n
            if self._bar is not None:
                self._bar.update(1)
        if count == 0:
            raise ValueError("train_dataloader() yielded no batches")
        return float(total) / count

    def evaluate(self, model: nn.Module, loader) -> float:
        """Mean loss per example over ``loader`` in eval mode without gradients; NaN if there is no data."""
        if loader is None:
            return math.nan
        total, count = torch.zeros((), device=self.device), 0
        with evaluating(model):
            for batch in loader:
                batch = self.prepare_batch(batch)
                n = _batch_size(batch[-1])
                total += self.compute_loss(model, batch) * n
                count += n
        return float(total) / count if count else math.nan

    def fit(self, model: nn.Module, data) -> dict[str, list]:
        """Train ``model`` on ``data`` for ``max_epochs`` epochs and return the history (D2L 3.2.4, 3.4.4)."""
        if not isinstance(model, nn.Module):
            raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        if not callable(getattr(data, "train_dataloader", None)):
            raise TypeError(f"data must have a train_dataloader() method (val_dataloader() is optional), got {data!r}")
        start = time.perf_counter()
        if self.seed is not None:
            random.seed(self.seed)
            torch.manual_seed(self.seed)
        model.to(self.device)
        train_loader = data.train_dataloader()
        val_loader = data.val_dataloader() if callable(getattr(data, "val_dataloader", None)) else None
        if any(is_lazy(p) for p in model.parameters()):  # LazyLinear & co. get their sizes from a first batch
            first = next(iter(train_loader), None)
            if first is None:
                raise ValueError("train_dataloader() yielded no batches")
            with torch.no_grad():
                model(*self.prepare_batch(first)[:-1])
        self.optim = self.configure_optimizer(model)
        if self.scheduler is not None:
            self.lr_scheduler = self.scheduler(self.optim, self.max_epochs * len(train_loader))
        self.history = history = {name: [] for name in HISTORY}
        threads_before = torch.get_num_threads()
        threads = training_threads() if self.threads == "auto" else self.threads
        self.threads_used = threads
        torch.set_num_threads(threads)
        show = show_progress() if self.progress is None else self.progress
        desc = f"training ({threads} thread{'s' if threads > 1 else ''}"
        desc += ", the machine is busy)" if threads < threads_before else ")"
        steps = self.max_epochs * len(train_loader) if hasattr(train_loader, "__len__") else None
        self._bar = tqdm(total=steps, desc=desc, unit="step", disable=not show)
        try:
            self._fit_epochs(model, train_loader, val_loader, start)
        finally:
            self._bar.close()
            self._bar = None
            torch.set_num_threads(threads_before)
        return history

    def _fit_epochs(self, model, train_loader, val_loader, start: float) -> None:
        history, wall, cpu = self.history, 0.0, 0.0
        for epoch in range(1, self.max_epochs + 1):
            wall0, cpu0 = time.perf_counter(), time.process_time()
            train_loss = self.fit_epoch(model, train_loader)
            wall, cpu = wall + time.perf_counter() - wall0, cpu + time.process_time() - cpu0
            val_loss = self.evaluate(model, val_loader)
            history["epoch"].append(epoch)
            history["train_loss"].append(train_loss)
            history["val_loss"].append(val_loss)
            history["seconds"].append(time.perf_counter() - start)
            history["train_seconds"].append(wall)
            history["cpu_seconds"].append(cpu)
            self._bar.set_postfix(
                epoch=f"{epoch}/{self.max_epochs}", train_loss=f"{train_loss:.4g}", val_loss=f"{val_loss:.4g}"
            )

    def plot(self, ax=None):
        """Draw the training and validation loss against the epoch; returns the axes."""
        from qkv.plotting import plot

        if not self.history["epoch"]:
            raise RuntimeError("nothing to plot yet: call fit(model, data) first")
        curves, legend = [self.history["train_loss"]], ["train_loss"]
        if any(math.isfinite(v) for v in self.history["val_loss"]):
            curves.append(self.history["val_loss"])
            legend.append("val_loss")
        return plot(self.history["epoch"], curves, xlabel="epoch", ylabel="loss", legend=legend, axes=ax)
