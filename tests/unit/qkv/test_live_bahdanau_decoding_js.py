"""The decoding explorer of D2L 11.4 (``js/bahdanau_decoding.js``) shows exactly what ``qkv`` decoded.

No model runs in the page: ``bahdanau_decoding_data`` writes the float32 weights of ``decode_sentence`` into it. Here,
in Node, on those data: every weight reads back as the very float32 value of the tensor (bit for bit), and the
module's own arithmetic (the step's row, its largest weight and token, the translation so far, the slider's and the
aria-live line's text) agrees with the tensors ``decode_sentence`` returns, at every step of several sentences, for
the page's model (trained by its recipe; a smoke run in the test suite) and for an untrained one that never emits
``<eos>`` (every step up to ``num_steps``).
"""

from __future__ import annotations

import json
import re

import pytest
import torch

from qkv.bahdanau import make_bahdanau
from qkv.data import MTFraEng
from qkv.widgets import _live as live
from qkv.widgets.bahdanau_attention import bahdanau_decoding_data, decode_sentence
from tests.support.js_modules import call_module, node_or_skip

SENTENCES = ("i'm home .", "go .", "i lost .", "he's calm .")  # the page's sentence first, then its test pairs'

pytestmark = pytest.mark.usefixtures("_node")


@pytest.fixture
def _node():
    node_or_skip()


@pytest.fixture(scope="module", params=["page", "untrained"])
def decoded(request, data_dir):
    """Each sentence of :data:`SENTENCES` and its decoding, by the page's model or by an untrained one."""
    if request.param == "page":
        from qkv.recipes.translate import train_bahdanau

        fitted, data = train_bahdanau(log=lambda *_: None)  # as the page: trained once, then loaded
        model = fitted.model
    else:
        data = MTFraEng(128, data_dir=data_dir)
        torch.manual_seed(3)
        model = make_bahdanau(len(data.src_vocab), len(data.tgt_vocab), 8, 8, 2, 0.0, tgt_pad=data.tgt_vocab["<pad>"])
    return {s: decode_sentence(model, data, s) for s in SENTENCES}


def _quote(token: str) -> str:
    return repr(token)  # the module quotes tokens as Python's repr does


def test_every_weight_reads_back_as_the_tensors_float32_value(decoded):
    data = bahdanau_decoding_data(decoded)
    text = live._json(data)  # as the page holds it
    assert len(text) < 4000, f"the data should be small: {len(text)} characters"
    calls = [("sentenceIndex", [data, s]) for s in SENTENCES]
    calls += [("explore", [data, s, step]) for s, d in decoded.items() for step in range(1, len(d.out_tokens) + 1)]
    results = call_module("bahdanau_decoding", calls)  # JSON in, JSON out: Node parses the page's decimals
    assert results[: len(SENTENCES)] == list(range(len(SENTENCES)))
    rows = iter(results[len(SENTENCES) :])
    for s, d in decoded.items():
        for step in range(1, len(d.out_tokens) + 1):
            row = next(rows)["weights"]
            expected = d.weights[step - 1]  # (source tokens,), float32
            assert torch.equal(torch.tensor(row, dtype=torch.float64), expected.double()), f"{s}, step {step}"
            assert all(w == float(x) for w, x in zip(row, expected)), f"{s}, step {step}: not exact"
    assert json.loads(text) == data


def test_explore_picks_qkvs_step_and_its_largest_weight(decoded):
    data = bahdanau_decoding_data(decoded)
    settings = [(s, step) for s, d in decoded.items() for step in range(1, len(d.out_tokens) + 1)]
    results = call_module("bahdanau_decoding", [("explore", [data, s, step]) for s, step in settings])
    for (s, step), result in zip(settings, results):
        d = decoded[s]
        what = f"{s}, step {step}"
        row = d.weights[step - 1]
        top = int(row.argmax())  # the first on a tie, as the module
        assert (result["source"], result["step"], result["n"]) == (s, step, len(d.out_tokens)), what
        assert result["token"] == d.out_tokens[step - 1], what
        assert result["top"] == {"index": top, "token": d.src_tokens[top], "weight": float(row[top])}, what
        assert result["soFar"] == d.out_tokens[:step], what
        assert result["total"] == pytest.approx(float(row.double().sum()), rel=1e-9), what
        assert result["total"] == pytest.approx(1.0, abs=1e-6), f"{what}: the valid tokens hold all the weight"


def test_the_step_and_the_sentence_make_a_difference_that_the_comparison_sees(decoded):
    """Two steps of a sentence, and two sentences, differ far beyond exactness: the comparisons above can fail."""
    data = bahdanau_decoding_data(decoded)
    n = len(decoded["i'm home ."].out_tokens)
    first, last, other = call_module(
        "bahdanau_decoding",
        [("explore", [data, "i'm home .", 1]), ("explore", [data, "i'm home .", n]), ("explore", [data, "go .", 1])],
    )
    assert max(abs(a - b) for a, b in zip(first["weights"], last["weights"])) > 1e-4
    assert len(other["weights"]) == 3 and other["weights"][0] != first["weights"][0]


def test_the_step_is_clamped_and_an_unknown_sentence_shows_the_first(decoded):
    data = bahdanau_decoding_data(decoded)
    n = len(decoded["go ."].out_tokens)
    results = call_module(
        "bahdanau_decoding",
        [("explore", [data, "go .", 0]), ("explore", [data, "go .", n + 5]), ("explore", [data, "hello .", 2])],
    )
    assert [(r["source"], r["step"]) for r in results] == [("go .", 1), ("go .", n), ("i'm home .", min(2, n))]


def test_the_slider_and_the_summary_say_the_step_its_token_and_the_largest_weight(decoded):
    data = bahdanau_decoding_data(decoded)
    n = len(decoded["he's calm ."].out_tokens)
    calls = [("explore", [data, "he's calm .", step]) for step in (1, n)]
    results = call_module("bahdanau_decoding", calls)
    texts = call_module(
        "bahdanau_decoding",
        [(f, [r, data]) for r in results for f in ("valueText", "summary")]
        + [("summary", [results[0], {"sentences": data["sentences"][:1]}])],
    )
    d = decoded["he's calm ."]
    for i, step in enumerate((1, n)):
        row = d.weights[step - 1]
        top = int(row.argmax())
        token = _quote(d.out_tokens[step - 1])
        assert texts[2 * i] == f"step {step} of {n}: emits {token}"
        assert texts[2 * i + 1] == (
            f'"he\'s calm .", step {step} of {n} emits {token}: the largest weight, {float(row[top]):.2f}, is on '
            f"{_quote(d.src_tokens[top])}; so far: {' '.join(d.out_tokens[:step])}"
        )
    assert texts[-1].startswith("step 1 of "), "with one sentence, the summary does not name it"


def test_tokens_are_quoted_as_python_quotes_them():
    tokens = ["suis", "j'ai", "<eos>", "a\\b", "'\"", "."]
    got = call_module("bahdanau_decoding", [("quote", [t]) for t in tokens])
    assert got == [repr(t) for t in tokens]


def test_the_module_is_an_anywidget_module_that_imports_nothing():
    text = live.module_text("bahdanau_decoding")
    assert re.search(r"^export default \{ render \};$", text, re.M), "anywidget's default export"
    assert not re.search(r"^\s*import\b", text, re.M), "it runs from a blob: URL, so it imports nothing"
