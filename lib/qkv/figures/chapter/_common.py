"""What the chapter's panels share: the two languages, the CJK font, a canvas in a figure or a poster cell.

Every panel module has ``draw(lang="en", fig=None)``. ``lang`` is ``"en"`` or ``"zh"``; ``fig`` is a matplotlib
``Figure`` or ``SubFigure`` to draw into (the poster passes one cell of its grid), or ``None`` for a new figure of
:data:`PANEL_SIZE` inches. Labels are looked up in the module's own ``TEXT[lang]``.

Chinese labels need a CJK font: Noto Sans CJK SC from Debian's ``fonts-noto-cjk`` (``.ci/system-deps.sh``).
:func:`fonts` puts it behind DejaVu Sans in the font family, so Latin letters, digits and mathematics keep the
book's font and every Chinese character falls back to Noto; matplotlib's own cache may predate the font's
installation, so :func:`ensure_cjk_font` registers it by path when the cache does not know it. Mathtext
(``$...$``) has fonts of its own, read when the figure is rendered, which do not fall back to Noto: Chinese labels
write their mathematics in Unicode (``kᵢ``, ``QKᵀ/√d``) instead, and no Chinese label holds a ``$``.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib import font_manager

__all__ = ["LANGS", "PANEL_SIZE", "CJK_FAMILY", "check_lang", "ensure_cjk_font", "fonts", "new_figure", "canvas"]

LANGS = ("en", "zh")
#: Width and height (inches) of one panel on its own; the poster's cells keep about this aspect ratio.
PANEL_SIZE = (5.6, 4.4)
CJK_FAMILY = "Noto Sans CJK SC"
_FONT_DIRS = ("/usr/share/fonts/opentype/noto", "/usr/share/fonts/truetype/noto", "/usr/share/fonts")
#: Colours the panels share: queries, keys, values, masks and outputs look the same in every panel.
COLORS = {
    "query": "#cfe3ff",
    "key": "#ffe2b8",
    "value": "#d5f2d0",
    "output": "#f3d1f4",
    "mask": "#bbbbbb",
    "block": "#eeeeee",
}


def check_lang(lang) -> str:
    """``lang`` itself if it is one of :data:`LANGS`; otherwise a ValueError that says which there are."""
    if lang not in LANGS:
        raise ValueError(f"lang must be one of {LANGS} (English or Chinese labels), got {lang!r}")
    return lang


def ensure_cjk_font() -> str:
    """The CJK family's name, registered with matplotlib if its font cache was built before the font was installed.

    Raises a RuntimeError that says what to install when no Noto Sans CJK file is on the machine."""
    names = {entry.name for entry in font_manager.fontManager.ttflist}
    if CJK_FAMILY in names:
        return CJK_FAMILY
    for folder in _FONT_DIRS:
        for path in sorted(Path(folder).rglob("NotoSansCJK-*.tt[cf]")) if Path(folder).is_dir() else []:
            font_manager.fontManager.addfont(str(path))
        if CJK_FAMILY in {entry.name for entry in font_manager.fontManager.ttflist}:
            return CJK_FAMILY
    raise RuntimeError(
        f"the Chinese panels need the font {CJK_FAMILY!r}, which matplotlib cannot find: install Debian's "
        "fonts-noto-cjk (sudo apt-get install fonts-noto-cjk, as .ci/system-deps.sh does)"
    )


@contextlib.contextmanager
def fonts(lang: str):
    """Draw with DejaVu Sans first and, for Chinese, Noto Sans CJK SC as its fallback for the characters it lacks.

    Only the font settings are restored afterwards, not every rcParam as ``matplotlib.rc_context`` does: a first
    figure made inside loads the notebook's inline backend, which turns interactive mode on, and restoring the old
    ``interactive`` would keep every later figure of the notebook from being shown."""
    family = ["DejaVu Sans", ensure_cjk_font()] if check_lang(lang) == "zh" else ["DejaVu Sans"]
    rc = {"font.family": family, "font.size": 8, "axes.titlesize": 9, "axes.labelsize": 8}
    saved = {key: plt.rcParams[key] for key in rc}
    plt.rcParams.update(rc)
    try:
        yield
    finally:
        plt.rcParams.update(saved)


def new_figure(fig=None):
    """``fig`` itself, or a new figure of :data:`PANEL_SIZE` inches laid out by matplotlib's constrained layout."""
    if fig is not None:
        return fig
    return plt.figure(figsize=PANEL_SIZE, layout="constrained")


def canvas(fig, rect=None, xlim=(0, 10), ylim=(0, 8)):
    """An axes for boxes and arrows in ``fig`` (at ``rect`` = [left, bottom, width, height] in figure fractions, or
    filling it), spanning ``xlim`` x ``ylim`` in data coordinates, no axis lines. Returns the axes."""
    ax = fig.add_axes(rect) if rect is not None else fig.add_subplot()
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.axis("off")
    return ax


def title(fig, text: str) -> None:
    """The panel's title, on top of ``fig``; a long one is broken after its colon, so that it fits a poster cell."""
    for colon in (": ", "："):
        head, sep, tail = text.partition(colon)
        if sep and len(text) > 28:
            text = f"{head}{sep.strip()}\n{tail}"
            break
    fig.suptitle(text, fontsize=10, weight="bold")
