"""Tests for qkv.widgets.transformer (D2L 11.7): the trained Transformer's cross-attention of a sentence, the data of
the live explorer that shows it, and the explorer in Jupyter (an anywidget widget that translates typed sentences)
and in the book (the static grid of every block and head, then the live explorer)."""

import math

import matplotlib

matplotlib.use("Agg")

import anywidget  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from qkv.data import MTFraEng  # noqa: E402
from qkv.transformer import TransformerConfig  # noqa: E402
from qkv.translate import translate  # noqa: E402
from qkv.widgets import _live as live  # noqa: E402
from qkv.widgets.transformer import (  # noqa: E402
    cross_attention,
    cross_attention_data,
    cross_attention_explorer,
)

pytestmark = pytest.mark.usefixtures("close_figures")
BLOCKS, HEADS = 2, 3


@pytest.fixture(scope="module")
def model_and_data(data_dir):
    data = MTFraEng(128, data_dir=data_dir)
    torch.manual_seed(0)
    config = TransformerConfig(num_hiddens=12, ffn_num_hiddens=8, num_heads=HEADS, num_blks=BLOCKS, dropout=0.0)
    model = config.build(len(data.src_vocab), len(data.tgt_vocab), tgt_pad=data.tgt_vocab["<pad>"])
    return model.eval(), data


def test_cross_attention_is_the_decoders_own_over_the_valid_source(model_and_data):
    """Each row is the weights one emitted token gave the valid source tokens: they sum to 1 (the padding gets
    nothing), and they are the decoder's own, read back step by step from the greedy translation."""
    model, data = model_and_data
    attn = cross_attention(model, data, "i'm home .")
    assert attn.src_tokens == ["i'm", "home", ".", "<eos>"]
    n = len(attn.out_tokens)
    assert attn.weights.shape == (BLOCKS, HEADS, n, 4)
    torch.testing.assert_close(attn.weights.sum(-1), torch.ones(BLOCKS, HEADS, n))
    ((translation, steps),) = translate(model, data, ["i'm home ."])
    assert attn.out_tokens[: len(translation.split())] == translation.split()
    for t, (_, cross) in enumerate(steps):  # cross: per block, (H, 1, T_src)
        for i in range(BLOCKS):
            torch.testing.assert_close(attn.weights[i, :, t], cross[i].reshape(HEADS, -1)[:, :4])


def test_cross_attention_decodes_the_sentence_once(model_and_data, monkeypatch):
    """The translation and its weights come from one greedy decoding (the explorer decodes each new sentence once)."""
    import qkv.translate

    calls = []
    real = qkv.translate.translate

    def counting(*args, **kwargs):
        calls.append(args[2])
        return real(*args, **kwargs)

    monkeypatch.setattr(qkv.translate, "translate", counting)
    cross_attention(*model_and_data, "i lost .")
    assert calls == [["i lost ."]]


def test_explorer_data_are_each_sentences_weights_exactly(model_and_data):
    model, data = model_and_data
    attentions = {s: cross_attention(model, data, s) for s in ("i lost .", "xyzzy home .")}
    shown = cross_attention_data(data, attentions)
    assert (shown["blocks"], shown["heads"], shown["num_steps"]) == (BLOCKS, HEADS, data.num_steps)
    assert [e["sentence"] for e in shown["sentences"]] == ["i lost .", "xyzzy home ."]
    for entry, attn in zip(shown["sentences"], attentions.values()):
        assert (entry["src"], entry["out"]) == (attn.src_tokens, attn.out_tokens)
        assert entry["weights"] == [[[[float(x) for x in row] for row in h] for h in b] for b in attn.weights]
        assert entry["checksum"] == math.fsum(attn.weights.flatten().tolist())
    assert [e["unknown"] for e in shown["sentences"]] == [[], ["xyzzy"]]
    assert not any(e["cut"] for e in shown["sentences"])
    long = cross_attention_data(data, {"a b c d e f g h i .": cross_attention(model, data, "a b c d e f g h i .")})
    assert long["sentences"][0]["cut"] and len(long["sentences"][0]["src"]) == data.num_steps
    with pytest.raises(ValueError, match="at least one sentence"):
        cross_attention_data(data, {})


def test_explorer_in_jupyter_is_a_live_widget_that_translates_typed_sentences(model_and_data, jupyter):
    model, data = model_and_data
    panel = cross_attention_explorer(model, data, "go .", more=("i'm home .",))
    assert isinstance(panel, anywidget.AnyWidget)
    assert panel._esm == live.module_text("cross_attention")
    attentions = {s: cross_attention(model, data, s) for s in ("go .", "i'm home .")}
    assert panel.data == cross_attention_data(data, attentions)
    assert panel.get_state(["sentence", "block", "head", "step", "typing"]) == {
        "sentence": "go .", "block": BLOCKS, "head": 1, "step": 1, "typing": True,
    }  # fmt: skip
    panel.sentence = "i lost ."  # what the text box sets
    assert [e["sentence"] for e in panel.data["sentences"]] == ["go .", "i'm home .", "i lost ."]
    added = panel.data["sentences"][-1]
    assert added == cross_attention_data(data, {"i lost .": cross_attention(model, data, "i lost .")})["sentences"][0]
    assert panel.sentence == "i lost ."  # the module selects it
    panel.sentence = "go ."  # the menu: nothing to translate
    assert len(panel.data["sentences"]) == 3
    panel.sentence = "  i   lost . "  # the same words: the sentence already there
    assert panel.sentence == "i lost ." and len(panel.data["sentences"]) == 3
    panel.block, panel.head, panel.step = 1, HEADS, 2  # the sliders
    assert panel.get_state(["block", "head", "step"]) == {"block": 1, "head": HEADS, "step": 2}


def test_an_empty_sentence_gives_a_message_for_the_page_not_a_traceback(model_and_data, jupyter):
    model, data = model_and_data
    panel = cross_attention_explorer(model, data, "go .")
    before = panel.data["sentences"]
    panel.sentence = "   "
    assert panel.sentence == "go ." and panel.data["sentences"] == before
    error = panel.data["error"]
    assert error["sentence"] == "   " and error["count"] == 1
    assert error["message"].startswith("could not translate '   ': sentence is empty")
    panel.sentence = ""
    assert panel.data["error"]["count"] == 2, "each failure is a new dict, so that the page hears of it"
    panel.sentence = "i lost ."
    assert "error" not in panel.data and panel.data["sentences"][-1]["sentence"] == "i lost ."


def test_explorer_in_the_book_draws_every_block_and_head(model_and_data, book_build):
    model, data = model_and_data
    explorer = cross_attention_explorer(model, data, "i lost .", more=("go .", "i'm home ."))
    assert isinstance(explorer, live.BookExplorer)
    assert explorer.settings == {"sentence": "i lost .", "block": BLOCKS, "head": 1, "step": 1}  # no text box
    assert [e["sentence"] for e in explorer.data["sentences"]] == ["i lost .", "go .", "i'm home ."]
    fig = explorer.figure
    assert isinstance(fig, Figure)
    assert len(fig.axes) == BLOCKS * HEADS
    assert {ax.get_title() for ax in fig.axes} == {f"block {i}, head {h}" for i in (1, 2) for h in (1, 2, 3)}
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["i", "lost", ".", "<eos>"]


def test_explorer_says_what_more_must_be(model_and_data, book_build):
    model, data = model_and_data
    with pytest.raises(TypeError, match="more is a tuple of sentences"):
        cross_attention_explorer(model, data, "i lost .", more="go .")
    with pytest.raises(ValueError, match="sentence is empty"):
        cross_attention_explorer(model, data, "i lost .", more=("  ",))


@pytest.mark.parametrize(("sentence", "error"), [(["go ."], TypeError), ("   ", ValueError)])
def test_cross_attention_says_what_sentence_it_wants(model_and_data, sentence, error):
    model, data = model_and_data
    with pytest.raises(error, match="sentence"):
        cross_attention(model, data, sentence)
