"""The chapter at a glance: ten panels that tell D2L chapter 11 on one page (``book/chapter-at-a-glance.md``).

Not a section: the page has no exercises, so this package belongs to no section's slug (``course.section``
lists it as a chapter page's figures). One module per panel, in the chapter's order; each has
``draw(lang="en", fig=None)``, which draws the panel with English (``"en"``) or Chinese (``"zh"``) labels into a new
figure or into ``fig`` (a cell of the poster, ``publish/poster.py``) and returns the figure, and ``SECTION``, the
slug of the section the panel sums up. The panels draw from ``qkv`` itself: the trained models of sections 11.4
and 11.5 (loaded from :mod:`qkv.recipes.weights`'s cache), the lab's timer, the real positional encoding and the
real masks of section 11.9.
"""

from __future__ import annotations

import importlib

PANELS = (
    "panel01_question",
    "panel02_soft_lookup",
    "panel03_scoring",
    "panel04_bahdanau",
    "panel05_multihead",
    "panel06_self_attention",
    "panel07_positional",
    "panel08_encoder_block",
    "panel09_encoder_decoder",
    "panel10_one_block_four_uses",
)

__all__ = ["PANELS", "panel", "panels"]


def panel(i: int):
    """The module of panel ``i`` (1 to 10)."""
    if isinstance(i, bool) or not isinstance(i, int) or not 1 <= i <= len(PANELS):
        raise ValueError(f"there are panels 1 to {len(PANELS)}, got {i!r}")
    return importlib.import_module(f"{__name__}.{PANELS[i - 1]}")


def panels():
    """The ten panel modules, in the chapter's order."""
    return [panel(i) for i in range(1, len(PANELS) + 1)]
