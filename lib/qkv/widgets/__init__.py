"""Interactive explorers of the course's sections, one module per section (D2L 11.2, 11.3, ...).

A section's explorers live in ``qkv.widgets.<module>``, named like the
section (the slug with ``_`` for ``-``; ``course.section.Section`` derives
it): :mod:`qkv.widgets.attention_pooling` explores kernel regression (D2L
11.2), :mod:`qkv.widgets.attention_scoring_functions` the scaling of dot
products (D2L 11.3). Not every section has one. The notebooks import the
section's module::

    from qkv.widgets import attention_scoring_functions as widgets
    widgets.softmax_scaling_explorer()

Every explorer is *live* (:mod:`qkv.widgets._live`): one JavaScript module,
under ``js/``, that runs as an anywidget widget in Jupyter (JupyterLab, Colab)
and in the built book's page alike, with no kernel there. The explorers of
pure arithmetic (D2L 11.2, 11.3, 11.5, 11.6, 11.8) compute in the page; those
of trained models (11.4, 11.7, 11.9) show what the model computed when the page
ran, embedded in the page. While the book is built (the build sets the
environment variable ``QKV_BOOK_BUILD=1``), an explorer also draws a static grid
of several settings, the page's figure for print, PDF and readers without
JavaScript, which the live explorer replaces on screen; where anywidget cannot
be imported, the explorer returns that matplotlib ``Figure`` alone. End the
explorer's cell *without* a ``;``: a trailing semicolon hides the widget.

This module holds what every explorer shares: :data:`BOOK_BUILD_ENV` and
:func:`static_mode` (is the book being built?) and :func:`static_figure`. It
re-exports no section's explorers, so it does not grow with the sections.
"""

from __future__ import annotations

import os

import matplotlib.pyplot as plt

__all__ = ["BOOK_BUILD_ENV", "static_mode", "static_figure"]

#: The environment variable that asks the explorers for static figures (set by ``publish/build_book.py``).
BOOK_BUILD_ENV = "QKV_BOOK_BUILD"


def static_mode() -> bool:
    """True while the book is being built (``QKV_BOOK_BUILD`` set to anything but "" or "0"), when the
    explorers draw static figures instead of widgets."""
    return os.environ.get(BOOK_BUILD_ENV, "").strip() not in ("", "0")


def static_figure(fig):
    """Return ``fig`` detached from pyplot: Jupyter then shows it once, as the cell's value."""
    plt.close(fig)
    return fig
