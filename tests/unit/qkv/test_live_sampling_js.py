"""11.9's sampling explorer computes in the page what ``qkv`` computes: ``js/sampling.js``'s functions, run in Node on
the data ``sampling_data`` makes from a GPT's logits, equal :func:`qkv.lm.next_token_distribution` on those logits in
float64 within 1e-9 relative (1e-12 absolute), at temperatures from 0.1 to 3 and top-k 1, 3, all, and a k that
splits a tie.

The GPT is the page's recipe (``lm_recipes.train_gpt``) as a smoke run: one batch of training, in a weight cache of
its own. ``tests/book/test_explorer_sampling.py`` reads the drawing back in Chromium.
"""

from __future__ import annotations

import math

import pytest
import torch

from qkv import lm
from qkv.recipes import lm as lm_recipes
from qkv.widgets import large_pretraining_transformers as widgets
from tests.support.js_modules import call_module, node_or_skip

RTOL, ATOL = 1e-9, 1e-12
PROMPTS = ("the time travel", *widgets.MORE_PROMPTS)
TEMPERATURES = (0.1, 0.35, 1.0, 1.7, 3.0)

pytestmark = pytest.mark.usefixtures("_node")


@pytest.fixture
def _node():
    node_or_skip()


@pytest.fixture(scope="module")
def gpt(data_dir, tmp_path_factory):
    """The page's GPT recipe on a small slice of the data, trained for one batch: (model, data)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("QKV_TRAINED_DIR", str(tmp_path_factory.mktemp("trained")))
        mp.setenv("QKV_TRAIN_SMOKE", "1")
        mp.delenv("QKV_NO_TRAIN", raising=False)
        data = lm.CharLMData(num_steps=16, batch_size=4, stride=4096, val_fraction=0.02, data_dir=data_dir)
        fitted, _ = lm_recipes.train_gpt(data, log=lambda s: None)
    return fitted.model, data


@pytest.fixture(scope="module")
def page_data(gpt):
    """What the explorer reads: the logits after the page's prompt and the others."""
    model, data = gpt
    logits = {p: widgets.next_char_logits(model, data, p) for p in PROMPTS}
    return widgets.sampling_data(logits, widgets._labels(data))


def _close(js, reference, what: str):
    got = torch.tensor(js, dtype=torch.float64)
    torch.testing.assert_close(got, reference.to(torch.float64), rtol=RTOL, atol=ATOL, msg=lambda m: f"{what}: {m}")


def test_the_data_are_the_models_float32_logits_exactly(gpt, page_data):
    model, data = gpt
    assert page_data["prompts"] == list(PROMPTS) and page_data["labels"] == widgets._labels(data)
    for prompt, row in zip(PROMPTS, page_data["logits"]):
        logits = widgets.next_char_logits(model, data, prompt)  # (V,) float32
        assert logits.dtype == torch.float32
        assert torch.equal(torch.tensor(row, dtype=torch.float32), logits), prompt
        assert row == [float(x) for x in logits.tolist()], prompt
    [ok] = call_module("sampling", [("checkData", [page_data])])
    assert ok is None


def test_distribution_is_next_token_distribution_at_every_setting(page_data):
    V = len(page_data["labels"])
    settings = [(p, t, k) for p in range(len(PROMPTS)) for t in TEMPERATURES for k in (1, 3, V, None)]
    calls = [("explore", [page_data, PROMPTS[p], t, V if k is None else k]) for p, t, k in settings]
    results = call_module("sampling", calls)
    for (p, t, k), result in zip(settings, results):
        what = f"after {PROMPTS[p]!r}, temperature {t}, top-k {k}"
        logits = torch.tensor(page_data["logits"][p], dtype=torch.float64)  # (V,)
        want = lm.next_token_distribution(logits, t, k)  # (V,)
        _close(result["probs"], want, what)
        _close(result["uncut"], lm.next_token_distribution(logits, t), f"{what}: without the cut")
        assert result["index"] == p and result["prompt"] == PROMPTS[p], what
        assert result["topK"] == (None if k in (None, V) else k), what
        assert result["kept"] == int((want > 0).sum()), what
        assert result["top"]["index"] == int(want.argmax()) and result["top"]["p"] == pytest.approx(
            float(want.max()), rel=RTOL
        ), what
        bits = float(-torch.special.xlogy(want, want).sum() / math.log(2))
        assert result["entropy"] == pytest.approx(bits, rel=RTOL, abs=ATOL), what
        assert result["above1"] == int((want > 0.01).sum()), what
        shown = torch.sort(logits, descending=True, stable=True).indices[: widgets.SHOWN].tolist()
        assert result["shown"] == shown, f"{what}: the 12 likeliest, from the largest logit"


def test_a_tie_at_the_cut_is_kept_as_qkv_keeps_it():
    """Top-k of 2 splits the three logits tied at 1.0: qkv keeps all three (and the 2.0), so does the page."""
    logits = [0.5, 1.0, 2.0, 1.0, -1.0, 1.0, 0.25, -3.0]
    labels = list("abcdefgh")
    data = widgets.sampling_data({"ab": torch.tensor(logits)}, labels)
    reference = torch.tensor(logits, dtype=torch.float64)
    settings = [(t, k) for t in (0.1, 0.5, 1.0, 3.0) for k in (1, 2, 3, 4, 5, 8)]
    results = call_module("sampling", [("explore", [data, "ab", t, k]) for t, k in settings])
    for (t, k), result in zip(settings, results):
        want = lm.next_token_distribution(reference, t, k)
        _close(result["probs"], want, f"temperature {t}, top-k {k}")
        assert result["kept"] == {1: 1, 2: 4, 3: 4, 4: 4, 5: 5, 8: 8}[k]
    [result] = call_module("sampling", [("explore", [data, "ab", 1.0, 2])])
    [text] = call_module("sampling", [("summary", [result, data])])
    assert "top-k 2 (4 kept: a tie at the cut): 'c' has probability" in text, text


def test_the_settings_make_a_difference_that_the_comparison_sees(page_data):
    """Temperature and top-k move the probabilities far beyond the tolerance: the comparisons above can fail."""
    V = len(page_data["labels"])
    cold, hot, cut = call_module(
        "sampling",
        [("explore", [page_data, PROMPTS[0], 0.1, V]), ("explore", [page_data, PROMPTS[0], 3.0, V]),
         ("explore", [page_data, PROMPTS[0], 3.0, 3])],
    )  # fmt: skip
    assert max(abs(a - b) for a, b in zip(cold["probs"], hot["probs"])) > 0.05
    assert max(abs(a - b) for a, b in zip(hot["probs"], cut["probs"])) > 0.05
    assert sum(p > 0 for p in cut["probs"]) == 3 and cold["entropy"] < hot["entropy"] - 0.5


def test_summary_says_the_key_numbers(page_data):
    V = len(page_data["labels"])
    calls = [("explore", [page_data, PROMPTS[1], 0.5, V]), ("explore", [page_data, PROMPTS[1], 0.5, 3])]
    results = call_module("sampling", calls)
    texts = call_module("sampling", [("summary", [r, page_data]) for r in results])
    logits = torch.tensor(page_data["logits"][1], dtype=torch.float64)
    for k, text in zip((None, 3), texts):
        probs = lm.next_token_distribution(logits, 0.5, k)
        top = page_data["labels"][int(probs.argmax())]
        said = "the space" if top == "␣" else f"'{top}'"
        n = int((probs > 0.01).sum())
        bits = abs(float(torch.special.xlogy(probs, probs).sum() / math.log(2)))  # -0.0 would print "-0.00"
        assert text.startswith(
            f"after '{PROMPTS[1]}', temperature 0.50, top-k {k or 'all'}: {said} has probability "
            f"{float(probs.max()):.2f}; {n} character{'s' * (n != 1)} above 1%; entropy {bits:.2f} bits, "
            f"like a fair choice among {2**bits:.1f} characters."
        ), text


def test_a_space_is_said_as_such_and_an_unknown_prompt_falls_back_to_the_first(page_data):
    assert call_module("sampling", [("spoken", ["␣"]), ("spoken", ["l"])]) == ["the space", "'l'"]
    [result] = call_module("sampling", [("explore", [page_data, "no such prompt", 1.0, 5])])
    assert result["index"] == 0 and result["prompt"] == PROMPTS[0]


def test_damaged_data_and_a_bad_temperature_are_refused(page_data):
    damaged = {**page_data, "logits": [row[:] for row in page_data["logits"]]}
    damaged["logits"][2][5] += 1e-6
    with pytest.raises(AssertionError, match="the logits of prompt 2 are damaged"):
        call_module("sampling", [("checkData", [damaged])])
    short = {**page_data, "logits": [row[:-1] for row in page_data["logits"]]}
    with pytest.raises(AssertionError, match="has 27 logits, not 28"):
        call_module("sampling", [("checkData", [short])])
    with pytest.raises(AssertionError, match="temperature must be > 0"):
        call_module("sampling", [("distribution", [page_data["logits"][0], 0, None])])
