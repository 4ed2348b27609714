"""Attention pooling by similarity: Nadaraya-Watson kernel regression (D2L 11.2).

A kernel ``alpha`` scores how close a query ``q`` is to each key ``k_i``; the
scores of one query, normalised to sum to 1, weight the values:

    f(q) = sum_i v_i * alpha((q - k_i) / sigma) / sum_j alpha((q - k_j) / sigma)

For regression the keys are the training inputs ``x_i`` and the values their
labels ``y_i``. The bandwidth ``sigma`` scales distances: a small ``sigma``
trusts only the nearest points, a large one averages everything. Choosing it
by the training error would always pick the smallest (each point then predicts
itself), so :func:`select_bandwidth` uses the leave-one-out error instead.

Weights are laid out (Q, K): one row per query, one column per training point,
the layout of every attention matrix in :mod:`qkv` (D2L's own code returns the
transpose, keys by queries). Shape letters are those of the glossary in :mod:`qkv`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

import torch

__all__ = [
    "gaussian",
    "boxcar",
    "constant",
    "epanechikov",
    "epanechnikov",
    "KERNELS",
    "f",
    "RegressionData",
    "make_data",
    "nadaraya_watson",
    "loo_loss",
    "select_bandwidth",
]


def gaussian(x: torch.Tensor) -> torch.Tensor:
    """Gaussian kernel ``exp(-x^2 / 2)`` (D2L 11.2.1)."""
    return torch.exp(-(x**2) / 2)


def boxcar(x: torch.Tensor) -> torch.Tensor:
    """Boxcar kernel: 1 where ``|x| < 1``, else 0, as a float tensor (D2L 11.2.1).

    The open window of D2L's code; D2L's equation writes ``|x| <= 1``, which differs only at ``|x| = 1``.
    """
    return (torch.abs(x) < 1.0).to(x.dtype if x.is_floating_point() else torch.get_default_dtype())


def constant(x: torch.Tensor) -> torch.Tensor:
    """Constant kernel 1: every key gets the same weight, the estimate is mean(y) (D2L 11.2.1)."""
    return torch.ones_like(x, dtype=x.dtype if x.is_floating_point() else torch.get_default_dtype())


def epanechikov(x: torch.Tensor) -> torch.Tensor:
    """Epanechnikov kernel ``max(0, 1 - |x|)`` (D2L 11.2.1, which spells it "epanechikov")."""
    return torch.clamp(1 - torch.abs(x), min=0)


epanechnikov = epanechikov  # the usual spelling of the statistician's name

KERNELS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "gaussian": gaussian,
    "boxcar": boxcar,
    "constant": constant,
    "epanechikov": epanechikov,
}
"""The kernels of D2L 11.2.1 by name; ``"epanechnikov"`` is accepted too wherever a name is."""


def f(x: torch.Tensor) -> torch.Tensor:
    """The regression target of D2L 11.2.1: ``2 sin(x) + x``."""
    return 2 * torch.sin(x) + x


class RegressionData(NamedTuple):
    """Training points and a validation grid for kernel regression (D2L 11.2.1)."""

    x_train: torch.Tensor  # (n,), sorted
    y_train: torch.Tensor  # (n,) = f(x_train) + noise
    x_val: torch.Tensor  # (50,) = 0, 0.1, ..., 4.9
    y_val: torch.Tensor  # (50,) = f(x_val), noise-free


def make_data(n: int = 40, noise: float = 1.0, seed: int | None = None) -> RegressionData:
    """D2L 11.2.1's data set: ``n`` sorted inputs uniform on [0, 5), labels ``f(x) + noise * N(0, 1)``.

    D2L draws 40 points with unit-variance noise, the defaults here. ``seed``
    makes the draw reproducible without touching the global random state.
    The validation grid is ``arange(0, 5, 0.1)`` with noise-free labels.
    """
    if n < 1:
        raise ValueError(f"n must be a positive number of training points, got {n}")
    if noise < 0:
        raise ValueError(f"noise is a standard deviation and must be >= 0, got {noise}")
    generator = torch.Generator().manual_seed(seed) if seed is not None else None
    x_train, _ = torch.sort(torch.rand(n, generator=generator) * 5)
    y_train = f(x_train) + noise * torch.randn(n, generator=generator)
    x_val = torch.arange(0, 5, 0.1)
    return RegressionData(x_train, y_train, x_val, f(x_val))


def _kernel(kernel) -> Callable[[torch.Tensor], torch.Tensor]:
    if isinstance(kernel, str):
        name = "epanechikov" if kernel.lower() == "epanechnikov" else kernel.lower()
        if name not in KERNELS:
            raise ValueError(f"unknown kernel {kernel!r}; choose one of {sorted(KERNELS)} or pass a function")
        return KERNELS[name]
    if not callable(kernel):
        raise TypeError(f"kernel must be a function of the scaled distances or a name, got {type(kernel).__name__}")
    return kernel


def _as_points(x, name: str) -> torch.Tensor:
    """Inputs as a float tensor of shape (n,) or (n, d)."""
    x = torch.as_tensor(x)
    if not x.is_floating_point():
        x = x.to(torch.get_default_dtype())
    if x.dim() not in (1, 2) or x.shape[0] == 0:
        raise ValueError(f"{name} must have shape (n,) or (n, d) with n >= 1, got shape {tuple(x.shape)}")
    return x


def _weights(x_train, x_val, kernel, sigma: float, exclude_self: bool) -> torch.Tensor:
    """Normalised attention weights (Q, K) of the queries ``x_val`` over the keys ``x_train``."""
    try:
        sigma = float(sigma)
    except (TypeError, ValueError):
        raise TypeError(f"the bandwidth sigma must be a number, got {type(sigma).__name__}") from None
    if not (math.isfinite(sigma) and sigma > 0):
        raise ValueError(f"the bandwidth sigma must be a positive finite number, got {sigma!r}")
    if x_train.dim() != x_val.dim() or (x_train.dim() == 2 and x_train.shape[1] != x_val.shape[1]):
        raise ValueError(
            f"queries and keys need the same feature size: x_val {tuple(x_val.shape)}, x_train {tuple(x_train.shape)}"
        )
    if x_train.dim() == 1:
        diffs = x_val[:, None] - x_train[None, :]  # (Q, 1) - (1, K) -> (Q, K), signed for 1-D data
    else:
        diffs = torch.cdist(x_val, x_train)  # (Q, d), (K, d) -> (Q, K) Euclidean distances
    k = kernel(diffs / sigma).to(diffs.dtype)  # (Q, K)
    if k.shape != diffs.shape:
        raise ValueError(f"the kernel must act elementwise: it mapped shape {tuple(diffs.shape)} to {tuple(k.shape)}")
    if (k < 0).any() or not torch.isfinite(k).all():
        raise ValueError("kernel values must be finite and non-negative")
    dist = diffs.abs()  # (Q, K)
    if exclude_self:
        if x_train.shape[0] < 2 or x_val.shape != x_train.shape:
            raise ValueError("leaving a point out needs x_val to be the training inputs themselves, with n >= 2")
        eye = torch.eye(x_train.shape[0], dtype=torch.bool, device=k.device)  # (K, K)
        k = k.masked_fill(eye, 0.0)
        dist = dist.masked_fill(eye, math.inf)
    totals = k.sum(dim=1, keepdim=True)  # (Q, 1)
    # A query with no key inside the kernel's support (or whose weights all
    # underflowed) falls back to its nearest key(s), shared equally on a tie:
    # the limit of the weights as the kernel widens until it first reaches a key.
    nearest = (dist == dist.min(dim=1, keepdim=True).values).to(k.dtype)  # (Q, K)
    empty = totals == 0  # (Q, 1)
    k = torch.where(empty, nearest, k)
    return k / k.sum(dim=1, keepdim=True)  # (Q, K) / (Q, 1) -> (Q, K)


def nadaraya_watson(x_train, y_train, x_val, kernel, sigma: float = 1.0, *, exclude_self: bool = False):
    """Nadaraya-Watson estimate at ``x_val`` from the pairs ``(x_train, y_train)`` (D2L 11.2.2).

    Args:
        x_train: keys, shape (K,) or (K, d).
        y_train: values, shape (K,) or (K, v) (one-hot labels for classification).
        x_val: queries, shape (Q,) or (Q, d).
        kernel: a function of the scaled distances (one of :data:`KERNELS`) or its name.
        sigma: bandwidth; the weight of key ``k`` for query ``q`` is
            ``kernel((q - k) / sigma)`` (for d > 1, ``kernel(|q - k| / sigma)``),
            so ``gaussian`` with ``sigma`` is D2L 11.2.3's ``exp(-(q - k)^2 / (2 sigma^2))``.
        exclude_self: give each query zero weight on the key at its own index
            (``x_val`` must be ``x_train``): the leave-one-out estimate.

    Returns:
        ``(y_hat, attention_weights)``: estimates (Q,) or (Q, v), and weights
        (Q, K) whose rows are non-negative and sum to 1. A query with no key in
        the kernel's support (a boxcar narrower than the gap to every point, or
        Gaussian weights that all underflow) gets its nearest key's value, split
        equally between equally near keys, never NaN.
    """
    kernel = _kernel(kernel)
    x_train, x_val = _as_points(x_train, "x_train"), _as_points(x_val, "x_val")
    y_train = torch.as_tensor(y_train).to(x_train.dtype)
    if y_train.dim() not in (1, 2) or y_train.shape[0] != x_train.shape[0]:
        raise ValueError(
            f"y_train must have shape (K,) or (K, v) with K = {x_train.shape[0]} values, one per key; "
            f"got shape {tuple(y_train.shape)}"
        )
    x_val = x_val.to(x_train.dtype)
    weights = _weights(x_train, x_val, kernel, sigma, exclude_self)  # (Q, K)
    y_hat = weights @ y_train  # (Q, K) @ (K,) -> (Q,)  or  (Q, K) @ (K, v) -> (Q, v)
    return y_hat, weights


def loo_loss(x, y, kernel, sigma: float) -> float:
    """Leave-one-out mean squared error of Nadaraya-Watson regression (D2L 11.2, exercise 2).

    Each point ``x_i`` is predicted from all the other points (its own weight is
    zero), and the squared errors are averaged. Unlike the training error, this
    does not reward a vanishing bandwidth, which would just copy each label.
    """
    y = torch.as_tensor(y)
    y_hat, _ = nadaraya_watson(x, y, x, kernel, sigma, exclude_self=True)
    return float(((y_hat - y.to(y_hat.dtype)) ** 2).mean())


def select_bandwidth(x, y, kernel, sigmas: Sequence[float]) -> tuple[float, list[float]]:
    """The bandwidth among ``sigmas`` with the least leave-one-out loss (D2L 11.2.5, exercise 2).

    Returns ``(best_sigma, losses)`` with ``losses[i] = loo_loss(x, y, kernel, sigmas[i])``;
    on a tie the first of the tied bandwidths wins.
    """
    sigmas = list(sigmas)
    if not sigmas:
        raise ValueError("give at least one bandwidth to choose from")
    losses = [loo_loss(x, y, kernel, float(s)) for s in sigmas]
    best = min(range(len(sigmas)), key=losses.__getitem__)
    return float(sigmas[best]), losses
