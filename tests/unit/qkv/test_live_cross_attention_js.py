"""11.7's encoder-decoder attention explorer computes in the page what ``qkv`` computes: ``js/cross_attention.js``,
run in Node on the data that ``qkv.widgets.transformer.cross_attention_data`` makes, shows exactly the weights of
:func:`qkv.widgets.transformer.cross_attention` (the data round-trip exactly, float32 values written as Python
floats), finds each row's largest weight where torch does, and says the key numbers in its aria-live line.

The model is a small untrained Transformer with D2L's layout (2 blocks, 4 heads): its greedy translations run to the
data's ``num_steps`` tokens, so each heatmap has many rows; what is compared is the arithmetic, not the translation.
"""

from __future__ import annotations

import copy
import json

import pytest
import torch

from qkv.data import MTFraEng
from qkv.transformer import TransformerConfig
from qkv.widgets import _live as live
from qkv.widgets.transformer import cross_attention, cross_attention_data
from tests.support.js_modules import call_module, node_or_skip

RTOL, ATOL = 1e-9, 1e-12
BLOCKS, HEADS = 2, 4
SENTENCES = ("i lost .", "i'm home .", "he's calm .", "go .")

pytestmark = pytest.mark.usefixtures("_node")


@pytest.fixture
def _node():
    node_or_skip()


@pytest.fixture(scope="module")
def explorer(data_dir):
    """The data module, each sentence's cross_attention, and the explorer's data made from them."""
    data = MTFraEng(128, data_dir=data_dir)
    torch.manual_seed(0)
    config = TransformerConfig(num_hiddens=32, ffn_num_hiddens=16, num_heads=HEADS, num_blks=BLOCKS, dropout=0.0)
    model = config.build(len(data.src_vocab), len(data.tgt_vocab), tgt_pad=data.tgt_vocab["<pad>"]).eval()
    attentions = {s: cross_attention(model, data, s) for s in SENTENCES}
    return data, attentions, cross_attention_data(data, attentions)


def _close(js, reference, what: str):
    got = torch.tensor(js, dtype=torch.float64)
    torch.testing.assert_close(got, reference.to(torch.float64), rtol=RTOL, atol=ATOL, msg=lambda m: f"{what}: {m}")


def test_the_data_round_trip_exactly(explorer):
    """The weights reach the page as the float32 values qkv computed, bit for bit, through the JSON the book embeds
    and the one Node reads; the page's own check of the data (shapes, values, checksums) passes."""
    _, attentions, data = explorer
    assert json.loads(live._json(data)) == data  # the book's state, parsed as the page parses it
    matrices = call_module(
        "cross_attention",
        [("explore", [data, s, b, h, 1]) for s in SENTENCES for b in range(1, BLOCKS + 1) for h in range(1, HEADS + 1)],
    )
    it = iter(matrices)
    for s, attn in attentions.items():
        for b in range(BLOCKS):
            for h in range(HEADS):
                result = next(it)
                expected = attn.weights[b, h]  # (emitted, source), float32
                assert result["matrix"] == expected.tolist(), f"{s!r}, block {b + 1}, head {h + 1}"
                back = torch.tensor(result["matrix"], dtype=torch.float32)
                assert torch.equal(back, expected) and torch.equal(back.double(), expected.double())
                assert (result["src"], result["out"]) == (attn.src_tokens, attn.out_tokens)
    [problems] = call_module("cross_attention", [("validate", [data])])
    assert problems == []


@pytest.mark.parametrize("sentence", SENTENCES)
def test_each_rows_largest_weight_and_the_picked_row_are_qkvs(explorer, sentence):
    _, attentions, data = explorer
    attn = attentions[sentence]
    n = len(attn.out_tokens)
    settings = [(b, h, s) for b in (1, BLOCKS) for h in (1, 3, HEADS) for s in sorted({1, 2, n})]
    results = call_module("cross_attention", [("explore", [data, sentence, b, h, s]) for b, h, s in settings])
    for (b, h, s), result in zip(settings, results):
        what = f"{sentence!r}, block {b}, head {h}, token {s}"
        weights = attn.weights[b - 1, h - 1].double()  # (emitted, source)
        assert (result["block"], result["head"], result["step"]) == (b, h, s), what
        assert result["tops"] == weights.argmax(-1).tolist(), f"{what}: each row's largest weight"
        _close(result["row"], weights[s - 1], f"{what}: the picked row")
        top = int(weights[s - 1].argmax())
        assert result["top"] == {"source": top, "token": attn.src_tokens[top], "weight": float(weights[s - 1, top])}
        assert result["token"] == attn.out_tokens[s - 1], what
        second = int(weights[s - 1].topk(2).indices[1])
        assert result["second"]["source"] == second, what
        assert result["second"]["weight"] == pytest.approx(float(weights[s - 1, second]), rel=RTOL), what


def test_settings_out_of_range_are_clamped_and_an_unknown_sentence_keeps_the_one_shown(explorer):
    """A step past the last token shows the last (another sentence may be shorter); a sentence the data lack (one
    being translated in JupyterLab) keeps the sentence drawn."""
    _, attentions, data = explorer
    n = len(attentions["go ."].out_tokens)
    calls = [
        ("explore", [data, "go .", 9, 0, 99]),
        ("explore", [data, "not yet translated .", 1, 1, 1, 2]),
    ]
    clamped, pending = call_module("cross_attention", calls)
    assert (clamped["block"], clamped["head"], clamped["step"]) == (BLOCKS, 1, n)
    assert (pending["found"], pending["index"], pending["sentence"]) == (False, 2, SENTENCES[2])


def test_the_settings_make_a_difference_that_the_comparison_sees(explorer):
    """Two heads, or two blocks, of one sentence weigh the source differently, far beyond the tolerance: the
    comparisons above can fail."""
    _, _, data = explorer
    calls = [("explore", [data, "i lost .", b, h, 1]) for b, h in ((1, 1), (1, 2), (2, 1))]
    first, other_head, other_block = call_module("cross_attention", calls)
    for other in (other_head, other_block):
        gap = max(abs(a - b) for r, q in zip(first["matrix"], other["matrix"]) for a, b in zip(r, q))
        assert gap > 0.05, gap


def test_the_summary_says_where_the_picked_token_looked(explorer):
    _, attentions, data = explorer
    attn = attentions["i lost ."]
    [result] = call_module("cross_attention", [("explore", [data, "i lost .", 2, 1, 2])])
    text, description = call_module("cross_attention", [("summary", [result]), ("description", [result])])
    row = attn.weights[1, 0, 1].double()  # block 2, head 1, the second emitted token
    first, second = row.topk(2).indices.tolist()
    n = len(attn.out_tokens)
    assert text == (
        f'block 2, head 1: "{attn.out_tokens[1]}" (French token 2 of {n}) puts {float(row[first]):.2f} of its weight '
        f'on "{attn.src_tokens[first]}", then {float(row[second]):.2f} on "{attn.src_tokens[second]}".'
    )
    tops = attn.weights[1, 0].argmax(-1).tolist()
    for i, token in enumerate(attn.out_tokens):
        assert f'"{token}" on "{attn.src_tokens[tops[i]]}" {float(attn.weights[1, 0, i, tops[i]]):.2f}' in description


def test_a_repeated_source_token_is_named_by_its_place():
    data = {
        "blocks": 1,
        "heads": 1,
        "num_steps": 9,
        "sentences": [
            {"sentence": "! ! .", "src": ["!", "!", ".", "<eos>"], "out": ["<eos>"],
             "weights": [[[[0.125, 0.5, 0.25, 0.125]]]], "checksum": 1.0, "unknown": [], "cut": False},
        ],
    }  # fmt: skip
    [result] = call_module("cross_attention", [("explore", [data, "! ! .", 1, 1, 1])])
    [text] = call_module("cross_attention", [("summary", [result])])
    assert text == 'block 1, head 1: "<eos>" (French token 1 of 1) puts 0.50 of its weight on "!" (source token 2), ' \
        'then 0.25 on ".".'  # fmt: skip


def test_the_page_refuses_data_that_fail_their_check(explorer):
    """A weight changed by a millionth fails its sentence's checksum; a missing row fails the shape."""
    _, _, data = explorer
    nudged = copy.deepcopy(data)
    nudged["sentences"][1]["weights"][1][2][0][0] += 1e-6
    short = copy.deepcopy(data)
    short["sentences"][0]["weights"][0][0].pop()
    results = call_module("cross_attention", [("validate", [nudged]), ("validate", [short]), ("validate", [{}])])
    assert len(results[0]) == 1 and "checksum" in results[0][0] and "i'm home ." in results[0][0], results[0]
    assert len(results[1]) == 1 and "are not (2 blocks, 4 heads" in results[1][0], results[1]
    assert results[2] == ["there are no sentences"]
