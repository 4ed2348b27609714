"""Tests for qkv.widgets.bahdanau_attention (D2L 11.4): one sentence decoded step by step, and the live decoding
explorer that shows it, in Jupyter (an anywidget widget with the sentence and the step as traitlets) and in the book
(the static grid of every step, then the explorer with the model's numbers written in)."""

import json

import matplotlib

matplotlib.use("Agg")

import anywidget  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from qkv.bahdanau import make_bahdanau  # noqa: E402
from qkv.data import MTFraEng  # noqa: E402
from qkv.widgets import _live as live  # noqa: E402
from qkv.widgets.bahdanau_attention import (  # noqa: E402
    Decoding,
    bahdanau_decoding_data,
    decode_sentence,
    decoding_explorer,
)

pytestmark = pytest.mark.usefixtures("close_figures")

MORE = ("go .", "i lost .")


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


def test_decoding_data_hold_each_sentence_exactly(model_and_data):
    model, data = model_and_data
    decodings = {s: decode_sentence(model, data, s) for s in ("i'm home .", *MORE)}
    got = bahdanau_decoding_data(decodings)
    assert [s["source"] for s in got["sentences"]] == ["i'm home .", *MORE]
    for sentence, d in zip(got["sentences"], decodings.values()):
        assert sentence["src_tokens"] == d.src_tokens and "<pad>" not in sentence["src_tokens"]
        assert sentence["out_tokens"] == d.out_tokens
        # the model's float32 values, each as float(x): read back, the same float32 numbers, bit for bit
        assert d.weights.dtype == torch.float32
        assert torch.equal(torch.tensor(sentence["weights"], dtype=torch.float64), d.weights.double())
        assert torch.equal(torch.tensor(sentence["weights"], dtype=torch.float32), d.weights)
    assert json.loads(live._json(got)) == got, "JSON keeps every float exactly"
    assert live._json(got).count(" ") == sum(s.count(" ") for s in ("i'm home .", *MORE)), "compact"


def test_explorer_in_jupyter_is_a_live_widget(model_and_data, jupyter):
    model, data = model_and_data
    panel = decoding_explorer(model, data, "i'm home .", more=MORE)
    assert isinstance(panel, anywidget.AnyWidget)
    assert panel._esm == live.module_text("bahdanau_decoding")
    decodings = {s: decode_sentence(model, data, s) for s in ("i'm home .", *MORE)}
    assert panel.data == bahdanau_decoding_data(decodings)
    assert (panel.sentence, panel.step) == ("i'm home .", 1)
    panel.sentence, panel.step = "go .", 2  # what the menu and the slider set
    assert panel.get_state(["sentence", "step"]) == {"sentence": "go .", "step": 2}


def test_explorer_of_one_sentence_offers_no_other(model_and_data, jupyter):
    model, data = model_and_data
    panel = decoding_explorer(model, data, "go .", more=("go .",))  # a repeat is dropped
    assert [s["source"] for s in panel.data["sentences"]] == ["go ."]
    assert panel.data["sentences"][0]["src_tokens"] == ["go", ".", "<eos>"]


def test_explorer_in_the_book_draws_every_step_then_the_live_explorer(model_and_data, book_build):
    model, data = model_and_data
    explorer = decoding_explorer(model, data, "i lost .", more=MORE)
    assert isinstance(explorer, live.BookExplorer) and explorer.name == "bahdanau_decoding"
    assert explorer.settings == {"sentence": "i lost .", "step": 1}
    assert [s["source"] for s in explorer.data["sentences"]] == ["i lost .", "go ."]
    fig = explorer.figure
    assert isinstance(fig, Figure) and not plt.fignum_exists(fig.number)
    d = decode_sentence(model, data, "i lost .")
    assert len(fig.axes) == len(d.out_tokens), "the static figure: one bar chart per step of the first sentence"
    assert fig.axes[0].get_title().startswith(f"step 1: emits {d.out_tokens[0]!r}")
    assert 'data-qkv-live="bahdanau_decoding"' in explorer.html()


def test_bad_input_raises_clear_errors(model_and_data, jupyter):
    model, data = model_and_data
    with pytest.raises(TypeError, match="one string"):
        decode_sentence(model, data, ["go ."])
    with pytest.raises(TypeError, match="one string"):
        decoding_explorer(model, data, ["go ."])
    with pytest.raises(TypeError, match="more is a tuple of sentences"):
        decoding_explorer(model, data, "i'm home .", more="go .")
    with pytest.raises(TypeError, match="more is a tuple of sentences"):
        decoding_explorer(model, data, "i'm home .", more=("go .", 3))
    with pytest.raises(TypeError, match="more is a tuple of sentences"):
        decoding_explorer(model, data, "i'm home .", more=None)
    with pytest.raises(TypeError, match="one or more sentences"):
        bahdanau_decoding_data({})
    d = decode_sentence(model, data, "go .")
    with pytest.raises(ValueError, match="do not fit"):
        bahdanau_decoding_data({"go .": Decoding(d.src_tokens[:-1], d.out_tokens, d.weights)})
