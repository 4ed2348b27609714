"""Figures of the attention-cost lab, "Lab: The Cost of Attention" (``book/attention-cost-lab.md``), which
measures what D2L 11.6.2 compares on paper (and answers D2L 11.3's exercise on how the cost grows).

The lab's measured plots are drawn by :mod:`qkv.costlab` from its results;
this module holds the lab's opening diagram.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, Rectangle

__all__ = ["glance"]


def glance():
    """The lab at a glance: self-attention fills an n x n table of scores in one parallel step; an RNN walks
    the n tokens one after another; on log-log axes their costs are lines of slope 2 and 1 (D2L 11.6.2).
    Returns the ``Figure``: the picture on the left, the log-log axes on the right."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.0), gridspec_kw={"width_ratios": [1.45, 1]})
    left.set_xlim(0, 10)
    left.set_ylim(0.8, 6.1)
    left.set_aspect("equal")
    left.axis("off")
    m = 6
    for i in range(m):
        for j in range(m):
            left.add_patch(Rectangle((0.4 + 0.5 * j, 4.9 - 0.5 * i), 0.5, 0.5, fc="#cfe3ff", ec="0.4", lw=0.6))
    left.text(1.9, 5.65, "self-attention", ha="center", fontsize=10, weight="bold")
    left.text(1.9, 1.45, "n x n scores, all at once\n$O(n^2 d)$ FLOPs, $O(1)$ steps", ha="center", fontsize=8.5)
    left.text(7.0, 5.65, "RNN", ha="center", fontsize=10, weight="bold")
    for i in range(m):
        x = 4.6 + i * 0.85
        left.add_patch(Rectangle((x, 3.3), 0.6, 0.6, fc="#ffe2b8", ec="0.4", lw=0.6))
        if i:
            left.add_patch(FancyArrowPatch((x - 0.25, 3.6), (x, 3.6), arrowstyle="-|>", mutation_scale=8, lw=0.8))
    left.text(7.0, 1.45, "one token after another\n$O(n d^2)$ FLOPs, $O(n)$ steps", ha="center", fontsize=8.5)
    ns = [2.0**p for p in range(7, 15)]
    right.loglog(ns, [(n / ns[0]) ** 2 for n in ns], "-", color="C0", label="slope 2: attention")
    right.loglog(ns, [n / ns[0] for n in ns], "--", color="C1", label="slope 1: RNN, CNN")
    right.set_xlabel("sequence length n")
    right.set_ylabel("cost (relative)")
    right.set_title("measure, then fit $t = c\\,n^k$", fontsize=9)
    right.grid(True, which="both", alpha=0.3)
    right.legend(fontsize=8)
    fig.tight_layout()
    return fig
