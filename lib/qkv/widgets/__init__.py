"""Interactive explorers of the course's sections, one module per section (D2L 11.2, 11.3, ...).

A section's explorers live in ``qkv.widgets.<module>``, named like the
section (the slug with ``_`` for ``-``; ``course.section.Section`` derives
it): :mod:`qkv.widgets.attention_pooling` explores kernel regression (D2L
11.2), :mod:`qkv.widgets.attention_scoring_functions` the scaling of dot
products (D2L 11.3). Not every section has one. The notebooks import the
section's module::

    from qkv.widgets import attention_scoring_functions as widgets
    widgets.softmax_scaling_explorer()

Each explorer returns an ipywidgets control panel when run in Jupyter. While
the book is built (the build sets the environment variable ``QKV_BOOK_BUILD=1``),
or where ipywidgets cannot be imported, it draws a static grid of several
settings instead and returns that matplotlib ``Figure``, so the printed page
shows what the sliders would. End the explorer's cell *without* a ``;``: a
trailing semicolon hides the widget.

The explorers that are pure arithmetic are *live* (:mod:`qkv.widgets._live`):
one JavaScript module each, under ``js/``, that runs as an anywidget widget in
Jupyter and in the built book's page alike, where it replaces the static
figure as soon as it has drawn.

This module holds what every explorer shares: :data:`BOOK_BUILD_ENV` and
:func:`static_mode` (is the book being built?), :func:`ipywidgets_or_none`
(ipywidgets, or None for a static figure) and :func:`static_figure`. It
re-exports no section's explorers, so it does not grow with the sections.
"""

from __future__ import annotations

import os

import matplotlib.pyplot as plt

__all__ = ["BOOK_BUILD_ENV", "NO_WIDGETS_NOTE", "static_mode", "ipywidgets_or_none", "static_figure"]

#: The environment variable that asks the explorers for static figures (set by ``publish/build_book.py``).
BOOK_BUILD_ENV = "QKV_BOOK_BUILD"
#: What an explorer prints, once, where ipywidgets cannot be imported.
NO_WIDGETS_NOTE = "ipywidgets is not installed, so here are fixed settings instead of sliders (pip install ipywidgets)."


def static_mode() -> bool:
    """True while the book is being built (``QKV_BOOK_BUILD`` set to anything but "" or "0"), when the
    explorers draw static figures instead of widgets."""
    return os.environ.get(BOOK_BUILD_ENV, "").strip() not in ("", "0")


def ipywidgets_or_none():
    """The ipywidgets module when an explorer should show sliders; None when it should draw a static figure
    instead: while the book is built (:func:`static_mode`), or where ipywidgets cannot be imported (then it
    first prints :data:`NO_WIDGETS_NOTE` on one line)."""
    if static_mode():
        return None
    try:
        import ipywidgets
    except ImportError:
        print(NO_WIDGETS_NOTE)
        return None
    return ipywidgets


def static_figure(fig):
    """Return ``fig`` detached from pyplot: Jupyter then shows it once, as the cell's value."""
    plt.close(fig)
    return fig
