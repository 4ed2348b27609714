"""Interactive explorer of D2L 11.6, "Self-Attention and Positional Encoding"
(``book/self-attention-and-positional-encoding.md``): how one pair of columns of the sinusoidal table turns as the
position grows, with sliders for the position and the pair.

:func:`encoding_explorer` returns the controls in Jupyter and the static :func:`encoding_grid` in the book (see
:mod:`qkv.widgets`). What it draws is computed by :func:`pair_trajectory`, tested on its own: the points
``(P[t, 2j + 1], P[t, 2j]) = (cos(t w_j), sin(t w_j))`` for t = 0 .. i, which walk round the unit circle by the angle
``w_j = 1 / 10000^(2j/d)`` per position (D2L 11.6.3: the encoding of position i + delta is the one of i turned by
``delta w_j``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import matplotlib.pyplot as plt
import torch

from qkv._validate import int_in
from qkv.plotting import use_svg_display
from qkv.positional import sinusoidal_table
from qkv.widgets import ipywidgets_or_none, static_figure

__all__ = ["pair_trajectory", "encoding_grid", "encoding_explorer"]


def pair_trajectory(position: int, pair: int, num_hiddens: int = 32) -> torch.Tensor:
    """The points ``(P[t, 2j + 1], P[t, 2j])`` = (cos, sin) of pair ``j`` = ``pair`` of the sinusoidal table of width
    ``num_hiddens``, for the positions t = 0 .. ``position``: shape (position + 1, 2), float64 (D2L 11.6.3).

    They lie on the unit circle; from one position to the next the point turns counter-clockwise by
    ``w_j = 1 / 10000^(2j / num_hiddens)`` radians.
    """
    num_hiddens = int_in(num_hiddens, "num_hiddens", 2, 4096)
    if num_hiddens % 2:
        raise ValueError(f"num_hiddens must be even (pairs of columns), got {num_hiddens}")
    position = int_in(position, "position", 0, 100_000)
    pair = int_in(pair, "pair", 0, num_hiddens // 2 - 1)
    P = sinusoidal_table(position + 1, num_hiddens)  # (T, d)
    return torch.stack((P[:, 2 * pair + 1], P[:, 2 * pair]), dim=1)  # (T, 2): (cos, sin) of t * w_j


def _draw(ax_circle, ax_table, position: int, pair: int, num_hiddens: int, max_position: int) -> None:
    points = pair_trajectory(position, pair, num_hiddens)  # (T, 2)
    omega = 1 / 10000 ** (2 * pair / num_hiddens)
    circle = [2 * math.pi * k / 200 for k in range(201)]
    ax_circle.plot([math.cos(a) for a in circle], [math.sin(a) for a in circle], color="0.8", lw=1)
    xs, ys = points[:, 0].tolist(), points[:, 1].tolist()
    ax_circle.plot(xs, ys, ".", color="tab:blue", markersize=4)
    ax_circle.plot([0, xs[-1]], [0, ys[-1]], color="tab:red", lw=2)
    ax_circle.plot([xs[-1]], [ys[-1]], "o", color="tab:red")
    ax_circle.set_aspect("equal")
    ax_circle.set_xlim(-1.15, 1.15)
    ax_circle.set_ylim(-1.15, 1.15)
    ax_circle.set_xlabel(f"column {2 * pair + 1} (cos)")
    ax_circle.set_ylabel(f"column {2 * pair} (sin)")
    turns = position * omega / (2 * math.pi)
    ax_circle.set_title(f"position {position}, pair {pair}: w = {omega:.3g}\n{turns:.2f} turns", fontsize=9)
    P = sinusoidal_table(max_position, num_hiddens).numpy()  # (T, d)
    ax_table.imshow(P, cmap="RdBu_r", aspect="auto", vmin=-1, vmax=1)
    ax_table.axhline(position, color="tab:red", lw=1.5)
    for col in (2 * pair, 2 * pair + 1):
        ax_table.axvline(col, color="k", lw=0.8, ls=":")
    ax_table.set_xlabel("column")
    ax_table.set_ylabel("position")
    ax_table.set_title("the table; row and pair shown", fontsize=9)


def encoding_grid(
    settings: Sequence[tuple[int, int]] = ((10, 0), (10, 3), (40, 3), (40, 8)),
    num_hiddens: int = 32,
    max_position: int = 60,
):
    """Small multiples of :func:`encoding_explorer`'s circle, one per ``(position, pair)`` in ``settings``, beside
    the table with the last setting marked (D2L 11.6.3). Returns the ``Figure``."""
    settings = list(settings)
    if not settings:
        raise ValueError("give at least one (position, pair) setting")
    use_svg_display()
    fig = plt.figure(figsize=(2.4 * len(settings) + 3.2, 3.0))
    spec = fig.add_gridspec(1, len(settings) + 1, width_ratios=[1] * len(settings) + [1.3])
    table = fig.add_subplot(spec[0, -1])
    for col, (position, pair) in enumerate(settings):
        _draw(fig.add_subplot(spec[0, col]), table, position, pair, num_hiddens, max_position)
    fig.tight_layout()
    return fig


def encoding_explorer(num_hiddens: int = 32, max_position: int = 60):
    """Explore the sinusoidal encoding (D2L 11.6.3): sliders for the position i and the pair j of columns
    (2j, 2j + 1). The pair, read as a point (cos, sin), walks round the unit circle by w_j per position: fast for
    the first pairs, slowly for the last, as the bits of a binary counter flip.

    Returns:
        In Jupyter, an ``ipywidgets.interactive`` panel. During the book build (:func:`qkv.widgets.static_mode`),
        or without ipywidgets, the static :func:`encoding_grid` figure instead.
    """
    num_hiddens = int_in(num_hiddens, "num_hiddens", 2, 4096)
    max_position = int_in(max_position, "max_position", 1, 100_000)
    widgets = ipywidgets_or_none()
    if widgets is None:
        return static_figure(encoding_grid(num_hiddens=num_hiddens, max_position=max_position))
    last = {"fig": None}

    def draw(position, pair):
        if last["fig"] is not None:
            plt.close(last["fig"])
        fig, (ax_c, ax_t) = plt.subplots(1, 2, figsize=(7.5, 3.2), gridspec_kw={"width_ratios": [1, 1.3]})
        _draw(ax_c, ax_t, position, pair, num_hiddens, max_position)
        fig.tight_layout()
        last["fig"] = fig
        return fig

    position = widgets.IntSlider(value=10, min=0, max=max_position - 1, description="position i")
    pair = widgets.IntSlider(value=0, min=0, max=num_hiddens // 2 - 1, description="pair j")
    return widgets.interactive(draw, position=position, pair=pair)
