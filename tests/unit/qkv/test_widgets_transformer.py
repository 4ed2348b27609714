"""Tests for qkv.widgets.transformer (D2L 11.7): the trained Transformer's cross-attention of a typed sentence, as the
explorer shows it, in Jupyter (a text box, a block and a head slider) and in the book (every block and head)."""

import matplotlib

matplotlib.use("Agg")

import ipywidgets  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from qkv.data import MTFraEng  # noqa: E402
from qkv.transformer import TransformerConfig  # noqa: E402
from qkv.translate import translate  # noqa: E402
from qkv.widgets.transformer import cross_attention, cross_attention_explorer  # noqa: E402

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


def test_explorer_in_jupyter_has_a_text_box_and_block_and_head_sliders(model_and_data, jupyter):
    model, data = model_and_data
    panel = cross_attention_explorer(model, data, "go .")
    assert isinstance(panel, ipywidgets.interactive)
    sliders = {w.description: w for w in panel.children if isinstance(w, ipywidgets.IntSlider)}
    assert (sliders["block"].max, sliders["head"].max) == (BLOCKS, HEADS)
    (text,) = [w for w in panel.children if isinstance(w, ipywidgets.Text)]
    text.value = "i lost ."
    sliders["head"].value = 2
    ax = panel.result.axes[0]
    assert ax.get_title() == f"block {BLOCKS}, head 2"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["i", "lost", ".", "<eos>"]
    shown = ax.images[0].get_array()
    expected = cross_attention(model, data, "i lost .").weights[BLOCKS - 1, 1]
    assert torch.allclose(torch.as_tensor(shown.data).float(), expected)


def test_explorer_in_the_book_draws_every_block_and_head(model_and_data, book_build):
    model, data = model_and_data
    fig = cross_attention_explorer(model, data, "i lost .")
    assert isinstance(fig, Figure)
    assert len(fig.axes) == BLOCKS * HEADS
    assert {ax.get_title() for ax in fig.axes} == {f"block {i}, head {h}" for i in (1, 2) for h in (1, 2, 3)}


@pytest.mark.parametrize(("sentence", "error"), [(["go ."], TypeError), ("   ", ValueError)])
def test_cross_attention_says_what_sentence_it_wants(model_and_data, sentence, error):
    model, data = model_and_data
    with pytest.raises(error, match="sentence"):
        cross_attention(model, data, sentence)
