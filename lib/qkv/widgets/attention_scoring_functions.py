"""Interactive explorer of D2L 11.3, "Attention Scoring Functions" (``book/attention-scoring-functions.md``):
why dot products are divided by sqrt(d), with a slider for d and a scaling toggle.

:func:`softmax_scaling_explorer` is a live explorer (:mod:`qkv.widgets._live`):
the module ``js/softmax_scaling.js`` draws it, in JupyterLab and in the book,
from :func:`softmax_scaling_data`, and recomputes the weights and their
entropy in the page as d and the scaling change; the static
:func:`softmax_scaling_grid` stays for print and readers without JavaScript.
What it draws is computed by pure functions, tested on their own:
:func:`attention_score_samples`, :func:`attention_weight_samples` and
:func:`softmax_entropy` (the dot products and weights of random queries over
random keys, and how spread out the weights are), and
:func:`softmax_entropy_vs_dim`, which section 11.3 also uses for its figure on
softmax saturation. Shape letters are those of the glossary in :mod:`qkv`
(here ``B`` counts independent random trials).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import matplotlib.pyplot as plt
import torch

from qkv._validate import positive_int
from qkv.plotting import use_svg_display
from qkv.widgets import _live as live

__all__ = [
    "CURVE_TRIALS",
    "attention_score_samples",
    "attention_weight_samples",
    "softmax_entropy",
    "softmax_entropy_vs_dim",
    "softmax_scaling_grid",
    "softmax_scaling_data",
    "softmax_scaling_explorer",
]

#: The number of random queries behind each point of the explorers' entropy curves.
CURVE_TRIALS = 200


def attention_score_samples(d: int, num_keys: int = 16, trials: int = 1, seed: int = 0) -> torch.Tensor:
    """Unscaled dot products of random queries with random keys, shape (B, K), float64 (D2L 11.3.1).

    A generator seeded with ``seed`` draws the queries, shape (B, 1, d) with
    B = ``trials``, and then the keys, shape (B, K, d) with K = ``num_keys``,
    all entries independent standard normals in float64; each score is a
    query's dot product with one of its keys (variance d).
    """
    d = positive_int(d, "d")
    num_keys = positive_int(num_keys, "num_keys")
    trials = positive_int(trials, "trials")
    generator = torch.Generator().manual_seed(seed)
    queries = torch.randn(trials, 1, d, generator=generator, dtype=torch.float64)  # (B, 1, d)
    keys = torch.randn(trials, num_keys, d, generator=generator, dtype=torch.float64)  # (B, K, d)
    return (queries @ keys.transpose(1, 2)).squeeze(1)  # (B, 1, d) @ (B, d, K) -> (B, 1, K) -> (B, K)


def attention_weight_samples(d: int, scaled: bool, num_keys: int = 16, trials: int = 1, seed: int = 0):
    """Softmax attention weights of random queries over random keys (D2L 11.3.1).

    The scores are :func:`attention_score_samples` (the same draws for the
    same seed), divided by ``sqrt(d)`` when ``scaled``; each trial's softmax
    over its K keys is returned, shape (B, K). The same seed gives the same
    draws whether scaled or not, so the two settings differ only by the scale.
    """
    scores = attention_score_samples(d, num_keys, trials, seed)  # (B, K)
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
    d_values = [positive_int(d, "each d") for d in d_values]
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


def softmax_scaling_data(
    d_values: Sequence[int] = (1, 4, 16, 64, 256, 1024), num_keys: int = 16, seed: int = 0
) -> dict:
    """What ``js/softmax_scaling.js`` draws from, as JSON values (D2L 11.3.1).

    For each d of ``d_values``: the ``num_keys`` unscaled dot products of one
    random query (:func:`attention_score_samples` with ``seed``, from which
    the page computes the weights at either scaling, as
    :func:`attention_weight_samples` does), and the mean entropy over
    :data:`CURVE_TRIALS` queries, unscaled and scaled (the curves, drawn as
    they are).
    """
    d_values = [positive_int(d, "each d") for d in d_values]
    if not d_values:
        raise ValueError("give at least one dimension d")
    num_keys = positive_int(num_keys, "num_keys")
    curves = _entropy_curves(d_values, num_keys, seed)
    return {
        "d_values": d_values,
        "num_keys": num_keys,
        "seed": seed,
        "trials": CURVE_TRIALS,
        "scores": [attention_score_samples(d, num_keys, 1, seed)[0].tolist() for d in d_values],
        "curves": {"unscaled": curves[False], "scaled": curves[True]},
        "log_k": math.log(num_keys),
    }


def softmax_scaling_explorer(d_values: Sequence[int] = (1, 4, 16, 64, 256, 1024), *, num_keys: int = 16, seed: int = 0):
    """Explore why dot products are divided by sqrt(d): a slider for d and a "scale by 1/sqrt(d)" toggle (D2L 11.3).

    For a random query and ``num_keys`` random keys with unit-variance
    entries, shows the query's attention weights (sorted) and their entropy,
    beside the mean entropy against d with the current setting starred; a
    line of text says the largest weight, its key and the entropy.

    Returns:
        In Jupyter, a live widget (``js/softmax_scaling.js``; its traitlets ``d`` and ``scaled`` are the
        controls). During the book build (:func:`qkv.widgets.static_mode`), the same explorer for the page, after
        the static :func:`softmax_scaling_grid` that it replaces; without anywidget, that figure alone
        (:mod:`qkv.widgets._live`).
    """
    d_values = [positive_int(d, "each d") for d in d_values]
    if not d_values:
        raise ValueError("give at least one dimension d")
    return live.explorer(
        "softmax_scaling",
        data=lambda: softmax_scaling_data(d_values, num_keys, seed),
        settings={"d": d_values[0], "scaled": False},
        static=lambda: softmax_scaling_grid(d_values, num_keys, seed),
        label="Softmax scaling explorer: choose d and switch the scaling by 1/sqrt(d) on and off",
    )
