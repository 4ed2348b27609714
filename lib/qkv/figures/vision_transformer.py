"""The figures of D2L 11.8, Transformers for Vision; ``glance()`` opens the section."""

from __future__ import annotations

import matplotlib.pyplot as plt


def glance():
    """D2L 11.8 at a glance (replace with the section's own summary drawing)."""
    fig, ax = plt.subplots(figsize=(4, 2.5))
    xs = [i / 10 for i in range(-20, 21)]
    ax.plot(xs, [x * x for x in xs])
    ax.set_xlabel("x")
    ax.set_ylabel("x squared")
    return fig
