"""11.7's encoder-decoder attention explorer, used as a reader uses it (``js/cross_attention.js``; issue 42).

In Chromium, through the shared ``explorers`` fixture (``tests/book/conftest.py``): the explorer replaces its static
grid (print keeps the grid); the sentence menu, the block, head and French-token sliders move with the keyboard
(arrows, Home, End) and with the mouse (drags, a click on a row of the heatmap, the menu), and after each move every
cell of the heatmap (its ``data-weight`` and its fill opacity), the row picked out, its printed values and the
aria-live line are read back against ``qkv.widgets.transformer.cross_attention``. Two screenshots go to
``_build/screenshots/explorers/``, and a third of the page at 390 px wide, which must not scroll sideways.

The book's page shows its trained translator (a smoke run under ``QKV_TRAIN_SMOKE``); the standalone page
(``QKV_EXPLORER_STANDALONE=1``) shows a small untrained one with D2L's layout, whose translations run to
``num_steps`` tokens, so that its heatmaps have many rows to pick.
"""

from __future__ import annotations

import functools

import pytest
import torch

from qkv.widgets.transformer import CrossAttention, cross_attention
from tests.support import explorers as ex

pytestmark = pytest.mark.browser

NAME = "cross_attention"
SENTENCE, MORE = "i lost .", ("i'm home .", "he's calm .", "he's home .")  # as book/transformer.md shows them
ROOT = ".qkv-cross-attention"

HEATMAP_JS = """() => {
  const svg = document.querySelector('.qkv-cross-attention svg.qkv-heatmap');
  const cells = [...svg.querySelectorAll('rect[data-weight]')];
  const n = Math.max(...cells.map(c => +c.dataset.row)) + 1;
  const T = Math.max(...cells.map(c => +c.dataset.col)) + 1;
  const weights = Array.from({length: n}, () => Array(T).fill(null));
  const opacity = Array.from({length: n}, () => Array(T).fill(null));
  for (const c of cells) {
    weights[+c.dataset.row][+c.dataset.col] = +c.dataset.weight;
    opacity[+c.dataset.row][+c.dataset.col] = +c.getAttribute('fill-opacity');
  }
  const outline = svg.querySelector('rect.qkv-selected');
  const picked = cells.filter(c => Math.abs(+c.getAttribute('y') - (+outline.getAttribute('y') + 1)) < 1e-6);
  const rows = [...new Set(picked.map(c => +c.dataset.row))];
  const values = [...svg.querySelectorAll('.qkv-row')].map(g => [...g.querySelectorAll('text.qkv-value')]
    .map(t => t.textContent));
  return {
    weights, opacity, rows,
    values,
    out: [...svg.querySelectorAll('text.qkv-out')].map(t => t.textContent),
    bold: [...svg.querySelectorAll('text.qkv-out')].map(t => t.getAttribute('font-weight') === 'bold'),
    src: [...svg.querySelectorAll('text.qkv-src')].map(t => t.textContent),
    label: svg.getAttribute('aria-label'),
    role: svg.getAttribute('role'),
  };
}"""


@functools.cache
def _translator():
    """The model and data the explorer's page shows (see the module's docstring)."""
    if ex.standalone():
        from qkv.data import MTFraEng
        from qkv.transformer import TransformerConfig

        data = MTFraEng(128)
        torch.manual_seed(0)
        config = TransformerConfig(num_hiddens=32, ffn_num_hiddens=16, num_heads=4, num_blks=2, dropout=0.0)
        model = config.build(len(data.src_vocab), len(data.tgt_vocab), tgt_pad=data.tgt_vocab["<pad>"])
        return model.eval(), data
    from qkv.recipes.translate import train_transformer

    fitted, data = train_transformer(progress=False, log=lambda *args: None)  # the page's translator, loaded
    return fitted.model, data


@functools.cache
def _attention(sentence: str):
    return cross_attention(*_translator(), sentence)


def _shown(page, sentence: str) -> CrossAttention:
    """``sentence``'s attention as the page holds it, computed by the page's model when the page ran. In a
    standalone page, where that model is this process's, it must first equal ``cross_attention``'s exactly; the
    book's pages ran in the build's processes (the unit tests check the data against ``cross_attention``)."""
    data = ex.embedded_state(page, NAME)["data"]
    [entry] = [e for e in data["sentences"] if e["sentence"] == sentence]
    shown = CrossAttention(entry["src"], entry["out"], torch.tensor(entry["weights"], dtype=torch.float32))
    if ex.standalone():
        attn = _attention(sentence)
        assert (shown.src_tokens, shown.out_tokens) == (attn.src_tokens, attn.out_tokens), sentence
        assert torch.equal(shown.weights, attn.weights), f"{sentence}: the page's weights are the model's exactly"
    return shown


def _standalone():
    from qkv.widgets import transformer as widgets

    return widgets.cross_attention_explorer(*_translator(), SENTENCE, more=MORE)


def _expected_summary(attn, block: int, head: int, step: int) -> str:
    row = attn.weights[block - 1, head - 1, step - 1].double()
    order = sorted(range(len(row)), key=lambda k: (-float(row[k]), k))

    def name(k):
        token = attn.src_tokens[k]
        return f'"{token}" (source token {k + 1})' if attn.src_tokens.count(token) > 1 else f'"{token}"'

    text = (
        f'block {block}, head {head}: "{attn.out_tokens[step - 1]}" (French token {step} of {len(attn.out_tokens)}) '
        f"puts {float(row[order[0]]):.2f} of its weight on {name(order[0])}"
    )
    if len(order) > 1:
        text += f", then {float(row[order[1]]):.2f} on {name(order[1])}"
    return text + "."


def _check(page, sentence: str, block: int, head: int, step: int, attn: CrossAttention | None = None) -> None:
    """What the page draws and says equals the weights for this setting (``step`` is clamped to the sentence): those
    the page holds (:func:`_shown`), or ``attn``."""
    attn = _shown(page, sentence) if attn is None else attn
    n = len(attn.out_tokens)
    step = min(max(step, 1), n)
    what = f"{sentence!r}, block {block}, head {head}, token {step}"
    drawn = page.evaluate(HEATMAP_JS)
    expected = attn.weights[block - 1, head - 1]  # (emitted, source), float32
    assert drawn["weights"] == expected.tolist(), f"{what}: the cells' weights"
    torch.testing.assert_close(
        torch.tensor(drawn["opacity"], dtype=torch.float64),
        expected.double(),
        rtol=0,
        atol=1e-7,
        msg=lambda m: f"{what}: the cells' fill opacity: {m}",
    )
    assert (drawn["out"], drawn["src"]) == (attn.out_tokens, attn.src_tokens), what
    assert drawn["rows"] == [step - 1] and drawn["bold"] == [i == step - 1 for i in range(n)], f"{what}: the row"
    assert drawn["values"][step - 1] == [f"{float(w):.2f}" for w in expected[step - 1]], f"{what}: printed values"
    assert all(v == [""] * len(attn.src_tokens) for i, v in enumerate(drawn["values"]) if i != step - 1)
    assert drawn["role"] == "img" and f'block {block}, head {head} for "{sentence}"' in drawn["label"], what
    assert ex.summary(page, NAME) == _expected_summary(attn, block, head, step), what
    sliders = [page.locator(f"{ROOT} input[type=range] >> nth={i}") for i in range(3)]
    blocks, heads = attn.num_blocks, attn.num_heads
    assert [s.get_attribute("aria-valuetext") for s in sliders] == [
        f"block {block} of {blocks}",
        f"head {head} of {heads}",
        f'token {step} of {n}, "{attn.out_tokens[step - 1]}"',
    ]
    assert page.locator(f"{ROOT} select option:checked").text_content() == sentence


def test_cross_attention_explorer_moves_with_the_keyboard_and_the_mouse(explorers):
    explorers.run(_session, explorers)


def _session(reader, explorers):
    page, visit = explorers.open(reader, NAME, _standalone)
    try:
        _moves(page, visit)
    finally:
        page.context.close()


def _moves(page, visit):
    ex.check_replaces_the_figure(page, visit, NAME)
    menu = page.locator(f"{ROOT} select")
    sentences = menu.locator("option").all_text_contents()
    assert sentences[0] == SENTENCE and len(sentences) >= 2, sentences
    block, head, step = (page.locator(f"{ROOT} input[type=range] >> nth={i}") for i in range(3))
    first = _shown(page, SENTENCE)
    L, H, n = first.num_blocks, first.num_heads, len(first.out_tokens)
    _check(page, SENTENCE, L, 1, 1)  # the first setting: the last block, the first head, the first token
    block.focus()
    assert page.evaluate("() => getComputedStyle(document.activeElement).outlineStyle") != "none", "focus is visible"
    page.keyboard.press("Home")
    _check(page, SENTENCE, 1, 1, 1)
    page.keyboard.press("Tab")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    _check(page, SENTENCE, 1, min(3, H), 1)
    page.keyboard.press("End")
    _check(page, SENTENCE, 1, H, 1)
    page.keyboard.press("Tab")
    page.keyboard.press("End")
    _check(page, SENTENCE, 1, H, n)
    page.keyboard.press("ArrowLeft")
    _check(page, SENTENCE, 1, H, max(n - 1, 1))
    ex.shoot(page, NAME, f"block1-head{H}-token{max(n - 1, 1)}")
    picked = max(n - 1, 1)
    menu.focus()
    page.keyboard.press("ArrowDown")  # the next sentence; the token slider keeps its place, within the sentence
    _check(page, sentences[1], 1, H, picked)
    ex.drag_to_end(page, block, "right")
    _check(page, sentences[1], L, H, picked)
    ex.drag_to_end(page, head, "left")
    _check(page, sentences[1], L, 1, picked)
    rows = len(_shown(page, sentences[1]).out_tokens)
    page.locator(f"{ROOT} svg.qkv-heatmap text.qkv-out >> nth={rows - 1}").click()  # a click on the last row
    _check(page, sentences[1], L, 1, rows)
    page.locator(f"{ROOT} svg.qkv-heatmap rect[data-row='0'][data-col='0']").click()  # a click on a cell
    _check(page, sentences[1], L, 1, 1)
    menu.select_option(label=sentences[-1])
    _check(page, sentences[-1], L, 1, 1)
    ex.drag_to_end(page, step, "right")
    _check(page, sentences[-1], L, 1, len(_shown(page, sentences[-1]).out_tokens))
    ex.shoot(page, NAME, f"block{L}-head1-last-token")
    assert not page.locator(f"{ROOT} input[type=text]").count(), "no text box where no kernel translates"
    ex.check_print_keeps_the_figure(page, NAME)


def test_cross_attention_explorer_fits_a_phone(explorers):
    explorers.run(_phone, explorers)


def _phone(reader, explorers):
    path = explorers.path(NAME, _standalone)
    context = reader.browser.new_context(viewport={"width": 390, "height": 800})
    try:
        page = context.new_page()
        page.goto(reader.url(path), wait_until="domcontentloaded")
        page.wait_for_function(ex.READY_JS, arg=NAME, timeout=10_000)
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 390, "the page scrolls sideways"
        right = page.evaluate(
            """() => Math.max(...[...document.querySelectorAll('.qkv-cross-attention, .qkv-cross-attention *')]
                 .map(e => e.getBoundingClientRect().right))"""
        )
        assert right <= 390, f"the explorer reaches {right} px"
        font = page.evaluate(
            """() => {
          const svg = document.querySelector('.qkv-cross-attention svg.qkv-heatmap');
          const text = svg.querySelector('text.qkv-out');
          return text.getBoundingClientRect().height;
        }"""
        )
        assert font >= 10, f"the heatmap's labels are {font:.1f} px high at 390 px"
        ex.shoot(page, NAME, "phone-390px")
    finally:
        context.close()


# ---- JupyterLab's text box, with the kernel's side played by the real widget ----------------------------------------

#: The module rendered in a bare page with a model like anywidget's, whose changes the test carries to and from the
#: Python widget (as JupyterLab's comm does): what the page sends is read from ``window.qkvSent``.
TYPING_PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>typing</title></head>
<body><main><div class="qkv-live" data-qkv-live="cross_attention" id="root"></div></main>
<script type="application/json" id="state">STATE</script>
<script type="application/json" id="module">MODULE</script>
<script type="module">
const read = (id) => JSON.parse(document.getElementById(id).textContent);
const values = read("state");
const listeners = new Map();
window.qkvSent = [];
window.qkvModel = {
  get: (key) => values[key],
  set(key, value) {
    if (Object.is(values[key], value)) return;
    values[key] = value;
    for (const callback of [...(listeners.get(`change:${key}`) || [])]) callback(value);
  },
  save_changes() { window.qkvSent.push(values.sentence); },
  on(event, callback) {
    if (!listeners.has(event)) listeners.set(event, new Set());
    listeners.get(event).add(callback);
  },
  off(event, callback) { listeners.get(event)?.delete(callback); },
};
const url = URL.createObjectURL(new Blob([read("module")], { type: "text/javascript" }));
const module = await import(url);
await module.default.render({ model: window.qkvModel, el: document.getElementById("root") });
window.qkvReady = true;
</script></body></html>
"""


def test_a_typed_sentence_is_translated_by_the_kernel_and_selected(explorers, monkeypatch):
    """In JupyterLab the text box sends the sentence; the widget's observer translates it and adds it to the data;
    the page selects it and says so. An empty box, and a sentence the kernel cannot translate, give a message."""
    from qkv import widgets as qkv_widgets
    from qkv.widgets import _live as live
    from qkv.widgets import transformer as widgets

    monkeypatch.delenv(qkv_widgets.BOOK_BUILD_ENV, raising=False)
    panel = widgets.cross_attention_explorer(*_translator(), SENTENCE, more=MORE[:1])
    state = panel.get_state(["data", "sentence", "block", "head", "step", "typing"])
    page_html = TYPING_PAGE.replace("STATE", live._json(state)).replace("MODULE", live._json(live.module_text(NAME)))
    explorers.run(_typing, panel, page_html)


def _typing(reader, panel, page_html):
    context = reader.browser.new_context(viewport={"width": 800, "height": 900})
    try:
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda err: errors.append(str(err)))
        page.set_content(page_html)
        page.wait_for_function("() => window.qkvReady === true", timeout=10_000)

        def kernel():
            """Carry the page's last sentence to the widget, and the widget's data and sentence back."""
            sent = page.evaluate("() => window.qkvSent.at(-1)")
            panel.sentence = sent
            page.evaluate(
                "([data, sentence]) => { qkvModel.set('data', data); qkvModel.set('sentence', sentence); }",
                [panel.data, panel.sentence],
            )

        message = page.locator(f"{ROOT} [role=status]")
        box = page.get_by_label("translate a sentence of your own")
        box.fill("   ")
        box.press("Enter")
        assert message.text_content().startswith("Type an English sentence first"), message.text_content()
        assert page.evaluate("() => window.qkvSent.length") == 0, "nothing goes to the kernel"
        typed = MORE[-1]
        box.fill(f"  {typed} ")
        page.get_by_role("button", name="translate").click()
        assert message.text_content() == f'Translating "{typed}" ...'
        kernel()
        assert message.text_content() == f'Added "{typed}" to the menu of sentences.'
        options = page.locator(f"{ROOT} select option").all_text_contents()
        assert options == [SENTENCE, MORE[0], typed]
        block = _attention(typed).num_blocks
        _check(page, typed, block, 1, 1, _attention(typed))
        page.locator(f"{ROOT} input[type=range] >> nth=1").focus()
        page.keyboard.press("End")
        _check(page, typed, block, _attention(typed).num_heads, 1, _attention(typed))
        assert message.text_content() == "", "a move clears the message"
        page.evaluate("() => { window.qkvModel.set('sentence', '\\t'); window.qkvModel.save_changes(); }")
        kernel()  # the kernel cannot translate it: the data say why, the sentence goes back
        assert "could not translate" in message.text_content() and "sentence is empty" in message.text_content()
        _check(page, typed, block, _attention(typed).num_heads, 1, _attention(typed))
        assert errors == [], errors
        ex.shoot(page, NAME, "jupyterlab-typed")
    finally:
        context.close()
