"""11.9's sampling explorer, used as a reader uses it (D2L 11.9; qkv.widgets.large_pretraining_transformers).

In Chromium, through the shared ``explorers`` fixture (``tests/book/conftest.py``): the explorer replaces its static
grid (print keeps the grid); the prompt menu, the temperature slider and the top-k slider move with the keyboard
(arrows, Home, End) and with the mouse (drags past either end, a click on the track, a choice in the menu); after
each move the bars, read back from the SVG, and the aria-live line say what :func:`qkv.lm.next_token_distribution`
gives on the logits the page embeds. At 390 px wide (a phone) the page does not scroll sideways. Two screenshots go
to ``_build/screenshots/explorers/``, and one at 390 px.

With ``QKV_EXPLORER_STANDALONE=1`` the explorer is read from a page of its own, made from the page's GPT recipe
(``lm_recipes.train_gpt``; a smoke run under ``QKV_TRAIN_SMOKE``).
"""

from __future__ import annotations

import json
import math

import pytest
import torch

from qkv import lm
from tests.support import explorers as ex

pytestmark = pytest.mark.browser

NAME = "sampling"
ROOT = ".qkv-sampling"


def _standalone():
    from qkv.recipes import lm as lm_recipes
    from qkv.widgets import large_pretraining_transformers as widgets

    gpt, data = lm_recipes.train_gpt(lm.CharLMData(), log=lambda s: None)
    return widgets.sampling_explorer(gpt.model, data, "the time travel")


def _embedded(page) -> dict:
    """The explorer's data as the page holds them (the logits the model gave when the page was built)."""
    text = page.locator(f'.qkv-live[data-qkv-live="{NAME}"] script[data-qkv="state"]').text_content()
    return json.loads(text)["data"]


def _drawn(page) -> dict:
    """The bars as drawn: each character's probability (height over the 0-to-1 gridlines' distance), the characters
    cut by top-k (a dashed outline shown), and the labels under the bars."""
    return page.evaluate(
        """(root) => {
      const svg = document.querySelector(`${root} svg.qkv-bars`);
      const at = (v) => +svg.querySelector(`line.qkv-grid[data-value="${v}"]`).getAttribute('y1');
      const unit = at(0) - at(1);
      const bars = [...svg.querySelectorAll('rect.qkv-bar')];
      const ghosts = [...svg.querySelectorAll('rect.qkv-ghost')];
      return {
        probs: Object.fromEntries(bars.map(b => [b.dataset.char, +b.getAttribute('height') / unit])),
        order: bars.map(b => b.dataset.char),
        labels: [...svg.querySelectorAll('text.qkv-char')].map(t => t.textContent),
        cut: bars.map((b, i) => ghosts[i].getAttribute('visibility') === 'visible' ? b.dataset.char : null)
                 .filter(c => c !== null),
        aria: svg.getAttribute('aria-label'),
        role: svg.getAttribute('role'),
      };
    }""",
        ROOT,
    )


def _check(page, data: dict, prompt: str, temperature: float, top_k: int | None) -> None:
    """The bars, the sliders' spoken values and the aria-live line at this setting, against qkv."""
    labels = data["labels"]
    logits = torch.tensor(data["logits"][data["prompts"].index(prompt)], dtype=torch.float64)  # (V,)
    probs = lm.next_token_distribution(logits, temperature, top_k)  # (V,)
    what = f"after {prompt!r}, temperature {temperature}, top-k {top_k or 'all'}"
    drawn = _drawn(page)
    order = torch.sort(logits, descending=True, stable=True).indices[:12].tolist()
    assert drawn["order"] == drawn["labels"] == [labels[i] for i in order], what
    assert drawn["probs"] == pytest.approx({labels[i]: float(probs[i]) for i in order}, abs=1e-5), what
    uncut = lm.next_token_distribution(logits, temperature)
    assert drawn["cut"] == [labels[i] for i in order if probs[i] == 0 and uncut[i] > 0], what
    assert drawn["role"] == "img" and f"temperature {temperature:.2f}" in drawn["aria"], drawn["aria"]
    top = labels[int(probs.argmax())]
    said = "the space" if top == "␣" else f"'{top}'"
    n = int((probs > 0.01).sum())
    bits = abs(float(torch.special.xlogy(probs, probs).sum() / math.log(2)))  # -0.0 would print "-0.00"
    text = ex.summary(page, NAME)
    assert text.startswith(
        f"after '{prompt}', temperature {temperature:.2f}, top-k {top_k or 'all'}: {said} has probability "
        f"{float(probs.max()):.2f}; {n} character{'s' * (n != 1)} above 1%; entropy {bits:.2f} bits"
    ), f"{what}: {text}"
    t_slider, k_slider = (page.locator(f"{ROOT} input[type=range] >> nth={i}") for i in range(2))
    assert t_slider.get_attribute("aria-valuetext") == f"temperature {temperature:.2f}"
    spoken = f"top-k {top_k}" if top_k else f"all {len(labels)} characters"
    assert k_slider.get_attribute("aria-valuetext") == spoken
    assert page.locator(f"{ROOT} select").input_value() == str(data["prompts"].index(prompt))


def test_sampling_explorer_moves_with_the_keyboard_and_the_mouse(explorers):
    explorers.run(_session, explorers)


def _session(reader, explorers):
    page, visit = explorers.open(reader, NAME, _standalone)
    try:
        _moves(page, visit)
    finally:
        page.context.close()


def _moves(page, visit):
    ex.check_replaces_the_figure(page, visit, NAME)
    data = _embedded(page)
    first, second, *_ = data["prompts"]
    V = len(data["labels"])
    menu = page.locator(f"{ROOT} select")
    t_slider, k_slider = (page.locator(f"{ROOT} input[type=range] >> nth={i}") for i in range(2))
    for control in (menu, t_slider, k_slider):
        assert control.get_attribute("data-lm-suppress-shortcuts") == "true"
    _check(page, data, first, 1.0, None)
    # the temperature, with the keyboard: Home is 0.1, then steps of 0.05 up to 1 and of 0.1 beyond
    t_slider.focus()
    assert page.evaluate("() => getComputedStyle(document.activeElement).outlineStyle") != "none", "focus is visible"
    page.keyboard.press("Home")
    _check(page, data, first, 0.1, None)
    for _ in range(8):
        page.keyboard.press("ArrowRight")
    _check(page, data, first, 0.5, None)
    ex.shoot(page, NAME, "t0.50-all")
    page.keyboard.press("End")
    _check(page, data, first, 3.0, None)
    page.keyboard.press("ArrowLeft")
    _check(page, data, first, 2.9, None)
    # top-k, with the keyboard
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.id.endsWith('top-k')"), "Tab reaches the top-k slider"
    page.keyboard.press("Home")
    _check(page, data, first, 2.9, 1)
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowUp")
    _check(page, data, first, 2.9, 3)
    page.keyboard.press("End")
    _check(page, data, first, 2.9, None)
    # the prompt, with the keyboard: the next one in the menu
    menu.focus()
    page.keyboard.press("ArrowDown")
    _check(page, data, second, 2.9, None)
    # the mouse: drags past either end, a click on the track
    ex.drag_to_end(page, t_slider, "left")
    _check(page, data, second, 0.1, None)
    ex.drag_to_end(page, t_slider, "right")
    _check(page, data, second, 3.0, None)
    ex.drag_to_end(page, k_slider, "left")
    _check(page, data, second, 3.0, 1)
    box = k_slider.bounding_box()
    page.mouse.click(box["x"] + box["width"] * 0.1, box["y"] + box["height"] / 2)
    k = int(k_slider.input_value())
    assert 1 < k < V // 2, f"a click a tenth of the way along the top-k track gave {k}"
    _check(page, data, second, 3.0, k)
    ex.drag_to_end(page, k_slider, "right")
    _check(page, data, second, 3.0, None)
    # a prompt chosen from the menu, then the second screenshot's setting: 2.0, top-3
    menu.select_option(label=f"'{data['prompts'][-1]}'")
    _check(page, data, data["prompts"][-1], 3.0, None)
    t_slider.focus()
    for _ in range(10):
        page.keyboard.press("ArrowLeft")
    k_slider.focus()
    page.keyboard.press("Home")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    _check(page, data, data["prompts"][-1], 2.0, 3)
    assert len(_drawn(page)["cut"]) == 9, "the 9 shown characters beyond the top 3 are cut"
    ex.shoot(page, NAME, "t2.00-top3")
    ex.check_print_keeps_the_figure(page, NAME)


def test_sampling_explorer_fits_a_phone(explorers):
    explorers.run(_phone, explorers)


def _phone(reader, explorers):
    context = reader.browser.new_context(viewport={"width": 390, "height": 800}, has_touch=True)
    try:
        page = context.new_page()
        page.goto(reader.url(explorers.path(NAME, _standalone)), wait_until="load")
        page.wait_for_function(ex.READY_JS, arg=NAME, timeout=10_000)
        widths = page.evaluate(
            """(root) => ({page: document.documentElement.scrollWidth,
                           explorer: document.querySelector(root).getBoundingClientRect().right,
                           svg: document.querySelector(`${root} svg`).getBoundingClientRect().width})""",
            ROOT,
        )
        assert widths["page"] <= 390 and widths["explorer"] <= 390, f"the page scrolls sideways at 390 px: {widths}"
        assert widths["svg"] >= 300, f"the chart is squeezed: {widths}"
        ex.SHOTS.mkdir(parents=True, exist_ok=True)
        page.locator(f'.qkv-live[data-qkv-live="{NAME}"]').screenshot(path=str(ex.SHOTS / f"{NAME}-390px.png"))
        # by touch: a tap near the right end of the top-k track
        slider = page.locator(f"{ROOT} input[type=range] >> nth=1")
        box = slider.bounding_box()
        page.touchscreen.tap(box["x"] + box["width"] - 2, box["y"] + box["height"] / 2)
        V = len(_embedded(page)["labels"])
        assert slider.input_value() == str(V), "a tap at the right end of the track keeps all the characters"
        page.touchscreen.tap(box["x"] + 2, box["y"] + box["height"] / 2)
        assert slider.input_value() == "1" and "top-k 1:" in ex.summary(page, NAME)
    finally:
        context.close()
