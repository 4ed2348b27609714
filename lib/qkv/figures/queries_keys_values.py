"""Figures of D2L 11.1, "Queries, Keys, and Values" (``book/queries-keys-values.md``)."""

from __future__ import annotations

from qkv.figures._draw import arrow, box, canvas

__all__ = ["glance"]


def glance(weights=(0.05, 0.7, 0.2, 0.05)):
    """D2L 11.1 at a glance: a query is compared with every key of a database; the
    resulting weights (non-negative, summing to 1) mix the values into one output.

    ``weights`` are the attention weights drawn, one per key-value pair (the
    arrows' thickness follows them). Returns the ``Figure``.
    """
    fig, ax = canvas((7.5, 3.2), (0, 10), (0, 4.4))
    n = len(weights)
    ys = [3.6 - i * 0.95 for i in range(n)]
    box(ax, 1.0, 2.2, 1.3, 0.7, r"query $\mathbf{q}$", "#cfe3ff")
    for i, (y, w) in enumerate(zip(ys, weights)):
        box(ax, 3.6, y, 1.2, 0.6, rf"$\mathbf{{k}}_{i + 1}$", "#ffe2b8")
        box(ax, 6.2, y, 1.2, 0.6, rf"$\mathbf{{v}}_{i + 1}$", "#d5f2d0")
        arrow(ax, (1.65, 2.2), (3.0, y), width=0.8, color="0.55")
        arrow(ax, (4.2, y), (5.6, y), width=0.6 + 6 * w, color="#c0392b")
        ax.text(4.9, y + 0.17, rf"$\alpha_{i + 1}={w:.2f}$", ha="center", fontsize=8.5, color="#c0392b")
        arrow(ax, (6.8, y), (8.25, 2.2), width=0.6 + 6 * w, color="#c0392b", style="-")
    box(ax, 8.9, 2.2, 1.3, 0.8, r"$\sum_i \alpha_i \mathbf{v}_i$", "#f4d4f7")
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
