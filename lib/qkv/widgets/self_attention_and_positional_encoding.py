"""Interactive explorer of D2L 11.6, "Self-Attention and Positional Encoding"
(``book/self-attention-and-positional-encoding.md``): how one pair of columns of the sinusoidal table turns as the
position grows, and how a shift by delta positions is a rotation, with sliders for the position, the pair and the
shift.

:func:`encoding_explorer` is a live explorer (:mod:`qkv.widgets._live`): the module ``js/positional_encoding.js``
draws it, in JupyterLab and in the book, from :func:`encoding_data`, and computes the table, the points and the
rotation in the page; the static :func:`encoding_grid` stays for print and readers without JavaScript. What it draws
is what :func:`pair_trajectory` computes, tested on its own: the points
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
from qkv.widgets import _live as live

__all__ = ["pair_trajectory", "encoding_grid", "encoding_data", "encoding_explorer"]


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


def encoding_data(num_hiddens: int = 32, max_position: int = 60) -> dict:
    """What ``js/positional_encoding.js`` draws from, as JSON values (D2L 11.6.3): the width d of the table and the
    number of rows it shows. The page computes the table (as :func:`qkv.positional.sinusoidal_table`), the points of
    :func:`pair_trajectory` and the rotation of eq-shift-rotation itself."""
    num_hiddens = int_in(num_hiddens, "num_hiddens", 2, 4096)
    if num_hiddens % 2:
        raise ValueError(f"num_hiddens must be even (pairs of columns), got {num_hiddens}")
    max_position = int_in(max_position, "max_position", 1, 10_000)
    return {"num_hiddens": num_hiddens, "max_position": max_position}


def encoding_explorer(num_hiddens: int = 32, max_position: int = 60):
    """Explore the sinusoidal encoding (D2L 11.6.3): sliders for the position i, the pair j of columns
    (2j, 2j + 1) and a shift delta. The pair, read as a point (cos, sin), walks round the unit circle by w_j per
    position: fast for the first pairs, slowly for the last, as the bits of a binary counter flip. The shift turns
    row i's point by delta w_j, onto row i + delta's (eq-shift-rotation); a line of text gives the numbers.

    Returns:
        In Jupyter, a live widget (``js/positional_encoding.js``; its traitlets ``position``, ``pair`` and
        ``offset`` are the controls). During the book build (:func:`qkv.widgets.static_mode`), the same explorer for
        the page, after the static :func:`encoding_grid` that it replaces; without anywidget, that figure alone
        (:mod:`qkv.widgets._live`).
    """
    data = encoding_data(num_hiddens, max_position)
    return live.explorer(
        "positional_encoding",
        data=lambda: data,
        settings={"position": min(10, max_position - 1), "pair": 0, "offset": min(5, max_position - 1)},
        static=lambda: encoding_grid(num_hiddens=num_hiddens, max_position=max_position),
        label="Positional encoding explorer: choose the position, the pair of columns and a shift",
    )
