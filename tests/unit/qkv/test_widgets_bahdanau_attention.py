"""Tests for qkv.widgets.bahdanau_attention (D2L 11.4): one sentence decoded step by step, as the explorer shows it,
in Jupyter (a slider over the steps) and in the book (every step side by side)."""

import matplotlib

matplotlib.use("Agg")

import ipywidgets  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from qkv.bahdanau import make_bahdanau  # noqa: E402
from qkv.data import MTFraEng  # noqa: E402
from qkv.widgets.bahdanau_attention import decode_sentence, decoding_explorer  # noqa: E402

pytestmark = pytest.mark.usefixtures("close_figures")


@pytest.fixture(scope="module")
def model_and_data(data_dir):
    data = MTFraEng(128, data_dir=data_dir)
    torch.manual_seed(3)
    model = make_bahdanau(len(data.src_vocab), len(data.tgt_vocab), 8, 8, 2, 0.0, tgt_pad=data.tgt_vocab["<pad>"])
    return model, data


def test_decode_sentence_keeps_the_valid_source_and_every_steps_weights(model_and_data):
    model, data = model_and_data
    d = decode_sentence(model, data, "i'm home .")
    assert d.src_tokens == ["i'm", "home", ".", "<eos>"]
    assert d.weights.shape == (len(d.out_tokens), 4)
    # the valid tokens hold all the weight (padding gets none), so every row sums to 1
    assert torch.allclose(d.weights.sum(dim=1), torch.ones(len(d.out_tokens)), atol=1e-6)
    # the same as the model's own greedy decoding
    batch = data.build(["i'm home ."], ["."])
    tokens, steps = model.predict_step(batch, "cpu", data.num_steps, save_attention_weights=True)
    n = len(d.out_tokens)
    assert torch.equal(d.weights, torch.cat([s[0] for s in steps[:n]], dim=1)[0, :, :4])
    emitted = data.tgt_vocab.to_tokens(tokens[0, :n].tolist())
    assert d.out_tokens == emitted


def test_explorer_in_jupyter_has_a_slider_over_the_steps(model_and_data, jupyter):
    model, data = model_and_data
    panel = decoding_explorer(model, data, "go .")
    assert isinstance(panel, ipywidgets.interactive)
    (slider,) = [w for w in panel.children if isinstance(w, ipywidgets.IntSlider)]
    n = len(decode_sentence(model, data, "go .").out_tokens)
    assert (slider.min, slider.max) == (1, n)
    slider.value = n
    ax = panel.result.axes[0]
    assert ax.get_title().startswith(f"step {n}: emits")
    assert [t.get_text() for t in ax.get_xticklabels()] == ["go", ".", "<eos>"]


def test_explorer_in_the_book_draws_every_step(model_and_data, book_build):
    model, data = model_and_data
    fig = decoding_explorer(model, data, "i lost .")
    assert isinstance(fig, Figure)
    assert len(fig.axes) == len(decode_sentence(model, data, "i lost .").out_tokens)


def test_decode_sentence_wants_one_string(model_and_data):
    model, data = model_and_data
    with pytest.raises(TypeError, match="one string"):
        decode_sentence(model, data, ["go ."])
