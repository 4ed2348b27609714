"""Interactive explorers: kernel regression (D2L 11.2) and the scaling of dot products (D2L 11.3).

Each explorer returns an ipywidgets control panel when run in Jupyter. While
the book is built (the build sets the environment variable ``QKV_BOOK_BUILD=1``),
or where ipywidgets cannot be imported, it draws a static grid of several
settings instead and returns that matplotlib ``Figure``, so the printed page
shows what the sliders would. End the explorer's cell *without* a ``;``: a
trailing semicolon hides the widget.

What is drawn is computed by pure functions, tested on their own:
:func:`fit_curve` (an estimate and its leave-one-out loss),
:func:`attention_weight_samples` and :func:`softmax_entropy` (the weights of
random queries over random keys and how spread out they are), and
:func:`softmax_entropy_vs_dim`, which section 11.3 uses for its figure on
softmax saturation. Shape letters are those of the glossary in :mod:`qkv`
(here ``B`` counts independent random trials).
"""

from __future__ import annotations

import math
import operator
import os
from collections.abc import Callable, Sequence
from typing import NamedTuple

import matplotlib.pyplot as plt
import torch

from qkv import nadaraya_watson as nw
from qkv.plotting import use_svg_display

__all__ = [
    "BOOK_BUILD_ENV",
    "static_mode",
    "Fit",
    "fit_curve",
    "nadaraya_watson_grid",
    "nadaraya_watson_explorer",
    "attention_weight_samples",
    "softmax_entropy",
    "softmax_entropy_vs_dim",
    "softmax_scaling_grid",
    "softmax_scaling_explorer",
]

#: The environment variable that asks the explorers for static figures (set by ``publish/build_book.py``).
BOOK_BUILD_ENV = "QKV_BOOK_BUILD"
#: The kernels offered by the regression explorer, by the names :func:`qkv.nadaraya_watson.nadaraya_watson` accepts.
KERNEL_NAMES = ("gaussian", "boxcar", "constant", "epanechnikov")
#: The number of random queries behind each point of the explorers' entropy curves.
CURVE_TRIALS = 200
NO_WIDGETS_NOTE = "ipywidgets is not installed, so here are fixed settings instead of sliders (pip install ipywidgets)."


def static_mode() -> bool:
    """True while the book is being built (``QKV_BOOK_BUILD`` set to anything but "" or "0"), when the
    explorers draw static figures instead of widgets (D2L 11.2, 11.3)."""
    return os.environ.get(BOOK_BUILD_ENV, "").strip() not in ("", "0")


def _widgets_module():
    """ipywidgets, or None (after printing a one-line note) where it cannot be imported."""
    try:
        import ipywidgets
    except ImportError:
        print(NO_WIDGETS_NOTE)
        return None
    return ipywidgets


def _static(fig):
    """Return ``fig`` detached from pyplot: Jupyter then shows it once, as the cell's value."""
    plt.close(fig)
    return fig


# --------------------------------------------------------------------------------------------------------------
# D2L 11.2: Nadaraya-Watson regression
# --------------------------------------------------------------------------------------------------------------


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
        latest figure). During the book build (:func:`static_mode`), or without
        ipywidgets, the static :func:`nadaraya_watson_grid` figure instead.
    """
    x_train, y_train = _regression_data(x_train, y_train)
    widgets = None if static_mode() else _widgets_module()
    if widgets is None:
        return _static(nadaraya_watson_grid(x_train, y_train, truth=truth))
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


# --------------------------------------------------------------------------------------------------------------
# D2L 11.3: why dot products are scaled by 1/sqrt(d)
# --------------------------------------------------------------------------------------------------------------


def _positive_int(value, name: str) -> int:
    """``value`` as an int >= 1: ints and integer-like objects (NumPy integers) pass; bools and floats do not."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, got a bool")
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}") from None
    if value < 1:
        raise ValueError(f"{name} must be at least 1, got {value}")
    return value


def attention_weight_samples(d: int, scaled: bool, num_keys: int = 16, trials: int = 1, seed: int = 0):
    """Softmax attention weights of random queries over random keys (D2L 11.3.1).

    A generator seeded with ``seed`` draws the queries, shape (B, 1, d) with
    B = ``trials``, and then the keys, shape (B, K, d) with K = ``num_keys``,
    all entries independent standard normals in float64. The scores are the
    dot products, divided by ``sqrt(d)`` when ``scaled``; each trial's softmax
    over its K keys is returned, shape (B, K). The same seed gives the same
    draws whether scaled or not, so the two settings differ only by the scale.
    """
    d = _positive_int(d, "d")
    num_keys = _positive_int(num_keys, "num_keys")
    trials = _positive_int(trials, "trials")
    generator = torch.Generator().manual_seed(seed)
    queries = torch.randn(trials, 1, d, generator=generator, dtype=torch.float64)  # (B, 1, d)
    keys = torch.randn(trials, num_keys, d, generator=generator, dtype=torch.float64)  # (B, K, d)
    scores = (queries @ keys.transpose(1, 2)).squeeze(1)  # (B, 1, d) @ (B, d, K) -> (B, 1, K) -> (B, K)
    if scaled:
        scores = scores / math.sqrt(d)
    return torch.softmax(scores, dim=-1)  # (B, K)


def softmax_entropy(weights: torch.Tensor) -> torch.Tensor:
    """Entropy in nats, ``-sum_k w_k log w_k`` with ``0 log 0 = 0``, of each row of weights (..., K) -> (...)
    (D2L 11.3.1). It is log K for uniform weights and 0 for a one-hot row: a saturated softmax."""
    return -torch.special.xlogy(weights, weights).sum(dim=-1)


def softmax_entropy_vs_dim(
    d_values: Sequence[int], scaled: bool, num_keys: int = 16, trials: int = 200, seed: int = 0
) -> list[float]:
    """Mean entropy of the softmax of random dot products, for each dimension in ``d_values`` (D2L 11.3.1).

    For each d, :func:`attention_weight_samples` draws ``trials`` queries with
    ``num_keys`` keys each (unit-variance entries, generator seeded with
    ``seed``) and the entropies of their weights are averaged. Unscaled dot
    products have variance d, so as d grows the softmax saturates (one key takes
    nearly all the weight) and the entropy falls towards 0; divided by sqrt(d)
    they keep unit variance and the entropy stays roughly constant, a little
    below the uniform weights' log(num_keys).

    Returns:
        a list of floats, one per entry of ``d_values``, in nats.
    """
    d_values = list(d_values)
    if not d_values:
        raise ValueError("give at least one dimension d")
    return [
        float(softmax_entropy(attention_weight_samples(d, scaled, num_keys, trials, seed)).mean()) for d in d_values
    ]


def _spread(values: Sequence, count: int) -> list:
    """At most ``count`` entries of ``values``, evenly spaced, always including the first and the last."""
    values = list(values)
    if len(values) <= count:
        return values
    return [values[round(i * (len(values) - 1) / (count - 1))] for i in range(count)]


def _draw_weights(ax, d: int, scaled: bool, num_keys: int, seed: int) -> float:
    """One query's weights, sorted from largest, as bars; returns their entropy."""
    weights = attention_weight_samples(d, scaled, num_keys, 1, seed)[0]  # (K,)
    entropy = float(softmax_entropy(weights))
    ax.bar(
        range(num_keys),
        torch.sort(weights, descending=True).values.tolist(),
        color="tab:red" if not scaled else "tab:blue",
    )
    ax.set_ylim(0, 1.02)
    label = "scaled" if scaled else "unscaled"
    ax.set_title(f"d = {d}, {label}\nentropy {entropy:.2f} nats", fontsize=9)
    ax.set_xticks([])
    return entropy


def _entropy_curves(d_values: Sequence[int], num_keys: int, seed: int) -> dict[bool, list[float]]:
    """Mean entropy against d, unscaled (False) and scaled (True)."""
    return {s: softmax_entropy_vs_dim(d_values, s, num_keys, trials=CURVE_TRIALS, seed=seed) for s in (False, True)}


def _draw_entropy_curves(
    ax, d_values: Sequence[int], curves: dict[bool, list[float]], num_keys: int, mark: tuple[int, bool] | None = None
):
    """The curves of :func:`_entropy_curves` with the uniform weights' log K for reference; ``mark = (d, scaled)``
    stars one point."""
    for scaled, color in ((False, "tab:red"), (True, "tab:blue")):
        ax.plot(d_values, curves[scaled], "o-", color=color, label="scaled by 1/sqrt(d)" if scaled else "unscaled")
    ax.axhline(math.log(num_keys), color="0.5", ls=":", lw=1, label=f"uniform: log {num_keys}")
    if mark is not None:
        d, scaled = mark
        ax.plot([d], [curves[scaled][d_values.index(d)]], "k*", markersize=13, zorder=5)
    ax.set_xscale("log", base=2)
    ax.set_xticks(d_values, [str(d) for d in d_values])
    ax.minorticks_off()
    ax.set_xlabel("d")
    ax.set_ylabel("mean entropy (nats)")
    ax.set_ylim(bottom=0)
    ax.set_title(f"mean over {CURVE_TRIALS} random queries, {num_keys} keys", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(True, alpha=0.3)


def softmax_scaling_grid(
    d_values: Sequence[int] = (1, 4, 16, 64, 256, 1024), num_keys: int = 16, seed: int = 0, max_columns: int = 4
):
    """Small multiples of one query's softmax weights, unscaled (top) and scaled by 1/sqrt(d) (bottom), for up to
    ``max_columns`` of the dimensions, beside the mean entropy against d (D2L 11.3.1). Returns the ``Figure``."""
    d_values = [_positive_int(d, "each d") for d in d_values]
    if not d_values:
        raise ValueError("give at least one dimension d")
    shown = _spread(d_values, max_columns)
    use_svg_display()
    fig = plt.figure(figsize=(2.3 * len(shown) + 4.0, 4.6))
    spec = fig.add_gridspec(2, len(shown) + 1, width_ratios=[1] * len(shown) + [1.9])
    for row, scaled in enumerate((False, True)):
        for col, d in enumerate(shown):
            ax = fig.add_subplot(spec[row, col])
            _draw_weights(ax, d, scaled, num_keys, seed)
            if col == 0:
                ax.set_ylabel("weight")
    _draw_entropy_curves(fig.add_subplot(spec[:, -1]), d_values, _entropy_curves(d_values, num_keys, seed), num_keys)
    fig.tight_layout()
    return fig


def softmax_scaling_explorer(d_values: Sequence[int] = (1, 4, 16, 64, 256, 1024), *, num_keys: int = 16, seed: int = 0):
    """Explore why dot products are divided by sqrt(d): a slider for d and a "scale by 1/sqrt(d)" toggle (D2L 11.3).

    For a random query and ``num_keys`` random keys with unit-variance
    entries, shows the query's attention weights (sorted) and their entropy,
    beside the mean entropy against d with the current setting starred.

    Returns:
        In Jupyter, an ``ipywidgets.interactive`` panel (its ``result`` is the
        latest figure). During the book build (:func:`static_mode`), or without
        ipywidgets, the static :func:`softmax_scaling_grid` figure instead.
    """
    d_values = [_positive_int(d, "each d") for d in d_values]
    if not d_values:
        raise ValueError("give at least one dimension d")
    widgets = None if static_mode() else _widgets_module()
    if widgets is None:
        return _static(softmax_scaling_grid(d_values, num_keys, seed))
    curves = _entropy_curves(d_values, num_keys, seed)
    last = {"fig": None}

    def draw(d, scaled):
        if last["fig"] is not None:
            plt.close(last["fig"])
        fig, (ax_w, ax_h) = plt.subplots(1, 2, figsize=(8.5, 3.2), gridspec_kw={"width_ratios": [1, 1.3]})
        _draw_weights(ax_w, d, scaled, num_keys, seed)
        ax_w.set_xlabel("keys, sorted by weight")
        ax_w.set_ylabel("weight")
        _draw_entropy_curves(ax_h, d_values, curves, num_keys, mark=(d, scaled))
        fig.tight_layout()
        last["fig"] = fig
        return fig

    d = widgets.SelectionSlider(options=d_values, value=d_values[0], description="d")
    scaled = widgets.ToggleButton(value=False, description="scale by 1/sqrt(d)", layout={"width": "auto"})
    return widgets.interactive(draw, d=d, scaled=scaled)
