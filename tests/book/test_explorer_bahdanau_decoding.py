"""The decoding explorer of D2L 11.4 (``js/bahdanau_decoding.js``), used as a reader uses it, in Chromium.

The page shows the greedy decoding of the page's sentence and of its three test sentences, computed by the page's
model when the page ran. Here: the explorer replaces its static figure (print keeps the figure); the sentence menu
and the step slider move with the keyboard (arrows, Home, End, Tab) and with the mouse (a drag past the slider's
ends, a choice in the menu); after each move the bars' heights, read back from the SVG by its own scale, are the
step's weights as ``decode_sentence`` computes them, the heatmap's outline is on the step's row, the translation so
far marks the step's token, and the aria-live line says what ``qkv`` says. Two screenshots, and one at 390 px wide,
where the page must not scroll sideways.
"""

from __future__ import annotations

import functools

import pytest

from tests.support import explorers as ex

pytestmark = pytest.mark.browser

NAME = "bahdanau_decoding"
SENTENCE = "i'm home ."
MORE = ("go .", "i lost .", "he's calm .")  # the page's cell: its sentence, then the test pairs' sources


@functools.cache
def _model_and_data():
    """The page's model, as its cell gets it: D2L's setting, trained once, then loaded (a smoke run in the tests)."""
    from qkv import bahdanau as ref
    from qkv.recipes.translate import train_d2l

    fitted, data = train_d2l("bahdanau", ref.BahdanauConfig(), log=lambda *_: None)
    return fitted.model, data


@functools.cache
def _decoded_here():
    from qkv.widgets.bahdanau_attention import decode_sentence

    model, data = _model_and_data()
    return {s: decode_sentence(model, data, s) for s in (SENTENCE, *MORE)}


def _decoded(page) -> dict:
    """The decodings the page holds, computed by the page's model when the page ran, as ``Decoding`` objects. In a
    standalone page, where that model is this process's, they must first equal ``decode_sentence``'s exactly; the
    book's pages ran in the build's processes (``tests/unit/qkv/test_live_bahdanau_decoding_js.py`` checks the data
    against ``decode_sentence`` there)."""
    import torch

    from qkv.widgets.bahdanau_attention import Decoding

    data = ex.embedded_state(page, NAME)["data"]
    shown = {
        e["source"]: Decoding(e["src_tokens"], e["out_tokens"], torch.tensor(e["weights"], dtype=torch.float32))
        for e in data["sentences"]
    }
    assert list(shown) == [SENTENCE, *MORE], f"the page's sentences: {list(shown)}"
    if ex.standalone():
        for sentence, d in _decoded_here().items():
            got = shown[sentence]
            assert (got.src_tokens, got.out_tokens) == (d.src_tokens, d.out_tokens), sentence
            assert torch.equal(got.weights, d.weights), f"{sentence}: the page's weights are the model's exactly"
    return shown


def _standalone():
    from qkv.widgets import bahdanau_attention as widgets

    model, data = _model_and_data()
    return widgets.decoding_explorer(model, data, SENTENCE, more=MORE)


_DRAWN_JS = """() => {
  const root = document.querySelector('.qkv-bahdanau-decoding');
  const bars = root.querySelector('svg.qkv-bars');
  const y = (v) => +bars.querySelector(`line.qkv-grid[data-value="${v}"]`).getAttribute('y1');
  const scale = y(0) - y(1);
  const rects = [...bars.querySelectorAll('rect')];
  const heat = root.querySelector('svg.qkv-heatmap');
  const outline = heat.querySelector('rect.qkv-current');
  const rows = [...heat.querySelectorAll('rect[data-col="0"]')].map(r => +r.getAttribute('y'));
  const outlineY = +outline.getAttribute('y');
  const outlined = rows.findIndex(r => r >= outlineY && r < outlineY + +outline.getAttribute('height') - 2);
  const cells = [...heat.querySelectorAll('text.qkv-in-cell')].map(t => t.textContent);
  return {
    weights: rects.map(r => +r.getAttribute('height') / scale),
    tops: rects.map((r, j) => r.classList.contains('qkv-top') ? j : -1).filter(j => j >= 0),
    outlined,
    rows: rows.length,
    cells,
    mark: root.querySelector('.qkv-translation mark').textContent,
    translation: root.querySelector('.qkv-translation').textContent,
    valuetext: root.querySelector('input[type=range]').getAttribute('aria-valuetext'),
    max: +root.querySelector('input[type=range]').max,
    menu: (root.querySelector('select') || {}).value,
    labels: [...root.querySelectorAll('svg')].map(s => [s.getAttribute('role'), s.getAttribute('aria-label')]),
  };
}"""


def _check(page, sentence: str, step: int) -> None:
    """What is drawn and said for ``sentence`` at ``step`` (from 1), against ``decode_sentence``'s tensors."""
    d = _decoded(page)[sentence]
    n = len(d.out_tokens)
    row = d.weights[step - 1]  # (source tokens,), float32
    top = int(row.argmax())
    drawn = page.evaluate(_DRAWN_JS)
    what = f"{sentence}, step {step}"
    assert drawn["weights"] == pytest.approx(row.tolist(), abs=1e-4), f"{what}: the bars' heights"
    assert drawn["tops"] == [top], f"{what}: the largest bar is marked"
    assert (drawn["outlined"], drawn["rows"], drawn["max"]) == (step - 1, n, n), f"{what}: the heatmap's outline"
    assert drawn["cells"] == [f"{float(w):.2f}" for w in d.weights.flatten()], f"{what}: the heatmap's numbers"
    assert drawn["mark"] == d.out_tokens[step - 1], f"{what}: the translation marks the step's token"
    assert drawn["translation"] == "translation so far: " + " ".join(d.out_tokens[:step]), what
    assert drawn["valuetext"] == f"step {step} of {n}: emits {d.out_tokens[step - 1]!r}"
    assert drawn["menu"] == str((SENTENCE, *MORE).index(sentence)), f"{what}: the menu shows the sentence"
    assert all(role == "img" and label and f"step {step}" in label for role, label in drawn["labels"]), drawn["labels"]
    text = ex.summary(page, NAME)
    assert text == (
        f"{sentence!r}, step {step} of {n} emits {d.out_tokens[step - 1]!r}: the largest weight, "
        f"{float(row[top]):.2f}, is on {d.src_tokens[top]!r}; so far: {' '.join(d.out_tokens[:step])}"
    ), text


def test_decoding_explorer_moves_with_the_keyboard_and_the_mouse(explorers):
    explorers.run(_session, explorers)


def _session(reader, explorers):
    page, visit = explorers.open(reader, NAME, _standalone)
    try:
        _moves(page, visit)
    finally:
        page.context.close()


def _moves(page, visit):
    ex.check_replaces_the_figure(page, visit, NAME)
    decoded = _decoded(page)
    n = len(decoded[SENTENCE].out_tokens)
    menu = page.locator(".qkv-bahdanau-decoding select")
    slider = page.locator(".qkv-bahdanau-decoding input[type=range]")
    _check(page, SENTENCE, 1)
    ex.shoot(page, NAME, "im-home-step1")
    slider.focus()
    assert page.evaluate("() => getComputedStyle(document.activeElement).outlineStyle") != "none", "focus is visible"
    page.keyboard.press("End")
    _check(page, SENTENCE, n)
    page.keyboard.press("Home")
    _check(page, SENTENCE, 1)
    page.keyboard.press("ArrowRight")
    _check(page, SENTENCE, min(2, n))
    ex.drag_to_end(page, slider, "left")
    _check(page, SENTENCE, 1)
    ex.drag_to_end(page, slider, "right")
    _check(page, SENTENCE, n)
    menu.focus()
    page.keyboard.press("ArrowDown")  # the next sentence of the menu; the step stays where it fits
    _check(page, MORE[0], min(n, len(decoded[MORE[0]].out_tokens)))
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.type") == "range", "Tab reaches the step slider"
    page.keyboard.press("Home")
    _check(page, MORE[0], 1)
    menu.select_option(label=MORE[2])  # a choice in the menu, as a click makes it
    _check(page, MORE[2], 1)
    last = len(decoded[MORE[2]].out_tokens)
    ex.drag_to_end(page, slider, "right")
    _check(page, MORE[2], last)
    ex.shoot(page, NAME, f"hes-calm-step{last}")
    ex.check_print_keeps_the_figure(page, NAME)


def test_decoding_explorer_fits_a_phone(explorers):
    explorers.run(_phone, explorers)


def _phone(reader, explorers):
    path = explorers.path(NAME, _standalone)
    context = reader.browser.new_context(viewport={"width": 390, "height": 800}, has_touch=True)
    try:
        page = context.new_page()
        page.goto(reader.url(path), wait_until="domcontentloaded")
        page.wait_for_function(ex.READY_JS, arg=NAME, timeout=10_000)
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 390, "the page scrolls sideways"
        box = page.locator(f'.qkv-live[data-qkv-live="{NAME}"]').bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390, box
        slider = page.locator(".qkv-bahdanau-decoding input[type=range]")
        ex.drag_to_end(page, slider, "right")  # a finger's drag is a pointer drag too
        n = len(_decoded(page)[SENTENCE].out_tokens)
        _check(page, SENTENCE, n)
        ex.shoot(page, NAME, "phone-390px")
    finally:
        context.close()
