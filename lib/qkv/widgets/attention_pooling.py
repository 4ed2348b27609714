"""Interactive explorer of D2L 11.2, "Attention Pooling by Similarity" (``book/attention-pooling.md``):
Nadaraya-Watson regression with a kernel menu and a width slider.

:func:`nadaraya_watson_explorer` returns the sliders in Jupyter and the
static :func:`nadaraya_watson_grid` in the book (see :mod:`qkv.widgets`). What
it draws is computed by the pure function :func:`fit_curve` (an estimate on a
grid and its leave-one-out loss), tested on its own. Shape letters are those
of the glossary in :mod:`qkv`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import matplotlib.pyplot as plt
import torch

from qkv import nadaraya_watson as nw
from qkv.plotting import use_svg_display
from qkv.widgets import ipywidgets_or_none, static_figure

__all__ = ["KERNEL_NAMES", "Fit", "fit_curve", "nadaraya_watson_grid", "nadaraya_watson_explorer"]

#: The kernels offered by the regression explorer, by the names :func:`qkv.nadaraya_watson.nadaraya_watson` accepts.
KERNEL_NAMES = ("gaussian", "boxcar", "constant", "epanechnikov")


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


def fit_curve(x_train, y_train, kernel="gaussian", sigma: float = 1.0, num_points: int = 200) -> Fit:
    """The Nadaraya-Watson estimate on a grid, and its leave-one-out loss (D2L 11.2).

    The grid has ``num_points`` even steps from 5% of the data's range below
    its smallest input to 5% above its largest. Everything is computed in
    float64 with :func:`qkv.nadaraya_watson.nadaraya_watson` and
    :func:`qkv.nadaraya_watson.loo_loss`; ``kernel`` is a name or a function.
    """
    x_train, y_train = _regression_data(x_train, y_train)
    if num_points < 2:
        raise ValueError(f"num_points must be at least 2 to draw a curve, got {num_points}")
    lo, hi = float(x_train.min()), float(x_train.max())
    pad = 0.05 * (hi - lo) if hi > lo else 0.5
    grid = torch.linspace(lo - pad, hi + pad, num_points, dtype=torch.float64)  # (Q,) queries
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


def nadaraya_watson_explorer(x_train=None, y_train=None, *, truth: Callable | None = nw.f):
    """Explore Nadaraya-Watson regression: a kernel menu and a width slider on a log scale (D2L 11.2).

    Each change redraws the estimate, the true function ``truth`` and the
    training points, with the leave-one-out loss in the title. With no data,
    D2L 11.2.1's 40 noisy points of ``2 sin x + x`` (seed 0) are used.

    Returns:
        In Jupyter, an ``ipywidgets.interactive`` panel (its ``result`` is the
        latest figure). During the book build (:func:`qkv.widgets.static_mode`), or without
        ipywidgets, the static :func:`nadaraya_watson_grid` figure instead.
    """
    x_train, y_train = _regression_data(x_train, y_train)
    widgets = ipywidgets_or_none()
    if widgets is None:
        return static_figure(nadaraya_watson_grid(x_train, y_train, truth=truth))
    last = {"fig": None}

    def draw(kernel, sigma):
        if last["fig"] is not None:  # Jupyter has shown and closed it already; elsewhere, free it
            plt.close(last["fig"])
        fig, ax = plt.subplots(figsize=(6.5, 3.6))
        _draw_fit(ax, x_train, y_train, kernel, sigma, truth)
        ax.set_xlabel("x")
        ax.legend(fontsize=8, loc="upper left")
        fig.tight_layout()
        last["fig"] = fig
        return fig

    kernel = widgets.Dropdown(options=list(KERNEL_NAMES), value="gaussian", description="kernel")
    sigma = widgets.FloatLogSlider(
        value=0.5, base=10, min=-2, max=1, step=0.02, description="sigma", readout_format=".3f", continuous_update=False
    )
    return widgets.interactive(draw, kernel=kernel, sigma=sigma)
