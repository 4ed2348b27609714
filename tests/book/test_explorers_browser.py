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

import pytest
import torch

from qkv import nadaraya_watson as nw
from qkv.widgets.attention_pooling import fit_curve
from qkv.widgets.attention_scoring_functions import attention_weight_samples, softmax_entropy
from qkv.widgets.self_attention_and_positional_encoding import pair_trajectory
from tests.support import explorers as ex

pytestmark = pytest.mark.browser


def _standalone_softmax():
    from qkv.widgets import attention_scoring_functions as widgets

    return widgets.softmax_scaling_explorer()


def _standalone_nadaraya_watson():
    from qkv.widgets import attention_pooling as widgets

    data = nw.make_data(n=40, noise=1.0, seed=0)
    return widgets.nadaraya_watson_explorer(data.x_train, data.y_train)


def _standalone_encoding():
    from qkv.widgets import self_attention_and_positional_encoding as widgets

    return widgets.encoding_explorer()


# ---- every explorer: it replaces the figure, from a server and from a folder ---------------------------------------


def test_explorers_run_from_a_folder_opened_as_file_urls(explorers):
    """Chromium refuses ES module imports from file:// pages; every explorer's inlined module must still run."""
    pages = explorers.pages()
    if not pages:
        pytest.skip("no book pages: QKV_EXPLORER_STANDALONE is set")
    from tests.unit.qkv.test_widgets_live import MODULES

    assert set(pages) == set(MODULES), f"every explorer is live in the book: {pages}"
    explorers.run(_from_a_folder, explorers.folder, pages)


def _from_a_folder(reader, html, pages):
    context = reader.browser.new_context()
    try:
        opened = []
        for name, path in pages.items():  # every page loads at once; then each explorer is waited for
            page = context.new_page()
            errors = []
            page.on("pageerror", lambda err, errors=errors: errors.append(str(err)))
            page.on("console", lambda msg, errors=errors: msg.type == "error" and errors.append(msg.text))
            page.goto((html / path).as_uri(), wait_until="commit")
            opened.append((name, page, errors))
        for name, page, errors in opened:
            page.wait_for_function(ex.READY_JS, arg=name, timeout=20_000)
            assert not [e for e in errors if "qkv" in e or "module" in e], f"{name} from file://: {errors}"
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
    text = ex.summary(page, "softmax_scaling")
    assert text.startswith(f"d = {d}, {how}: the largest weight is {float(weights[top]):.2f}, on key {top};"), text
    assert f"entropy {float(softmax_entropy(weights)):.2f} nats" in text, text
    slider = page.locator(".qkv-softmax-scaling input[type=range]")
    assert slider.get_attribute("aria-valuetext") == f"d = {d}"


def test_softmax_explorer_moves_with_the_keyboard_and_the_mouse(explorers):
    explorers.run(_softmax_session, explorers)


def _softmax_session(reader, explorers):
    page, visit = explorers.open(reader, "softmax_scaling", _standalone_softmax)
    try:
        _softmax_moves(page, visit)
    finally:
        page.context.close()


def _softmax_moves(page, visit):
    ex.check_replaces_the_figure(page, visit, "softmax_scaling")
    slider = page.locator(".qkv-softmax-scaling input[type=range]")
    box = page.locator(".qkv-softmax-scaling input[type=checkbox]")
    _check_softmax(page, 1, False)
    slider.focus()
    assert page.evaluate("() => getComputedStyle(document.activeElement).outlineStyle") != "none", "focus is visible"
    page.keyboard.press("End")
    _check_softmax(page, 1024, False)
    ex.shoot(page, "softmax_scaling", "d1024-unscaled")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    _check_softmax(page, 64, False)
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.type") == "checkbox", "Tab reaches the scaling check box"
    page.keyboard.press("Space")
    _check_softmax(page, 64, True)
    ex.drag_to_end(page, slider, "left")
    _check_softmax(page, 1, True)
    ex.drag_to_end(page, slider, "right")
    _check_softmax(page, 1024, True)
    ex.shoot(page, "softmax_scaling", "d1024-scaled")
    box.click()
    _check_softmax(page, 1024, False)
    ex.check_print_keeps_the_figure(page, "softmax_scaling")


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
        msg=lambda m: f"the curve at {kernel}, sigma = {sigma} ({ex.summary(page, 'nadaraya_watson')}): {m}",
    )
    text = ex.summary(page, "nadaraya_watson")
    shown = f"{sigma:.2f}" if sigma >= 1 else f"{sigma:#.2g}"  # as the page writes it (toFixed, toPrecision)
    loo = nw.loo_loss(x, y, kernel, sigma)
    assert text.startswith(f"{kernel} kernel, sigma = {shown}: leave-one-out loss {loo:.3f};"), text


def test_nadaraya_watson_explorer_moves_with_the_keyboard_and_the_mouse(explorers):
    explorers.run(_nadaraya_watson_session, explorers)


def _nadaraya_watson_session(reader, explorers):
    page, visit = explorers.open(reader, "nadaraya_watson", _standalone_nadaraya_watson)
    try:
        _nadaraya_watson_moves(page, visit)
    finally:
        page.context.close()


def _nadaraya_watson_moves(page, visit):
    ex.check_replaces_the_figure(page, visit, "nadaraya_watson")
    data = nw.make_data(n=40, noise=1.0, seed=0)  # the page's data (11.2.1)
    x, y = data.x_train.double(), data.y_train.double()
    menu = page.locator(".qkv-nadaraya-watson select")
    slider = page.locator(".qkv-nadaraya-watson input[type=range]")
    _check_fit(page, x, y, "gaussian", 0.5)
    ex.shoot(page, "nadaraya_watson", "gaussian-sigma0.5")
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
    ex.shoot(page, "nadaraya_watson", "boxcar-sigma0.013")
    menu.focus()
    page.keyboard.press("ArrowUp")
    ex.drag_to_end(page, slider, "right")
    _check_fit(page, x, y, "gaussian", 10 ** (-2 + 150 * 0.02))
    ex.drag_to_end(page, slider, "left")
    _check_fit(page, x, y, "gaussian", 0.01)
    ex.check_print_keeps_the_figure(page, "nadaraya_watson")


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
    text = ex.summary(page, "positional_encoding")
    assert text.startswith(f"position {position}, pair {pair} (columns {2 * pair} and {2 * pair + 1}): "), text
    assert f"{position * w / (2 * math.pi):.2f} turns" in text and f"to position {position + offset}," in text, text


def test_encoding_explorer_moves_with_the_keyboard_and_the_mouse(explorers):
    explorers.run(_encoding_session, explorers)


def _encoding_session(reader, explorers):
    page, visit = explorers.open(reader, "positional_encoding", _standalone_encoding)
    try:
        _encoding_moves(page, visit)
    finally:
        page.context.close()


def _encoding_moves(page, visit):
    ex.check_replaces_the_figure(page, visit, "positional_encoding")
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
    ex.shoot(page, "positional_encoding", "i13-j3-shift5")
    ex.drag_to_end(page, offset, "left")
    _check_encoding(page, 13, 3, -59)
    ex.drag_to_end(page, position, "right")
    _check_encoding(page, 59, 3, -59)
    ex.drag_to_end(page, pair, "right")
    _check_encoding(page, 59, 15, -59)
    pair.focus()
    page.keyboard.press("Home")
    offset.focus()
    page.keyboard.press("End")
    _check_encoding(page, 59, 0, 59)
    ex.shoot(page, "positional_encoding", "i59-j0-shift59")
    assert re.fullmatch(r"\d+", page.locator(".qkv-positional-encoding output >> nth=0").text_content())
    ex.check_print_keeps_the_figure(page, "positional_encoding")


def test_a_page_whose_data_were_changed_keeps_its_static_figure(explorers, tmp_path):
    """The build writes the CRC-32 of an explorer's state beside it; a page edited or cut since (here one digit of
    the data) does not run the explorer on numbers nobody computed: the static figure stays, and the console says
    why."""
    name = ex.standalone_page(tmp_path, "softmax_scaling", _standalone_softmax)
    page_file = tmp_path / name
    text = page_file.read_text(encoding="utf-8")
    state = re.search(r'data-qkv="state"[^>]*>([^<]*)<', text)
    digit = re.search(r"\d", state[1][10:]).start() + 10  # a digit of the data
    edited = state[1][:digit] + str((int(state[1][digit]) + 1) % 10) + state[1][digit + 1 :]
    page_file.write_text(text.replace(state[1], edited), encoding="utf-8")
    explorers.run(_tampered, page_file)


def _tampered(reader, page_file):
    context = reader.browser.new_context()
    try:
        page = context.new_page()
        errors = []
        page.on("console", lambda msg: msg.type == "error" and errors.append(msg.text))
        page.goto(page_file.as_uri(), wait_until="load")
        page.wait_for_function("() => !document.querySelector('.qkv-live[data-qkv-pending]')")
        page.wait_for_timeout(200)
        state = page.evaluate(ex.STATE_JS, "softmax_scaling")
        assert state["hidden"] and not state["visible"], "the explorer ran on edited data"
        assert all(s["shown"] and not s["replaced"] for s in state["statics"]), "the static figure stays"
        assert any("checksum" in e and "softmax_scaling" in e for e in errors), errors
    finally:
        context.close()
