"""The "at a glance" pictures that open each section of the course (D2L 11.1-11.9).

Each function draws one summary diagram with matplotlib and returns the
``Figure``; the notebooks call them in a cell whose input is hidden in the
book. Drawing code is kept here so the notebooks stay about attention.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

__all__ = ["queries_keys_values_glance", "attention_pooling_glance", "scoring_glance"]


def _box(ax, x, y, w, h, text, color, fontsize=10, alpha=1.0):
    ax.add_patch(
        FancyBboxPatch(
            (x - w / 2, y - h / 2),
            w,
            h,
            boxstyle="round,pad=0.02,rounding_size=0.06",
            fc=color,
            ec="0.25",
            lw=1,
            alpha=alpha,
        )
    )
    ax.text(x, y, text, ha="center", va="center", fontsize=fontsize)


def _arrow(ax, start, end, width=1.0, color="0.3", style="-|>", rad=0.0):
    ax.add_patch(
        FancyArrowPatch(
            start, end, arrowstyle=style, mutation_scale=12, lw=width, color=color, connectionstyle=f"arc3,rad={rad}"
        )
    )


def _canvas(figsize, xlim, ylim):
    fig, ax = plt.subplots(figsize=figsize)
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.set_aspect("equal")
    ax.axis("off")
    return fig, ax


def queries_keys_values_glance(weights=(0.05, 0.7, 0.2, 0.05)):
    """D2L 11.1 at a glance: a query is compared with every key of a database; the
    resulting weights (non-negative, summing to 1) mix the values into one output."""
    fig, ax = _canvas((7.5, 3.2), (0, 10), (0, 4.4))
    n = len(weights)
    ys = [3.6 - i * 0.95 for i in range(n)]
    _box(ax, 1.0, 2.2, 1.3, 0.7, r"query $\mathbf{q}$", "#cfe3ff")
    for i, (y, w) in enumerate(zip(ys, weights)):
        _box(ax, 3.6, y, 1.2, 0.6, rf"$\mathbf{{k}}_{i + 1}$", "#ffe2b8")
        _box(ax, 6.2, y, 1.2, 0.6, rf"$\mathbf{{v}}_{i + 1}$", "#d5f2d0")
        _arrow(ax, (1.65, 2.2), (3.0, y), width=0.8, color="0.55")
        _arrow(ax, (4.2, y), (5.6, y), width=0.6 + 6 * w, color="#c0392b")
        ax.text(4.9, y + 0.17, rf"$\alpha_{i + 1}={w:.2f}$", ha="center", fontsize=8.5, color="#c0392b")
        _arrow(ax, (6.8, y), (8.25, 2.2), width=0.6 + 6 * w, color="#c0392b", style="-")
    _box(ax, 8.9, 2.2, 1.3, 0.8, r"$\sum_i \alpha_i \mathbf{v}_i$", "#f4d4f7")
    ax.text(3.6, 4.25, "keys", ha="center", fontsize=10)
    ax.text(6.2, 4.25, "values", ha="center", fontsize=10)
    ax.text(
        4.9,
        0.05,
        r"weights $\alpha_i = \mathrm{softmax}_i\, a(\mathbf{q}, \mathbf{k}_i)$: "
        r"$\alpha_i \geq 0$, $\sum_i \alpha_i = 1$",
        ha="center",
        fontsize=9.5,
    )
    return fig


def attention_pooling_glance(x_train=(0.5, 1.3, 2.0, 2.6, 3.4, 4.2), x_query=2.3, sigma=0.6):
    """D2L 11.2 at a glance: Nadaraya-Watson regression weighs each training target by a
    kernel of its distance to the query, so near points count most."""
    import math

    fig, (ax_top, ax_bot) = plt.subplots(2, 1, figsize=(6.5, 3.4), sharex=True, gridspec_kw={"height_ratios": [1.2, 1]})
    xs = [i / 100 for i in range(0, 501)]
    ax_top.plot(xs, [math.exp(-(((x - x_query) / sigma) ** 2) / 2) for x in xs], color="#2c7fb8")
    ax_top.axvline(x_query, color="#c0392b", ls="--", lw=1)
    ax_top.text(x_query + 0.08, 1.12, "query x", color="#c0392b", ha="left", fontsize=9)
    ax_top.set_ylim(0, 1.35)
    ax_top.set_ylabel("kernel")
    raw = [math.exp(-(((x - x_query) / sigma) ** 2) / 2) for x in x_train]
    alphas = [r / sum(raw) for r in raw]
    ax_bot.bar(x_train, alphas, width=0.25, color="#f39c12")
    for x, a in zip(x_train, alphas):
        ax_bot.text(x, a + 0.02, f"{a:.2f}", ha="center", fontsize=8)
    ax_bot.set_ylim(0, max(alphas) + 0.15)
    ax_bot.set_ylabel(r"weight $w_i$")
    ax_bot.set_xlabel(r"training inputs $x_i$ (the keys)")
    ax_top.set_title(
        r"$\hat f(x)=\sum_i w_i\, y_i$: the weights $w_i$ are the kernel, normalised to sum to 1", fontsize=10
    )
    fig.tight_layout()
    return fig


def scoring_glance():
    """D2L 11.3 at a glance: score every query-key pair, mask the padding, take a softmax
    per query, and return the weighted sum of the values."""
    fig, ax = _canvas((8.5, 2.2), (0, 17), (0, 4))
    steps = [
        ("1. score", r"$a(\mathbf{q}, \mathbf{k}_i)$" + "\n" + r"$\mathbf{q}^\top\mathbf{k}_i/\sqrt{d}$", "#cfe3ff"),
        ("2. mask", "padded keys get\na huge negative\nscore: exp = 0", "#ffe2b8"),
        ("3. softmax", r"$\alpha_i = \frac{\exp a_i}{\sum_j \exp a_j}$", "#fdd"),
        ("4. weighted sum", r"$\sum_i \alpha_i \mathbf{v}_i$", "#d5f2d0"),
    ]
    for i, (title, body, color) in enumerate(steps):
        x = 2.2 + i * 4.2
        _box(ax, x, 1.7, 3.3, 1.9, body, color, fontsize=10)
        ax.text(x, 3.35, title, ha="center", fontsize=11, weight="bold")
        if i:
            _arrow(ax, (x - 4.2 + 1.7, 1.7), (x - 1.7, 1.7), width=1.5)
    return fig
