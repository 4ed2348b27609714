"""Reading the live explorers in Chromium, as a reader does (``qkv.widgets._live``; issue 42).

The browser tests of the explorers (``tests/book/test_explorer*.py``) share one Chromium, started once per session in
a thread of its own (``tests/book/conftest.py``'s ``explorers`` fixture), and the helpers here: open an explorer's
page and wait until it has drawn, move a slider with the mouse, read its aria-live line, check that it replaced its
cell's static figure and that print keeps the figure, and photograph it.

Where an explorer lives: in the built book, every page whose HTML holds ``data-qkv-live="<name>"``
(:func:`book_pages`). While an explorer is being written, ``QKV_EXPLORER_STANDALONE=1`` reads it from a page of its own
instead (:func:`standalone_page`: the static figure and the explorer, as the book shows them, with no book to build),
made by the ``standalone`` function its test module passes.
"""

from __future__ import annotations

import base64
import html as html_lib
import io
import os
import re
from collections.abc import Callable
from pathlib import Path

from course import notebooks as nbs

__all__ = [
    "READY_JS",
    "SHOTS",
    "STANDALONE_ENV",
    "STATE_JS",
    "book_pages",
    "check_print_keeps_the_figure",
    "check_replaces_the_figure",
    "drag_to_end",
    "embedded_state",
    "shoot",
    "standalone",
    "standalone_page",
    "summary",
]

#: Where the explorers' screenshots go, for review.
SHOTS = nbs.ROOT / "_build" / "screenshots" / "explorers"
#: Set to 1 to read each explorer from a page of its own (:func:`standalone_page`) rather than the built book.
STANDALONE_ENV = "QKV_EXPLORER_STANDALONE"

READY_JS = """(name) => {
  const box = document.querySelector(`.qkv-live[data-qkv-live="${name}"]`);
  return box && box.dataset.qkvReady !== undefined;
}"""
STATE_JS = """(name) => {
  const box = document.querySelector(`.qkv-live[data-qkv-live="${name}"]`);
  const cell = box.closest('.cell') || box.parentElement;
  const statics = [...cell.querySelectorAll('img')];
  return {
    hidden: box.hidden,
    visible: box.getBoundingClientRect().height > 0,
    statics: statics.map(img => ({alt: img.alt, shown: getComputedStyle(img).display !== 'none',
                                  replaced: img.classList.contains('qkv-static-replaced')})),
    summary: (box.querySelector('[aria-live]') || {}).textContent,
    live: (box.querySelector('[aria-live]') || {getAttribute: () => null}).getAttribute('aria-live'),
    labels: [...box.querySelectorAll('input, select')].map(c => c.labels.length ? c.labels[0].textContent : null),
  };
}"""
_LIVE = re.compile(r'data-qkv-live="(\w+)"')


def standalone() -> bool:
    """Whether the explorers are read from pages of their own (``QKV_EXPLORER_STANDALONE=1``)."""
    return os.environ.get(STANDALONE_ENV, "").strip() not in ("", "0")


def book_pages(html: Path) -> dict[str, str]:
    """Each explorer of the built book (its module's name) and the page that holds it, relative to ``html``."""
    found: dict[str, str] = {}
    for path in sorted(Path(html).rglob("*.html")):
        text = path.read_text(encoding="utf-8")
        if 'class="qkv-live"' not in text:
            continue
        for name in _LIVE.findall(text):
            found.setdefault(name, path.relative_to(html).as_posix())
    return found


def standalone_page(folder: Path, name: str, make: Callable[[], object]) -> str:
    """Write ``folder/<name>.html``: the explorer that ``make()`` returns while the book is built (a
    ``BookExplorer``), with its static figure as a PNG above it in one ``div.cell``, as in a page of the book. The
    page's path relative to ``folder``."""
    from qkv.widgets import BOOK_BUILD_ENV

    before = os.environ.get(BOOK_BUILD_ENV)
    os.environ[BOOK_BUILD_ENV] = "1"
    try:
        shown = make()
    finally:
        if before is None:
            os.environ.pop(BOOK_BUILD_ENV, None)
        else:
            os.environ[BOOK_BUILD_ENV] = before
    if not hasattr(shown, "html") or not hasattr(shown, "figure"):
        raise TypeError(f"standalone() for {name} must return the explorer as the book shows it, got {shown!r}")
    png = io.BytesIO()
    shown.figure.savefig(png, format="png", dpi=72)
    image = base64.b64encode(png.getvalue()).decode()
    alt = html_lib.escape(f"Static figure of the {name.replace('_', ' ')} explorer: {shown.label}")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.html").write_text(
        f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{name}</title>'
        '<meta name="viewport" content="width=device-width, initial-scale=1"></head>\n'
        f'<body><main><div class="cell"><img alt="{alt}" src="data:image/png;base64,{image}">\n'
        f"{shown.html()}</div></main></body></html>\n",
        encoding="utf-8",
    )
    return f"{name}.html"


def summary(page, name: str) -> str:
    """The explorer's aria-live line (what a screen reader says after each move)."""
    return page.locator(f'.qkv-live[data-qkv-live="{name}"] [aria-live]').text_content()


def drag_to_end(page, slider, end: str) -> None:
    """Drag the slider's thumb with the mouse past its ``"left"`` or ``"right"`` end (scrolled into view first: the
    mouse reaches only what the window shows)."""
    slider.scroll_into_view_if_needed()
    box = slider.bounding_box()
    low, high = float(slider.get_attribute("min")), float(slider.get_attribute("max"))
    value = float(slider.input_value())
    thumb = min(16.0, box["width"] / 4)  # the thumb's centre runs from half its width inside either end
    x = box["x"] + thumb / 2 + (box["width"] - thumb) * (value - low) / (high - low or 1)
    y = box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(box["x"] + (box["width"] + 40 if end == "right" else -40), y, steps=8)
    page.mouse.up()


def shoot(page, name: str, setting: str) -> None:
    """Photograph the explorer as ``_build/screenshots/explorers/<name>-<setting>.png``."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.locator(f'.qkv-live[data-qkv-live="{name}"]').screenshot(path=str(SHOTS / f"{name}-{setting}.png"))


def check_replaces_the_figure(page, visit, name: str) -> None:
    """The explorer is shown and its cell's static figure hidden, which keeps its alt text; each control has a
    label, and an aria-live line says what the explorer shows."""
    assert visit.problems() == [], visit.problems()
    state = page.evaluate(STATE_JS, name)
    assert not state["hidden"] and state["visible"], f"{name}: the explorer is not shown"
    assert state["statics"] and all(s["replaced"] and not s["shown"] for s in state["statics"]), state["statics"]
    assert all(len(s["alt"]) >= 25 for s in state["statics"]), "the static figure keeps its alt text"
    assert state["live"] == "polite" and state["summary"], f"{name}: no aria-live summary"
    assert state["labels"] and all(state["labels"]), f"{name}: a control without a label: {state['labels']}"


def check_print_keeps_the_figure(page, name: str) -> None:
    """Printed, the page shows the static figure and not the explorer."""
    page.emulate_media(media="print")
    printed = page.evaluate(STATE_JS, name)
    assert not printed["visible"] and all(s["shown"] for s in printed["statics"]), "print shows the figure alone"
    page.emulate_media(media="screen")


def embedded_state(page, name: str) -> dict:
    """The state the page holds for explorer ``name`` (its data and first settings), as the build wrote it: for an
    explorer of a trained model, what the page's model computed when the page ran."""
    import json

    text = page.locator(f'.qkv-live[data-qkv-live="{name}"] script[data-qkv="state"]').text_content()
    return json.loads(text)
