"""Figures of D2L 11.2, "Attention Pooling by Similarity" (``book/attention-pooling.md``)."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt

__all__ = ["glance"]


def glance(x_train=(0.5, 1.3, 2.0, 2.6, 3.4, 4.2), x_query=2.3, sigma=0.6):
    """D2L 11.2 at a glance: Nadaraya-Watson regression weighs each training target by a
    kernel of its distance to the query, so near points count most.

    Draws a Gaussian kernel of width ``sigma`` centred on ``x_query`` (top) and
    the normalised weights it gives the training inputs ``x_train`` (bottom).
    Returns the ``Figure``.
    """
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
