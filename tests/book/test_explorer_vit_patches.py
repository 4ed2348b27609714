"""11.8's patch explorer used as a reader uses it (``js/vit_patches.js``; qkv.widgets.vision_transformer).

In Chromium, through the shared ``explorers`` fixture (``tests/book/conftest.py``): the explorer replaces its static
grid (print keeps the grid); the image-size and patch-size sliders move with the keyboard (arrows, Home, End) and
the mouse (drags past either end, a click), and after each move the drawing says what torch and ``qkv`` compute for
that setting: the canvas holds the image resized as ``torch.nn.functional.interpolate`` resizes it (read back with
``getImageData``, within a grey level), the SVG over it has (S / p)^2 cells (its lines counted and placed) and numbers
them when there are at most 64, and the table and the aria-live line give ``patch_costs``' numbers. At 390 px wide (a
phone) the page does not scroll sideways and a tap moves a slider. Screenshots go to ``_build/screenshots/explorers/``.
"""

from __future__ import annotations

import functools

import pytest
import torch
from torch.nn import functional as F

from qkv.widgets.vision_transformer import _divisors, _following_patch, patch_costs
from tests.support import explorers as ex

pytestmark = pytest.mark.browser

NAME = "vit_patches"
BOX = ".qkv-vit-patches"


def _standalone():
    from qkv.widgets import vision_transformer as widgets

    return widgets.patch_explorer()


@functools.cache
def _resized(size: int) -> torch.Tensor:
    """The page's image, Fashion-MNIST's test image 0, resized by torch in float64: (size, size)."""
    from qkv.figures.vision_transformer import sample_image

    X = sample_image().to(torch.float64)[None, None]  # (28, 28) -> (1, 1, 28, 28)
    return F.interpolate(X, size=(size, size), mode="bilinear", align_corners=False)[0, 0]


_DRAWN_JS = """(box) => {
  const root = document.querySelector(box);
  const svg = root.querySelector('svg');
  const canvas = root.querySelector('canvas');
  const at = (a) => [...svg.querySelectorAll(a)];
  const pos = (el, a) => +el.getAttribute(a);
  const svgBox = svg.getBoundingClientRect(), canvasBox = canvas.getBoundingClientRect();
  return {
    viewBox: svg.getAttribute('viewBox'),
    rows: at('line.qkv-row').map(l => [pos(l, 'x1'), pos(l, 'x2'), pos(l, 'y1'), pos(l, 'y2')]),
    columns: at('line.qkv-column').map(l => [pos(l, 'x1'), pos(l, 'x2'), pos(l, 'y1'), pos(l, 'y2')]),
    numbers: at('text').map(t => [t.textContent, pos(t, 'x'), pos(t, 'y')]),
    label: svg.getAttribute('aria-label'),
    role: svg.getAttribute('role'),
    canvas: [canvas.width, canvas.height],
    covers: ['x', 'y', 'width', 'height'].every(k => Math.abs(svgBox[k] - canvasBox[k]) < 0.5),
    shown: canvasBox.width,
    table: [...root.querySelectorAll('td')].map(td => td.textContent),
    sliders: [...root.querySelectorAll('input[type=range]')]
      .map(s => [s.value, s.max, s.getAttribute('aria-valuetext')]),
  };
}"""

_PIXELS_JS = """([box, points]) => {
  const canvas = document.querySelector(box + ' canvas');
  const ctx = canvas.getContext('2d');
  return points.map(([i, j]) => Array.from(ctx.getImageData(j, i, 1, 1).data));
}"""


def _check(page, size: int, patch: int) -> None:
    """What the explorer shows is what torch and qkv compute for an image of ``size`` px in ``patch`` px patches."""
    c = patch_costs(size, patch)
    g = size // patch
    drawn = page.evaluate(_DRAWN_JS, BOX)
    where = f"{size} px in {patch} px patches"
    # the grid: g - 1 lines each way, one every p pixels of the S x S image, so g x g cells
    assert drawn["viewBox"] == f"0 0 {size} {size}", where
    assert drawn["rows"] == [[0, size, k * patch, k * patch] for k in range(1, g)], where
    assert drawn["columns"] == [[k * patch, k * patch, 0, size] for k in range(1, g)], where
    assert (len(drawn["rows"]) + 1) * (len(drawn["columns"]) + 1) == c["patches"] == g * g, where
    if c["patches"] <= 64:  # numbered row by row, as the static figure does
        expected = [[str(i * g + j + 1), (j + 0.5) * patch, (i + 0.5) * patch] for i in range(g) for j in range(g)]
        assert drawn["numbers"] == expected, where
    else:
        assert drawn["numbers"] == [], where
    assert drawn["role"] == "img" and f"cut by a {g} by {g} grid into {c['patches']:,} patch" in drawn["label"]
    # the image: an S x S canvas, the grid over it, and its pixels torch's resize (0 white, 1 black)
    assert drawn["canvas"] == [size, size] and drawn["covers"] and drawn["shown"] > 200, drawn
    _check_pixels(page, size)
    # the numbers: the table, the sliders and the aria-live line
    ratio = c["attention_macs"] / c["projection_macs"]
    assert drawn["table"] == [
        f"{c['patches']:,}",
        f"{c['tokens']:,}",
        f"{c['scores']:,}",
        f"{c['attention_macs']:,}",
        f"{c['projection_macs']:,}",
        f"{ratio:.2f}",
    ], where
    options = _divisors(size)
    (size_value, _, size_text), (patch_value, patch_max, patch_text) = drawn["sliders"]
    assert size_text == f"{size} pixels" and patch_text.startswith(f"{patch} pixels, {c['patches']:,} patch"), where
    assert (int(patch_value), int(patch_max)) == (options.index(patch), len(options) - 1), where
    patches = "1 patch" if c["patches"] == 1 else f"{c['patches']:,} patches"
    assert ex.summary(page, NAME) == (
        f"{size} px image in {patch} px patches: {patches}, a sequence of {c['tokens']:,} tokens; "
        f"attention's products cost {ratio:.2f} times the projections'."
    )


def _check_pixels(page, size: int) -> None:
    fractions = (0.0, 0.05, 0.3, 0.45, 0.5, 0.62, 0.8, 0.97, 0.999)
    points = [(int(a * size), int(b * size)) for a in fractions for b in fractions]
    rgba = page.evaluate(_PIXELS_JS, [BOX, points])
    reference = _resized(size)
    expected = [255 * (1 - float(reference[i, j])) for i, j in points]
    assert all(r == g == b and alpha == 255 for r, g, b, alpha in rgba), "opaque grey pixels"
    misses = [(p, px[0], round(e, 2)) for p, px, e in zip(points, rgba, expected) if abs(px[0] - e) > 1]
    assert not misses, f"pixels of the {size} px image ((row, column), drawn, torch): {misses}"
    assert len({round(e) for e in expected}) > 5, "the pixels read cover several grey levels, not only the white"


def _sliders(page):
    return page.locator(f"{BOX} input[type=range] >> nth=0"), page.locator(f"{BOX} input[type=range] >> nth=1")


def test_patch_explorer_moves_with_the_keyboard_and_the_mouse(explorers):
    explorers.run(_session, explorers)


def _session(reader, explorers):
    page, visit = explorers.open(reader, NAME, _standalone)
    try:
        _moves(page, visit)
    finally:
        page.context.close()


def _moves(page, visit):
    ex.check_replaces_the_figure(page, visit, NAME)
    size, patch = _sliders(page)
    _check(page, 28, 7)
    # the keyboard: the image size, then the patch size, which follows it
    size.focus()
    assert page.evaluate("() => getComputedStyle(document.activeElement).outlineStyle") != "none", "focus is visible"
    page.keyboard.press("ArrowRight")
    _check(page, 56, 14)
    page.keyboard.press("End")
    _check(page, 224, _following_patch(224))
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.labels[0].textContent") == "patch size", "Tab reaches it"
    page.keyboard.press("Home")
    _check(page, 224, 2)
    ex.shoot(page, NAME, "224px-patch2")
    page.keyboard.press("End")
    _check(page, 224, 224)
    size.focus()
    page.keyboard.press("Home")
    _check(page, 28, 7)
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    _check(page, 96, 24)
    patch.focus()
    page.keyboard.press("ArrowLeft")
    _check(page, 96, 16)  # D2L's setting
    ex.shoot(page, NAME, "96px-patch16")
    # the mouse: drags past either end, then a click in the middle of the patch slider
    ex.drag_to_end(page, size, "left")
    _check(page, 28, 7)
    ex.drag_to_end(page, patch, "right")
    _check(page, 28, 28)
    ex.drag_to_end(page, size, "right")
    _check(page, 224, 56)
    ex.drag_to_end(page, patch, "left")
    _check(page, 224, 2)
    box = patch.bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    chosen = _divisors(224)[int(patch.input_value())]
    assert chosen not in (2, 224), f"a click in the middle picks a middle patch size, got {chosen}"
    _check(page, 224, chosen)
    ex.check_print_keeps_the_figure(page, NAME)


def test_patch_explorer_fits_a_phone_and_moves_by_touch(explorers):
    explorers.run(_phone_session, explorers)


def _phone_session(reader, explorers):
    path = explorers.path(NAME, _standalone)
    context = reader.browser.new_context(viewport={"width": 390, "height": 800}, has_touch=True, is_mobile=True)
    try:
        page = context.new_page()
        page.goto(reader.url(path), wait_until="load")
        page.wait_for_function(ex.READY_JS, arg=NAME, timeout=10_000)
        widths = page.evaluate(
            """(box) => [document.documentElement.scrollWidth,
                         document.querySelector(box).getBoundingClientRect().right]""",
            BOX,
        )
        assert widths[0] <= 390 and widths[1] <= 390, f"the page scrolls sideways at 390 px: {widths}"
        size, patch = _sliders(page)
        size.scroll_into_view_if_needed()
        box = size.bounding_box()
        page.touchscreen.tap(box["x"] + box["width"] - 2, box["y"] + box["height"] / 2)
        _check(page, 224, 56)
        patch.scroll_into_view_if_needed()
        box = patch.bounding_box()
        page.touchscreen.tap(box["x"] + 2, box["y"] + box["height"] / 2)
        _check(page, 224, 2)
        ex.shoot(page, NAME, "phone-390px")
    finally:
        context.close()
