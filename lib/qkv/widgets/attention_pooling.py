"""Interactive explorer of D2L 11.2, "Attention Pooling by Similarity" (``book/attention-pooling.md``):
Nadaraya-Watson regression with a kernel menu and a width slider.

:func:`nadaraya_watson_explorer` is a live explorer (:mod:`qkv.widgets._live`):
the module ``js/nadaraya_watson.js`` draws it, in JupyterLab and in the book,
from :func:`nadaraya_watson_data` (the training points), and recomputes the
estimate and its leave-one-out loss in the page as the kernel and the width
change, as :func:`fit_curve` does here (an estimate on a grid and its
leave-one-out loss, tested on its own). The static
:func:`nadaraya_watson_grid` stays for print and readers without JavaScript.
Shape letters are those of the glossary in :mod:`qkv`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import matplotlib.pyplot as plt
import torch

from qkv import nadaraya_watson as nw
from qkv.plotting import use_svg_display
from qkv.widgets import _live as live

__all__ = [
    "KERNEL_NAMES",
    "LOG_SIGMA",
    "NUM_POINTS",
    "Fit",
    "fit_curve",
    "query_grid",
    "nadaraya_watson_grid",
    "nadaraya_watson_data",
    "nadaraya_watson_explorer",
]

#: The kernels offered by the regression explorer, by the names :func:`qkv.nadaraya_watson.nadaraya_watson` accepts.
KERNEL_NAMES = ("gaussian", "boxcar", "constant", "epanechnikov")
#: The explorer's width slider, in log10 sigma: from 0.01 to 10 in steps of 0.02 (151 stops).
LOG_SIGMA = {"min": -2.0, "max": 1.0, "step": 0.02}
#: The number of queries on the explorer's grid.
NUM_POINTS = 200


class Fit(NamedTuple):
    """A Nadaraya-Watson estimate drawn by the explorer (D2L 11.2)."""

    x: torch.Tensor  # (Q,) the queries: an even grid over the training inputs, float64
    y_hat: torch.Tensor  # (Q,) the estimate at each query
    loo: float  # the leave-one-out loss of the training data at this kernel and width


def _regression_data(x_train, y_train) -> tuple[torch.Tensor, torch.Tensor]:
    """Both given, as float64 tensors of shape (n,), or both None for D2L 11.2.1's data (seed 0)."""
    if x_train is None and y_train is None:
        data = nw.make_data(n=40, noise=1.0, seed=0)
        x_train, y_train = data.x_train, data.y_train
    elif x_train is None or y_train is None:
        raise ValueError(
            "give both x_train and y_train, or neither (to use D2L's data: 40 noisy points of 2 sin x + x)"
        )
    x_train = torch.as_tensor(x_train).detach().to("cpu", torch.float64)
    y_train = torch.as_tensor(y_train).detach().to("cpu", torch.float64)
    if x_train.dim() != 1 or x_train.shape != y_train.shape or x_train.numel() < 2:
        raise ValueError(
            "x_train and y_train must be 1-D and of the same length n >= 2 (one label per input); "
            f"got shapes {tuple(x_train.shape)} and {tuple(y_train.shape)}"
        )
    return x_train, y_train


def query_grid(x_train: torch.Tensor, num_points: int = NUM_POINTS) -> torch.Tensor:
    """The explorer's queries, shape (Q,) = (``num_points``,), float64: even steps from 5% of the data's range below
    its smallest input to 5% above its largest (half a unit either side if all inputs are equal)."""
    if num_points < 2:
        raise ValueError(f"num_points must be at least 2 to draw a curve, got {num_points}")
    lo, hi = float(x_train.min()), float(x_train.max())
    pad = 0.05 * (hi - lo) if hi > lo else 0.5
    return torch.linspace(lo - pad, hi + pad, num_points, dtype=torch.float64)  # (Q,) queries


def fit_curve(x_train, y_train, kernel="gaussian", sigma: float = 1.0, num_points: int = NUM_POINTS) -> Fit:
    """The Nadaraya-Watson estimate on a grid, and its leave-one-out loss (D2L 11.2).

    The grid is :func:`query_grid`. Everything is computed in float64 with
    :func:`qkv.nadaraya_watson.nadaraya_watson` and
    :func:`qkv.nadaraya_watson.loo_loss`; ``kernel`` is a name or a function.
    """
    x_train, y_train = _regression_data(x_train, y_train)
    grid = query_grid(x_train, num_points)  # (Q,)
    y_hat, _ = nw.nadaraya_watson(x_train, y_train, grid, kernel, sigma)  # (K,), (K,), (Q,) -> (Q,)
    return Fit(grid, y_hat, nw.loo_loss(x_train, y_train, kernel, sigma))


def _kernel_label(kernel) -> str:
    return kernel if isinstance(kernel, str) else getattr(kernel, "__name__", "kernel")


def _draw_fit(ax, x_train, y_train, kernel, sigma: float, truth: Callable | None) -> Fit:
    """One panel: the estimate, the true function (if given) and the training points; the LOO loss as title."""
    fit = fit_curve(x_train, y_train, kernel, sigma)
    ax.plot(x_train.numpy(), y_train.numpy(), "o", color="0.55", alpha=0.5, markersize=3.5, label="training points")
    if truth is not None:
        ax.plot(
            fit.x.numpy(),
            torch.as_tensor(truth(fit.x)).detach().numpy(),
            "--",
            color="tab:purple",
            lw=1.2,
            label="true f",
        )
    ax.plot(fit.x.numpy(), fit.y_hat.numpy(), color="tab:blue", lw=1.8, label="estimate")
    ax.set_title(f"{_kernel_label(kernel)}, sigma = {sigma:.3g}\nLOO loss {fit.loo:.3f}", fontsize=9)
    ax.grid(True, alpha=0.3)
    return fit


def nadaraya_watson_grid(
    x_train=None,
    y_train=None,
    kernels: Sequence = ("gaussian", "boxcar", "epanechnikov"),
    sigmas: Sequence[float] = (0.1, 0.5, 2.0),
    truth: Callable | None = nw.f,
):
    """Small multiples of Nadaraya-Watson fits: one row per kernel, one column per width (D2L 11.2).

    Each panel shows the estimate, ``truth`` (D2L's ``2 sin x + x`` by
    default; None to leave it out) and the training points, with the
    leave-one-out loss in its title. Returns the ``Figure``, whose axes are the
    panels in row-major order.
    """
    x_train, y_train = _regression_data(x_train, y_train)
    kernels, sigmas = list(kernels), [float(s) for s in sigmas]
    if not kernels or not sigmas:
        raise ValueError("give at least one kernel and one width")
    use_svg_display()
    fig, axes = plt.subplots(
        len(kernels),
        len(sigmas),
        figsize=(3.2 * len(sigmas), 2.5 * len(kernels)),
        sharex=True,
        sharey=True,
        squeeze=False,
    )
    for i, kernel in enumerate(kernels):
        for j, sigma in enumerate(sigmas):
            _draw_fit(axes[i, j], x_train, y_train, kernel, sigma, truth)
    axes[0, 0].legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    return fig


def nadaraya_watson_data(x_train=None, y_train=None, *, truth: Callable | None = nw.f) -> dict:
    """What ``js/nadaraya_watson.js`` draws from, as JSON values (D2L 11.2).

    The training points in float64 (D2L 11.2.1's 40 noisy points of
    ``2 sin x + x``, seed 0, when none are given), the queries of
    :func:`query_grid` and ``truth`` on them (None to leave it out), the
    kernels of the menu and the width slider's range (:data:`LOG_SIGMA`). The
    page computes the estimate and the leave-one-out loss itself, as
    :func:`fit_curve` does. (The grid is data: ``torch.linspace`` rounds its
    last bits by the CPU's vector width, and a boxcar kernel's edge can turn on
    such a bit.)
    """
    x_train, y_train = _regression_data(x_train, y_train)
    grid = query_grid(x_train, NUM_POINTS)  # (Q,)
    return {
        "x": x_train.tolist(),
        "y": y_train.tolist(),
        "grid": grid.tolist(),
        "truth": None if truth is None else torch.as_tensor(truth(grid)).detach().to(torch.float64).tolist(),
        "kernels": list(KERNEL_NAMES),
        "log_sigma": dict(LOG_SIGMA),
    }


def nadaraya_watson_explorer(x_train=None, y_train=None, *, truth: Callable | None = nw.f):
    """Explore Nadaraya-Watson regression: a kernel menu and a width slider on a log scale (D2L 11.2).

    Each change redraws the estimate, the true function ``truth`` and the
    training points, with the leave-one-out loss in the title and in a line of
    text. With no data, D2L 11.2.1's 40 noisy points of ``2 sin x + x`` (seed 0) are used.

    Returns:
        In Jupyter, a live widget (``js/nadaraya_watson.js``; its traitlets ``kernel`` and ``sigma`` are the
        controls). During the book build (:func:`qkv.widgets.static_mode`), the same explorer for the page, after
        the static :func:`nadaraya_watson_grid` that it replaces; without anywidget, that figure alone
        (:mod:`qkv.widgets._live`).
    """
    x_train, y_train = _regression_data(x_train, y_train)
    return live.explorer(
        "nadaraya_watson",
        data=lambda: nadaraya_watson_data(x_train, y_train, truth=truth),
        settings={"kernel": "gaussian", "sigma": 0.5},
        static=lambda: nadaraya_watson_grid(x_train, y_train, truth=truth),
        label="Nadaraya-Watson explorer: choose a kernel and its width sigma",
    )
