"""Figures of D2L 11.3, "Attention Scoring Functions" (``book/attention-scoring-functions.md``)."""

from __future__ import annotations

from qkv.figures._draw import arrow, box, canvas

__all__ = ["glance"]


def glance():
    """D2L 11.3 at a glance: score every query-key pair, mask the padding, take a softmax
    per query, and return the weighted sum of the values. Returns the ``Figure``."""
    fig, ax = canvas((8.5, 2.2), (0, 17), (0, 4))
    steps = [
        ("1. score", r"$a(\mathbf{q}, \mathbf{k}_i)$" + "\n" + r"$\mathbf{q}^\top\mathbf{k}_i/\sqrt{d}$", "#cfe3ff"),
        ("2. mask", "padded keys get\na huge negative\nscore: exp = 0", "#ffe2b8"),
        ("3. softmax", r"$\alpha_i = \frac{\exp a_i}{\sum_j \exp a_j}$", "#fdd"),
        ("4. weighted sum", r"$\sum_i \alpha_i \mathbf{v}_i$", "#d5f2d0"),
    ]
    for i, (title, body, color) in enumerate(steps):
        x = 2.2 + i * 4.2
        box(ax, x, 1.7, 3.3, 1.9, body, color, fontsize=10)
        ax.text(x, 3.35, title, ha="center", fontsize=11, weight="bold")
        if i:
            arrow(ax, (x - 4.2 + 1.7, 1.7), (x - 1.7, 1.7), width=1.5)
    return fig
