"""Drawing helpers that the sections' figures share: rounded boxes, arrows and a blank canvas.

Private to :mod:`qkv.figures` (hence the leading ``_``): a section's figure
module imports them as ``from qkv.figures._draw import box, arrow, canvas``.
Coordinates are data coordinates of the canvas's axes, which keep an equal
aspect ratio so that boxes are not stretched.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

__all__ = ["box", "arrow", "canvas"]


def box(ax, x, y, w, h, text, color, fontsize=10, alpha=1.0):
    """A rounded box of width ``w`` and height ``h`` centred on (x, y), filled with ``color``, holding ``text``."""
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


def arrow(ax, start, end, width=1.0, color="0.3", style="-|>", rad=0.0):
    """An arrow from ``start`` to ``end`` (points (x, y)), ``width`` points thick, bent by ``rad`` (0: straight)."""
    ax.add_patch(
        FancyArrowPatch(
            start, end, arrowstyle=style, mutation_scale=12, lw=width, color=color, connectionstyle=f"arc3,rad={rad}"
        )
    )


def canvas(figsize, xlim, ylim):
    """A new figure of ``figsize`` inches with one axes spanning ``xlim`` x ``ylim``, equal aspect, no axis lines.
    Returns ``(fig, ax)``."""
    fig, ax = plt.subplots(figsize=figsize)
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.set_aspect("equal")
    ax.axis("off")
    return fig, ax
