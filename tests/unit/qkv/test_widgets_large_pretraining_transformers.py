"""Tests for qkv.widgets.large_pretraining_transformers (D2L 11.9): the explorer's next-character distribution is
the model's own, tempered and cut as qkv.lm says, in Jupyter (a live widget) and in the book (the static grid, then
the live explorer). ``test_live_sampling_js.py`` checks the page's arithmetic on the data made here."""

import sys

import matplotlib

matplotlib.use("Agg")

import anywidget  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from qkv.data import Vocab  # noqa: E402
from qkv.lm import next_token_distribution  # noqa: E402
from qkv.pretraining import DecoderOnlyLM, GPTConfig  # noqa: E402
from qkv.widgets import _live as live  # noqa: E402
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


def _page_data(model, prompts=("abc", *widgets.MORE_PROMPTS)):
    logits = {p: widgets.next_char_logits(model, _Data(), p) for p in prompts}
    return widgets.sampling_data(logits, widgets._labels(_Data()))


def test_explorer_data_are_the_logits_written_exactly(model):
    prompts = ("abc", "h a")
    data = _page_data(model, prompts)
    logits = [widgets.next_char_logits(model, _Data(), p) for p in prompts]  # (V,) float32 each
    assert data["prompts"] == list(prompts)
    assert data["labels"] == [{" ": "␣"}.get(t, t) for t in _Data.vocab.idx_to_token] and "␣" in data["labels"]
    assert data["logits"] == [[float(x) for x in row.tolist()] for row in logits]
    assert all(torch.equal(torch.tensor(row, dtype=torch.float32), want) for row, want in zip(data["logits"], logits))
    total = 0.0
    for x in data["logits"][1]:
        total += x  # left to right, as the page checks it
    assert data["sums"][1] == total
    assert data["temperatures"] == list(widgets.TEMPERATURE_STOPS) and data["shown"] == widgets.SHOWN == 12
    stops = data["temperatures"]
    assert (stops[0], stops[-1], len(stops)) == (0.1, 3.0, 39) and {0.5, 1.0, 2.0} <= set(stops)
    assert stops == sorted(stops) and stops.index(1.0) == 18, "0.1 to 1 takes about half the track"


def test_explorer_data_give_the_static_figures_bars(model):
    """The page computes from these logits what the static grid draws for the same settings."""
    data = _page_data(model)
    fig = widgets.sampling_grid(model, _Data(), "abc", temperatures=(0.5, 2.0), top_ks=(None, 3))
    logits = torch.tensor(data["logits"][0], dtype=torch.float64)
    for ax, (k, t) in zip(fig.axes, [(None, 0.5), (None, 2.0), (3, 0.5), (3, 2.0)], strict=True):
        want = next_token_distribution(logits, t, k).sort(descending=True).values[:8]
        assert [p.get_height() for p in ax.patches] == pytest.approx(want.tolist(), abs=1e-6)


def test_sampling_explorer_is_a_live_widget(model, jupyter):
    panel = widgets.sampling_explorer(model, _Data(), "abc")
    assert isinstance(panel, anywidget.AnyWidget)
    assert panel._esm == live.module_text("sampling")
    assert panel.data == _page_data(model)
    assert (panel.prompt, panel.temperature, panel.top_k) == ("abc", 1.0, 10)
    panel.prompt, panel.temperature, panel.top_k = "it was th", 0.35, 3  # what the menu and the sliders set
    assert panel.get_state(["prompt", "temperature", "top_k"]) == {
        "prompt": "it was th",
        "temperature": 0.35,
        "top_k": 3,
    }
    again = widgets.sampling_explorer(model, _Data(), "h a", more=("abc", "h a"))
    assert again.data["prompts"] == ["h a", "abc"], "the page's prompt first, each once"


def test_sampling_explorer_draws_the_static_grid_in_the_book(model, book_build):
    explorer = widgets.sampling_explorer(model, _Data(), "abc")
    assert isinstance(explorer, live.BookExplorer) and explorer.name == "sampling"
    assert explorer.settings == {"prompt": "abc", "temperature": 1.0, "top_k": 10}
    assert explorer.data == _page_data(model)
    fig = explorer.figure
    assert isinstance(fig, Figure) and not plt.fignum_exists(fig.number)
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == [f"temperature {t}, top-k {k}" for k in ("all", 3) for t in (0.5, 1.0, 2.0)]
    assert fig._suptitle.get_text() == "next character after 'abc'"
    assert 'data-qkv-live="sampling"' in explorer.html()


def test_without_anywidget_the_explorer_is_the_static_grid(model, jupyter, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "anywidget", None)  # `import anywidget` raises ImportError
    shown = widgets.sampling_explorer(model, _Data(), "abc")
    assert isinstance(shown, Figure) and len(shown.axes) == 6 and not plt.fignum_exists(shown.number)
    assert capsys.readouterr().out == live.NO_ANYWIDGET_NOTE + "\n"


def test_bad_prompts_and_logits_are_clear_errors(model, jupyter):
    with pytest.raises(ValueError, match="prompt must be a non-empty string, got ''"):
        widgets.sampling_explorer(model, _Data(), "")
    with pytest.raises(ValueError, match="prompt must be a non-empty string, got ''"):
        widgets.sampling_explorer(model, _Data(), "abc", more=("ab", ""))
    with pytest.raises(TypeError, match="more is a sequence of prompts, got the string 'ab'"):
        widgets.sampling_explorer(model, _Data(), "abc", more="ab")
    with pytest.raises(ValueError, match=r"the logits after 'ab' have shape \(3,\), not \(10,\)"):
        widgets.sampling_data({"ab": torch.zeros(3)}, widgets._labels(_Data()))
    with pytest.raises(ValueError, match="at least one prompt"):
        widgets.sampling_data({}, widgets._labels(_Data()))
    with pytest.raises(ValueError, match="finite"):
        live.explorer(
            "sampling",
            data=lambda: widgets.sampling_data({"ab": torch.full((2,), float("nan"))}, "xy"),
            settings={},
            static=lambda: None,
            label="",
        )
