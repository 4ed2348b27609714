"""11.5's key/value cache explorer used as a reader uses it (D2L 11.5, beyond D2L; qkv.widgets._live, issue 42).

In Chromium, on the page of the built book (or, with ``QKV_EXPLORER_STANDALONE=1``, a page of its own): the explorer
replaces its static figure (print keeps the figure); its three sliders (the number G of key/value heads, the batch
size, the context length read off the chart) move with the keyboard (arrows, Home, End), the mouse (a drag past an
end, a click on the track) and a finger (a tap, on a phone's 390 px wide screen, where the page must not scroll
sideways); after each move the drawing and the aria-live line say what ``qkv``'s ``cache_curve`` computes. The
drawing is read back from the SVG: each curve's points and the weights' line, mapped to tokens and GiB by the
chart's own axis ticks. Screenshots go to ``_build/screenshots/explorers/kv_cache-*.png`` for review.
"""

from __future__ import annotations

import math
import re

import pytest

from qkv.multihead import attention_costs
from qkv.widgets.multihead_attention import CONTEXTS, LLAMA2_70B, cache_curve
from tests.support import explorers as ex

pytestmark = pytest.mark.browser

NAME = "kv_cache"
ROOT = ".qkv-kv-cache"
KV_HEADS = [1, 2, 4, 8, 16, 32, 64]
#: Read back from pixels rounded to 0.01: a few parts in ten thousand on a log axis of about 30 px a decade.
DRAWN_RTOL = 2e-3


def _standalone():
    from qkv.widgets import multihead_attention as widgets

    return widgets.kv_cache_explorer()


def _reach(g: int, batch: int) -> int:
    """The fewest tokens at which qkv's cache of ``batch`` sequences is at least the attention weights' memory."""
    N, H, L = LLAMA2_70B["num_hiddens"], LLAMA2_70B["num_heads"], LLAMA2_70B["num_layers"]
    params, per_token = attention_costs(N, H, g, 1, batch, L, 1)
    return -(-params // per_token)


_DRAWN_JS = """(root) => {
  const svg = document.querySelector(`${root} svg`);
  const ticks = (cls, attr) => [...svg.querySelectorAll(`text.${cls}`)].map(
    t => [+t.dataset.value, +t.getAttribute(attr)]);
  const points = (sel) => {
    const line = svg.querySelector(sel);
    return {shown: getComputedStyle(line).display !== 'none',
            points: line.getAttribute('points').trim().split(/\\s+/).map(p => p.split(',').map(Number))};
  };
  const weights = svg.querySelector('line.qkv-weights');
  const marker = svg.querySelector('circle.qkv-marker');
  return {
    yTicks: ticks('qkv-ytick', 'y'), xTicks: ticks('qkv-xtick', 'x'),
    cache: points('polyline.qkv-cache'), mha: points('polyline.qkv-mha'), mqa: points('polyline.qkv-mqa'),
    weights: [+weights.getAttribute('y1'), +weights.getAttribute('y2')],
    marker: [+marker.getAttribute('cx'), +marker.getAttribute('cy')],
    title: svg.querySelector('text.qkv-title').textContent,
    label: svg.getAttribute('aria-label'), role: svg.getAttribute('role'),
    valuetexts: [...document.querySelectorAll(`${root} input[type=range]`)].map(s => s.getAttribute('aria-valuetext')),
  };
}"""


def _fit(pairs):
    """The line through ``(value, pixel)`` pairs (least squares): pixel = a + b value."""
    n = len(pairs)
    mx = sum(v for v, _ in pairs) / n
    my = sum(p for _, p in pairs) / n
    b = sum((v - mx) * (p - my) for v, p in pairs) / sum((v - mx) ** 2 for v, _ in pairs)
    return my - b * mx, b


def _drawn(page) -> dict:
    """What the chart draws, in tokens and GiB, read through its own ticks (a tick's text sits 4 px below its value)."""
    raw = page.evaluate(_DRAWN_JS, ROOT)
    assert len(raw["yTicks"]) >= 2 and len(raw["xTicks"]) >= 2, raw
    ay, by = _fit([(math.log10(v), y - 4) for v, y in raw["yTicks"]])
    ax, bx = _fit([(math.log2(v), x) for v, x in raw["xTicks"]])
    gib = lambda y: 10 ** ((y - ay) / by)  # noqa: E731
    tokens = lambda x: 2 ** ((x - ax) / bx)  # noqa: E731

    def curve(c):
        return {"shown": c["shown"], "x": [tokens(x) for x, _ in c["points"]], "y": [gib(y) for _, y in c["points"]]}

    return {
        **raw,
        "cache": curve(raw["cache"]),
        "mha": curve(raw["mha"]),
        "mqa": curve(raw["mqa"]),
        "weights": [gib(y) for y in raw["weights"]],
        "marker": (tokens(raw["marker"][0]), gib(raw["marker"][1])),
    }


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def _check(page, g: int, batch: int, context: int) -> None:
    """The chart, the sliders' spoken values and the aria-live line at G = g, ``batch`` sequences, ``context``."""
    caches, weights = cache_curve(g, CONTEXTS, batch)
    at = caches[CONTEXTS.index(context)]
    drawn = _drawn(page)
    what = f"G = {g}, batch {batch}, {context} tokens"
    assert drawn["title"] == f"G = {g} of 64 heads, batch {batch}", what
    assert drawn["cache"]["x"] == pytest.approx(list(CONTEXTS), rel=DRAWN_RTOL), what
    assert drawn["cache"]["y"] == pytest.approx(caches, rel=DRAWN_RTOL), f"{what}: the cache curve"
    assert drawn["weights"] == pytest.approx([weights, weights], rel=DRAWN_RTOL), f"{what}: the weights' line"
    assert drawn["marker"] == pytest.approx((context, at), rel=DRAWN_RTOL), f"{what}: the ring"
    for key, other in (("mha", 64), ("mqa", 1)):
        assert drawn[key]["shown"] == (g != other), f"{what}: the grey G = {other} curve is drawn unless it is G's"
        assert drawn[key]["y"] == pytest.approx(cache_curve(other, CONTEXTS, batch)[0], rel=DRAWN_RTOL), what
    kind = {64: "multi-head", 1: "multi-query"}.get(g, "grouped-query")
    heads = "head" if g == 1 else "heads"
    sequences = "sequence" if batch == 1 else "sequences"
    assert drawn["valuetexts"] == [
        f"G = {g} key/value {heads} ({kind})",
        f"batch of {batch} {sequences}",
        f"{context:,} tokens",
    ], what
    assert drawn["role"] == "img" and f"G = {g} of 64 heads ({kind}) and a batch of {batch}" in drawn["label"]
    text = ex.summary(page, NAME)
    found = re.fullmatch(
        rf"G = {g}, batch {batch}, {context:,} tokens: cache ([\d,.]+) GiB(.*); the attention weights take "
        r"([\d,.]+) GiB; the cache reaches them at ([\d,]+) tokens(, beyond the chart|, before the chart begins)?\.",
        text,
    )
    assert found, text
    assert _number(found[1]) == pytest.approx(at, rel=5e-3), text
    assert _number(found[3]) == pytest.approx(weights, rel=5e-3), text
    assert int(found[4].replace(",", "")) == _reach(g, batch), text
    assert found[2] == (" (multi-head attention)" if g == 64 else f", {64 // g} times less than multi-head") + (
        " (multi-query)" if g == 1 else ""
    ), text


def _click_at(page, slider, index: int, count: int) -> None:
    """Click a slider's track where its thumb stands at stop ``index`` of ``count``."""
    box = slider.bounding_box()
    thumb = min(16.0, box["width"] / 4)
    page.mouse.click(box["x"] + thumb / 2 + (box["width"] - thumb) * index / (count - 1), box["y"] + box["height"] / 2)


def test_kv_cache_explorer_moves_with_the_keyboard_and_the_mouse(explorers):
    explorers.run(_session, explorers)


def _session(reader, explorers):
    page, visit = explorers.open(reader, NAME, _standalone)
    try:
        _moves(page, visit)
    finally:
        page.context.close()


def _moves(page, visit):
    ex.check_replaces_the_figure(page, visit, NAME)
    heads, batch, context = (page.locator(f"{ROOT} input[type=range] >> nth={i}") for i in range(3))
    _check(page, 64, 1, 32_768)
    heads.focus()
    assert page.evaluate("() => getComputedStyle(document.activeElement).outlineStyle") != "none", "focus is visible"
    for _ in range(3):
        page.keyboard.press("ArrowLeft")
    _check(page, 8, 1, 32_768)
    ex.shoot(page, NAME, "g8-batch1-32k")
    page.keyboard.press("Home")
    _check(page, 1, 1, 32_768)
    page.keyboard.press("End")
    _check(page, 64, 1, 32_768)
    page.keyboard.press("ArrowDown")
    _check(page, 32, 1, 32_768)
    page.keyboard.press("Tab")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowUp")
    _check(page, 32, 4, 32_768)
    page.keyboard.press("Tab")
    page.keyboard.press("End")
    _check(page, 32, 4, 131_072)
    page.keyboard.press("Home")
    page.keyboard.press("ArrowRight")
    _check(page, 32, 4, 2048)
    ex.drag_to_end(page, batch, "right")
    _check(page, 32, 64, 2048)
    ex.drag_to_end(page, context, "right")
    ex.drag_to_end(page, heads, "left")
    _check(page, 1, 64, 131_072)
    ex.shoot(page, NAME, "g1-batch64-128k")
    _click_at(page, heads, KV_HEADS.index(8), len(KV_HEADS))
    _check(page, 8, 64, 131_072)
    _click_at(page, batch, 0, 7)
    ex.drag_to_end(page, context, "left")
    _check(page, 8, 1, 1024)
    ex.check_print_keeps_the_figure(page, NAME)


def test_kv_cache_explorer_fits_a_phone_and_moves_by_touch(explorers):
    explorers.run(_phone, explorers)


def _phone(reader, explorers):
    path = explorers.path(NAME, _standalone)
    context = reader.browser.new_context(viewport={"width": 390, "height": 800}, has_touch=True, is_mobile=True)
    try:
        page = context.new_page()
        page.goto(reader.url(path), wait_until="load")
        page.wait_for_function(ex.READY_JS, arg=NAME, timeout=10_000)
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 390, "the page scrolls sideways"
        sizes = page.evaluate(
            """(root) => {
          const box = document.querySelector(root);
          const svg = box.querySelector('svg');
          const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
          return {right: Math.max(...[...box.querySelectorAll('input, output, label, svg, p')].map(
                    e => e.getBoundingClientRect().right)),
                  tick: 11 * scale};
        }""",
            ROOT,
        )
        assert sizes["right"] <= 390, f"a part of the explorer runs off a 390 px screen: {sizes}"
        assert sizes["tick"] >= 9, f"the axis ticks are {sizes['tick']:.1f} px high on a phone"
        ex.shoot(page, NAME, "phone-390")
        sliders = [page.locator(f"{ROOT} input[type=range] >> nth={i}") for i in range(3)]
        for slider, at in ((sliders[0], 0.0), (sliders[2], 1.0)):  # G to the left end, the context to the right end
            box = slider.bounding_box()
            page.touchscreen.tap(box["x"] + 4 + (box["width"] - 8) * at, box["y"] + box["height"] / 2)
        _check(page, 1, 1, 131_072)
    finally:
        context.close()
