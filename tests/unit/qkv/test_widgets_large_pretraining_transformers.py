"""Tests for qkv.widgets.large_pretraining_transformers (D2L 11.9): the explorer's next-character distribution is
the model's own, tempered and cut as qkv.lm says, in Jupyter (sliders) and in the book (a grid)."""

import matplotlib

matplotlib.use("Agg")

import ipywidgets  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from qkv.data import Vocab  # noqa: E402
from qkv.lm import next_token_distribution  # noqa: E402
from qkv.pretraining import DecoderOnlyLM, GPTConfig  # noqa: E402
from qkv.widgets import large_pretraining_transformers as widgets  # noqa: E402

pytestmark = pytest.mark.usefixtures("close_figures")


class _Data:
    vocab = Vocab(list("abcdefgh "))

    def encode(self, text):
        return torch.tensor([self.vocab[c] for c in text])


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return DecoderOnlyLM(GPTConfig(vocab_size=len(_Data.vocab), num_hiddens=16, num_heads=2, num_blks=1, max_len=8))


def test_logits_are_the_models_last_position_with_the_context_cropped(model):
    prompt = "abcdefgh ab"  # 11 characters, max_len 8
    got = widgets.next_char_logits(model, _Data(), prompt)
    want = model.eval()(_Data().encode(prompt)[-8:][None])[0, -1]
    assert torch.equal(got, want)
    with pytest.raises(ValueError, match="non-empty"):
        widgets.next_char_logits(model, _Data(), "")


def test_grid_bars_are_the_top_probabilities_of_each_setting(model):
    fig = widgets.sampling_grid(model, _Data(), "abc", temperatures=(0.5, 2.0), top_ks=(None, 3))
    logits = widgets.next_char_logits(model, _Data(), "abc")
    for ax, (k, t) in zip(fig.axes, [(None, 0.5), (None, 2.0), (3, 0.5), (3, 2.0)], strict=True):
        heights = [p.get_height() for p in ax.patches]
        want = next_token_distribution(logits, t, k).sort(descending=True).values[:8]
        assert heights == pytest.approx(want.tolist(), abs=1e-7)


def test_explorer_is_sliders_in_jupyter_and_a_figure_in_the_book(model, monkeypatch):
    panel = widgets.sampling_explorer(model, _Data(), "abc")
    assert isinstance(panel, ipywidgets.interactive)
    names = {w.description for w in panel.children if hasattr(w, "description")}
    assert {"temperature", "top-k"} <= names
    monkeypatch.setenv("QKV_BOOK_BUILD", "1")
    assert isinstance(widgets.sampling_explorer(model, _Data(), "abc"), Figure)
