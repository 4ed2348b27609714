"""The live explorers of the built book, used as a reader uses them (D2L 11.2, 11.3, 11.6; qkv.widgets._live).

In Chromium, on the smoke book that ``test_book_browser.py`` builds and serves: each explorer replaces its static
figure once its module has run (print keeps the figure), also from a folder opened as ``file://``; each control moves
with the keyboard (arrows, Home, End, Space) and with the mouse (a drag past the slider's end, a click on a check
box), and after each move the drawing and the aria-live line say what ``qkv`` computes for that setting. The
drawing is read back from the SVG: bar heights, a curve's points, a point on the unit circle, each mapped to numbers
by the drawing's own scale. Two screenshots per explorer go to ``_build/screenshots/explorers/`` for review.
"""

from __future__ import annotations

import math
import re
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

from course import notebooks as nbs
from qkv import nadaraya_watson as nw
from qkv.widgets.attention_pooling import fit_curve
from qkv.widgets.attention_scoring_functions import attention_weight_samples, softmax_entropy
from qkv.widgets.self_attention_and_positional_encoding import pair_trajectory
from tests.support import browser

pytestmark = pytest.mark.browser

SHOTS = nbs.ROOT / "_build" / "screenshots" / "explorers"
PAGES = {
    "softmax_scaling": "book/attention-scoring-functions.html",
    "nadaraya_watson": "book/attention-pooling.html",
    "positional_encoding": "book/self-attention-and-positional-encoding.html",
}
_READY_JS = """(name) => {
  const box = document.querySelector(`.qkv-live[data-qkv-live="${name}"]`);
  return box && box.dataset.qkvReady !== undefined;
}"""
_STATE_JS = """(name) => {
  const box = document.querySelector(`.qkv-live[data-qkv-live="${name}"]`);
  const cell = box.closest('.cell');
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


def _summary(page, name: str) -> str:
    return page.locator(f'.qkv-live[data-qkv-live="{name}"] [aria-live]').text_content()


@pytest.fixture(scope="session")
def student_html():
    """The smoke book's student edition, as ``test_book_browser.py`` builds it (once; the same folder)."""
    try:
        return browser.built_book("student")
    except SystemExit as err:
        pytest.fail(f"the student edition did not build: {err}", pytrace=False)


@pytest.fixture(scope="module")
def in_browser(student_html):
    """``run(session, *args)``: calls ``session(reader, *args)`` with a reader of the smoke book, in a thread that
    holds a Chromium of its own. (Playwright's sync API allows one driver per thread, and ``test_book_browser.py``'s
    session fixture holds the main thread's when both modules run in one worker.)"""
    if not browser.CHROMIUM.exists():
        pytest.skip(f"{browser.CHROMIUM} is missing: install Debian's chromium to read the book in a browser")
    pool = ThreadPoolExecutor(1, thread_name_prefix="explorers-chromium")
    held = {}

    def start():
        from playwright.sync_api import sync_playwright

        held["playwright"] = sync_playwright().start()
        held["browser"] = browser.launch(held["playwright"])
        held["reader"] = browser.Reader(student_html, browser=held["browser"]).__enter__()

    def stop():
        for name, close in (("reader", lambda r: r.__exit__(None, None, None)), ("browser", lambda b: b.close()),
                            ("playwright", lambda p: p.stop())):  # fmt: skip
            if name in held:
                close(held[name])

    try:
        pool.submit(start).result()
        yield lambda session, *args: pool.submit(session, held["reader"], *args).result()
    finally:
        pool.submit(stop).result()
        pool.shutdown()


def _open(reader, name: str):
    """Open the explorer's page, wait for the explorer; ``(page, visit)`` (the caller closes the page's context)."""
    page, visit = reader.open(PAGES[name])
    page.wait_for_function(_READY_JS, arg=name, timeout=10_000)
    return page, visit


def _drag_to_end(page, slider, end: str) -> None:
    """Drag the slider's thumb with the mouse past its left or right end."""
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


def _shoot(page, name: str, setting: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.locator(f'.qkv-live[data-qkv-live="{name}"]').screenshot(path=str(SHOTS / f"{name}-{setting}.png"))


# ---- every explorer: it replaces the figure, from a server and from a folder ---------------------------------------


def _check_replaces_the_figure(page, visit, name: str) -> None:
    """The explorer is shown and its cell's static figure hidden, which keeps its alt text; each control has a
    label, and an aria-live line says what the explorer shows."""
    assert visit.problems() == [], visit.problems()
    state = page.evaluate(_STATE_JS, name)
    assert not state["hidden"] and state["visible"], f"{name}: the explorer is not shown"
    assert state["statics"] and all(s["replaced"] and not s["shown"] for s in state["statics"]), state["statics"]
    assert all(len(s["alt"]) >= 25 for s in state["statics"]), "the static figure keeps its alt text"
    assert state["live"] == "polite" and state["summary"], f"{name}: no aria-live summary"
    assert state["labels"] and all(state["labels"]), f"{name}: a control without a label: {state['labels']}"


def _check_print_keeps_the_figure(page, name: str) -> None:
    page.emulate_media(media="print")
    printed = page.evaluate(_STATE_JS, name)
    assert not printed["visible"] and all(s["shown"] for s in printed["statics"]), "print shows the figure alone"
    page.emulate_media(media="screen")


def test_explorers_run_from_a_folder_opened_as_file_urls(in_browser, student_html):
    """Chromium refuses ES module imports from file:// pages; the explorers' inlined modules must still run."""
    in_browser(_from_a_folder, student_html)


def _from_a_folder(reader, html):
    context = reader.browser.new_context()
    try:
        for name, path in PAGES.items():
            page = context.new_page()
            errors = []
            page.on("pageerror", lambda err, errors=errors: errors.append(str(err)))
            page.on("console", lambda msg, errors=errors: msg.type == "error" and errors.append(msg.text))
            page.goto((html / path).as_uri(), wait_until="domcontentloaded")
            page.wait_for_function(_READY_JS, arg=name, timeout=10_000)
            assert not [e for e in errors if "qkv" in e or "module" in e], f"{name} from file://: {errors}"
            page.close()
    finally:
        context.close()


# ---- 11.3: softmax scaling -----------------------------------------------------------------------------------------


def _drawn_weights(page) -> list[float]:
    """The bars' heights, as fractions of their total (the weights sum to 1), largest first as drawn."""
    heights = page.eval_on_selector_all(
        ".qkv-softmax-scaling svg.qkv-bars rect", "rs => rs.map(r => +r.getAttribute('height'))"
    )
    total = sum(heights)
    return [h / total for h in heights]


def _check_softmax(page, d: int, scaled: bool) -> None:
    weights = attention_weight_samples(d, scaled, num_keys=16, trials=1, seed=0)[0]  # (K,)
    expected = torch.sort(weights, descending=True).values.tolist()
    assert _drawn_weights(page) == pytest.approx(expected, abs=2e-4), f"bars at d = {d}, scaled = {scaled}"
    top = int(weights.argmax())
    how = "scaled" if scaled else "unscaled"
    text = _summary(page, "softmax_scaling")
    assert text.startswith(f"d = {d}, {how}: the largest weight is {float(weights[top]):.2f}, on key {top};"), text
    assert f"entropy {float(softmax_entropy(weights)):.2f} nats" in text, text
    slider = page.locator(".qkv-softmax-scaling input[type=range]")
    assert slider.get_attribute("aria-valuetext") == f"d = {d}"


def test_softmax_explorer_moves_with_the_keyboard_and_the_mouse(in_browser):
    in_browser(_softmax_session)


def _softmax_session(reader):
    page, visit = _open(reader, "softmax_scaling")
    try:
        _softmax_moves(page, visit)
    finally:
        page.context.close()


def _softmax_moves(page, visit):
    _check_replaces_the_figure(page, visit, "softmax_scaling")
    slider = page.locator(".qkv-softmax-scaling input[type=range]")
    box = page.locator(".qkv-softmax-scaling input[type=checkbox]")
    _check_softmax(page, 1, False)
    slider.focus()
    assert page.evaluate("() => getComputedStyle(document.activeElement).outlineStyle") != "none", "focus is visible"
    page.keyboard.press("End")
    _check_softmax(page, 1024, False)
    _shoot(page, "softmax_scaling", "d1024-unscaled")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    _check_softmax(page, 64, False)
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.type") == "checkbox", "Tab reaches the scaling check box"
    page.keyboard.press("Space")
    _check_softmax(page, 64, True)
    _drag_to_end(page, slider, "left")
    _check_softmax(page, 1, True)
    _drag_to_end(page, slider, "right")
    _check_softmax(page, 1024, True)
    _shoot(page, "softmax_scaling", "d1024-scaled")
    box.click()
    _check_softmax(page, 1024, False)
    _check_print_keeps_the_figure(page, "softmax_scaling")


# ---- 11.2: Nadaraya-Watson ---------------------------------------------------------------------------------------


def _drawn_curve(page) -> tuple[list[float], list[float]]:
    """The estimate's points in data units: the drawing's y scale is fitted on the training points it draws."""
    return page.evaluate(
        """() => {
      const svg = document.querySelector('.qkv-nadaraya-watson svg');
      const dots = [...svg.querySelectorAll('g circle')].map(c => [+c.getAttribute('cx'), +c.getAttribute('cy')]);
      const path = [...svg.querySelectorAll('path')].find(p => p.getAttribute('stroke') === '#1f77b4');
      const points = path.getAttribute('d').slice(1).split('L').map(p => p.split(',').map(Number));
      return [dots, points];
    }"""
    )


def _check_fit(page, x, y, kernel: str, sigma: float) -> None:
    dots, points = _drawn_curve(page)
    fit = fit_curve(x, y, kernel, sigma)
    # the drawing maps data to pixels linearly: fit that map on the training points, then read the curve with it
    py = torch.tensor([p[1] for p in dots[: len(y)]], dtype=torch.float64)
    a = torch.stack((torch.ones_like(y), y), dim=1)  # (n, 2)
    coef = torch.linalg.lstsq(a, py[:, None]).solution[:, 0]
    drawn = (torch.tensor([p[1] for p in points], dtype=torch.float64) - coef[0]) / coef[1]
    assert len(points) == len(fit.y_hat)
    torch.testing.assert_close(
        drawn,
        fit.y_hat,
        atol=5e-3,
        rtol=0,
        msg=lambda m: f"the curve at {kernel}, sigma = {sigma} ({_summary(page, 'nadaraya_watson')}): {m}",
    )
    text = _summary(page, "nadaraya_watson")
    shown = f"{sigma:.2f}" if sigma >= 1 else f"{sigma:#.2g}"  # as the page writes it (toFixed, toPrecision)
    loo = nw.loo_loss(x, y, kernel, sigma)
    assert text.startswith(f"{kernel} kernel, sigma = {shown}: leave-one-out loss {loo:.3f};"), text


def test_nadaraya_watson_explorer_moves_with_the_keyboard_and_the_mouse(in_browser):
    in_browser(_nadaraya_watson_session)


def _nadaraya_watson_session(reader):
    page, visit = _open(reader, "nadaraya_watson")
    try:
        _nadaraya_watson_moves(page, visit)
    finally:
        page.context.close()


def _nadaraya_watson_moves(page, visit):
    _check_replaces_the_figure(page, visit, "nadaraya_watson")
    data = nw.make_data(n=40, noise=1.0, seed=0)  # the page's data (11.2.1)
    x, y = data.x_train.double(), data.y_train.double()
    menu = page.locator(".qkv-nadaraya-watson select")
    slider = page.locator(".qkv-nadaraya-watson input[type=range]")
    _check_fit(page, x, y, "gaussian", 0.5)
    _shoot(page, "nadaraya_watson", "gaussian-sigma0.5")
    menu.focus()
    page.keyboard.press("ArrowDown")  # the next kernel of the menu
    _check_fit(page, x, y, "boxcar", 0.5)
    slider.focus()
    page.keyboard.press("Home")
    _check_fit(page, x, y, "boxcar", 0.01)
    for _ in range(5):
        page.keyboard.press("ArrowRight")  # 5 stops of 0.02 in log10 sigma
    assert slider.get_attribute("aria-valuetext") == "sigma = 0.013"
    _check_fit(page, x, y, "boxcar", 10 ** (-2 + 5 * 0.02))
    _shoot(page, "nadaraya_watson", "boxcar-sigma0.013")
    menu.focus()
    page.keyboard.press("ArrowUp")
    _drag_to_end(page, slider, "right")
    _check_fit(page, x, y, "gaussian", 10 ** (-2 + 150 * 0.02))
    _drag_to_end(page, slider, "left")
    _check_fit(page, x, y, "gaussian", 0.01)
    _check_print_keeps_the_figure(page, "nadaraya_watson")


# ---- 11.6: sinusoidal positions and their rotation ------------------------------------------------------------------


def _drawn_point(page, which: str) -> tuple[float, float]:
    """A point on the explorer's unit circle, (cos, sin), read from the drawing: 'red' row i, 'green' row i + delta."""
    return tuple(
        page.evaluate(
            """(colour) => {
      const svg = document.querySelector('.qkv-positional-encoding svg.qkv-circle');
      const unit = svg.querySelector('circle');
      const [cx, cy, r] = ['cx', 'cy', 'r'].map(a => +unit.getAttribute(a));
      const dot = [...svg.querySelectorAll('circle')].find(c => c.getAttribute('fill') === colour);
      return [(+dot.getAttribute('cx') - cx) / r, (cy - +dot.getAttribute('cy')) / r];
    }""",
            {"red": "#d62728", "green": "#2ca02c"}[which],
        )
    )


def _check_encoding(page, position: int, pair: int, offset: int) -> None:
    point = pair_trajectory(position, pair, 32)[-1].tolist()  # (cos, sin) of row i
    assert _drawn_point(page, "red") == pytest.approx(point, abs=2e-4), f"row {position}, pair {pair}"
    w = 1 / 10000 ** (2 * pair / 32)
    target = [math.cos((position + offset) * w), math.sin((position + offset) * w)]
    assert _drawn_point(page, "green") == pytest.approx(target, abs=2e-4), f"row {position} shifted by {offset}"
    text = _summary(page, "positional_encoding")
    assert text.startswith(f"position {position}, pair {pair} (columns {2 * pair} and {2 * pair + 1}): "), text
    assert f"{position * w / (2 * math.pi):.2f} turns" in text and f"to position {position + offset}," in text, text


def test_encoding_explorer_moves_with_the_keyboard_and_the_mouse(in_browser):
    in_browser(_encoding_session)


def _encoding_session(reader):
    page, visit = _open(reader, "positional_encoding")
    try:
        _encoding_moves(page, visit)
    finally:
        page.context.close()


def _encoding_moves(page, visit):
    _check_replaces_the_figure(page, visit, "positional_encoding")
    position, pair, offset = (page.locator(f".qkv-positional-encoding input[type=range] >> nth={i}") for i in range(3))
    _check_encoding(page, 10, 0, 5)
    position.focus()
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    _check_encoding(page, 13, 0, 5)
    page.keyboard.press("Tab")
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowUp")
    _check_encoding(page, 13, 3, 5)
    _shoot(page, "positional_encoding", "i13-j3-shift5")
    _drag_to_end(page, offset, "left")
    _check_encoding(page, 13, 3, -59)
    _drag_to_end(page, position, "right")
    _check_encoding(page, 59, 3, -59)
    _drag_to_end(page, pair, "right")
    _check_encoding(page, 59, 15, -59)
    pair.focus()
    page.keyboard.press("Home")
    offset.focus()
    page.keyboard.press("End")
    _check_encoding(page, 59, 0, 59)
    _shoot(page, "positional_encoding", "i59-j0-shift59")
    assert re.fullmatch(r"\d+", page.locator(".qkv-positional-encoding output >> nth=0").text_content())
    _check_print_keeps_the_figure(page, "positional_encoding")
