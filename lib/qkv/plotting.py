"""Plotting helpers: attention heatmaps (D2L 11.1) and curves in the spirit of ``d2l.plot``.

:func:`show_heatmaps` draws a grid of attention-weight matrices with one shared
colour scale, so that a weight of 0.3 has the same colour in every panel.
:func:`plot` draws one or more curves on one set of axes. Neither calls
``plt.show()``: both return what they drew, so code (and tests) can inspect it.
In a notebook with the inline backend the figure is shown when the cell ends;
end the cell with ``;`` to avoid a second, textual echo of the return value.
Shape letters are those of the glossary in :mod:`qkv`.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import Normalize

__all__ = ["use_svg_display", "show_heatmaps", "plot"]

DEFAULT_FMTS = ("-", "m--", "g-.", "r:")


def use_svg_display() -> bool:
    """Show inline figures as SVG when running inside IPython/Jupyter (D2L 2.4.2).

    Returns True when the format was switched and False outside IPython, where
    the call does nothing (scripts and tests keep their backend untouched).
    """
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    if get_ipython() is None:
        return False
    from matplotlib_inline.backend_inline import set_matplotlib_formats

    set_matplotlib_formats("svg")
    return True


def _to_numpy(X) -> np.ndarray:
    """A detached CPU NumPy copy of a tensor, array or nested sequence."""
    if hasattr(X, "detach"):  # a torch tensor, possibly on a GPU or requiring grad
        X = X.detach().cpu().numpy()
    return np.asarray(X)


def show_heatmaps(
    matrices,
    xlabel: str,
    ylabel: str,
    titles: Sequence[str] | None = None,
    figsize: tuple[float, float] = (2.5, 2.5),
    cmap: str = "Reds",
):
    """Draw a grid of matrices, typically attention weights, as heatmaps (D2L 11.1.1).

    Args:
        matrices: tensor or array of shape (num_rows, num_cols, Q, K): panel
            ``[i, j]`` shows ``matrices[i, j]`` with queries down and keys across.
            A 2-D (Q, K) input is drawn as one panel and a 3-D (num_cols, Q, K)
            input as one row of panels (for example one per head).
        xlabel: label under each panel of the bottom row (usually "Keys").
        ylabel: label left of each panel of the first column (usually "Queries").
        titles: one title per column, or None.
        figsize: size of the whole figure in inches, as in D2L.
        cmap: Matplotlib colour map.

    Returns:
        The ``matplotlib.figure.Figure``. Its axes are the num_rows * num_cols
        panels in row-major order followed by one colour bar. Every panel uses
        the same colour scale, from the smallest to the largest entry of all
        the matrices, so the colour bar is valid for all of them.
    """
    use_svg_display()
    M = _to_numpy(matrices)
    if M.ndim == 2:
        M = M[None, None]  # (Q, K) -> (1, 1, Q, K)
    elif M.ndim == 3:
        M = M[None]  # (num_cols, Q, K) -> (1, num_cols, Q, K)
    elif M.ndim != 4:
        raise ValueError(
            "show_heatmaps expects matrices of shape (num_rows, num_cols, Q, K), or (num_cols, Q, K) for one row, "
            f"or (Q, K) for one panel; got {M.ndim} axes, shape {M.shape}"
        )
    num_rows, num_cols, Q, K = M.shape
    if min(M.shape) == 0:
        raise ValueError(f"show_heatmaps needs at least one non-empty matrix; got shape {M.shape}")
    if not np.issubdtype(M.dtype, np.number) or np.issubdtype(M.dtype, np.complexfloating):
        raise TypeError(f"show_heatmaps needs real numbers, got dtype {M.dtype}")
    if titles is not None and len(titles) != num_cols:
        raise ValueError(f"give one title per column: {num_cols} columns but {len(titles)} titles")
    norm = Normalize(vmin=float(np.nanmin(M)), vmax=float(np.nanmax(M)))
    fig, axes = plt.subplots(num_rows, num_cols, figsize=figsize, sharex=True, sharey=True, squeeze=False)
    image = None
    for i in range(num_rows):
        for j in range(num_cols):
            ax = axes[i, j]
            image = ax.imshow(M[i, j], cmap=cmap, norm=norm)  # (Q, K): queries down, keys across
            if i == num_rows - 1:
                ax.set_xlabel(xlabel)
            if j == 0:
                ax.set_ylabel(ylabel)
            if titles is not None:
                ax.set_title(titles[j])
    fig.colorbar(image, ax=axes, shrink=0.6)
    return fig


def _has_one_axis(X) -> bool:
    """True for a single curve: a 1-D array/tensor or a flat list of numbers."""
    if hasattr(X, "ndim"):
        return X.ndim == 1
    return isinstance(X, list | tuple) and (len(X) == 0 or not hasattr(X[0], "__len__"))


def _curves(X) -> list[np.ndarray]:
    """A list of 1-D arrays: one curve, or one per row/item."""
    if _has_one_axis(X):
        return [_to_numpy(X)]
    return [_to_numpy(x).reshape(-1) for x in X]  # each item, any shape -> (n,)


def plot(
    X,
    Y=None,
    xlabel: str | None = None,
    ylabel: str | None = None,
    legend: Sequence[str] | None = None,
    xlim=None,
    ylim=None,
    xscale: str = "linear",
    yscale: str = "linear",
    fmts: Sequence[str] = DEFAULT_FMTS,
    figsize: tuple[float, float] = (3.5, 2.5),
    axes=None,
):
    """Plot one or several curves on one set of axes, like ``d2l.plot`` (D2L 2.4.2).

    ``plot(y)`` draws ``y`` against its index; ``plot(x, y)`` draws ``y``
    against ``x``; ``Y`` may hold several curves (a list of 1-D sequences or a
    2-D array, one curve per row) that share one ``x`` or have one ``x`` each.
    The format strings ``fmts`` are used in turn and repeat when there are more
    curves. When ``axes`` is None a new figure of size ``figsize`` is made;
    otherwise ``axes`` is cleared and reused. Returns the axes.
    """
    use_svg_display()
    if Y is None:
        ys = _curves(X)
        xs = [None] * len(ys)
    else:
        ys = _curves(Y)
        xs = _curves(X)
        if len(xs) == 1:
            xs = xs * len(ys)
        if len(xs) != len(ys):
            raise ValueError(f"give one x for all curves or one x per curve: {len(xs)} x's for {len(ys)} curves")
    for n, (x, y) in enumerate(zip(xs, ys)):
        if x is not None and len(x) != len(y):
            raise ValueError(f"curve {n}: x has {len(x)} points but y has {len(y)}")
    if legend is not None and len(legend) > len(ys):
        raise ValueError(f"{len(legend)} legend entries for {len(ys)} curves")
    if axes is None:
        _, axes = plt.subplots(figsize=figsize)
    axes.cla()
    for x, y, fmt in zip(xs, ys, itertools.cycle(fmts)):
        if x is None:
            axes.plot(y, fmt)
        else:
            axes.plot(x, y, fmt)
    axes.set_xscale(xscale)
    axes.set_yscale(yscale)
    if xlabel is not None:
        axes.set_xlabel(xlabel)
    if ylabel is not None:
        axes.set_ylabel(ylabel)
    if xlim is not None:
        axes.set_xlim(xlim)
    if ylim is not None:
        axes.set_ylim(ylim)
    if legend:
        axes.legend(legend)
    axes.grid(True)
    return axes
