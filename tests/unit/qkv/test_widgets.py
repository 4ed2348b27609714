"""Tests for qkv.widgets itself, what every section's explorer shares: the book-build flag, the fall-back to a
static figure without anywidget (qkv.widgets._live), and detaching that figure from pyplot."""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import anywidget  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from qkv import widgets  # noqa: E402
from qkv.widgets import _live as live  # noqa: E402
from qkv.widgets.attention_pooling import nadaraya_watson_explorer  # noqa: E402
from qkv.widgets.attention_scoring_functions import softmax_scaling_explorer  # noqa: E402
from qkv.widgets.multihead_attention import kv_cache_explorer  # noqa: E402
from qkv.widgets.self_attention_and_positional_encoding import encoding_explorer  # noqa: E402
from qkv.widgets.vision_transformer import patch_explorer  # noqa: E402

pytestmark = pytest.mark.usefixtures("close_figures")


def _line_data():
    x = torch.linspace(0, 5, 12, dtype=torch.float64)
    return x, 2 * torch.sin(x) + x


def test_the_flag_is_the_one_the_book_build_sets():
    """The book builder takes the flag's name from qkv.widgets (one place for it) and sets it for the pages."""
    from publish import build_book

    builder = Path(build_book.__file__)
    assert build_book.BOOK_BUILD_ENV == widgets.BOOK_BUILD_ENV
    assert 'env[BOOK_BUILD_ENV] = "1"' in builder.read_text(), f"{builder} should set the flag"


@pytest.mark.parametrize("value, static", [("1", True), ("yes", True), (" 1 ", True), ("0", False), (" 0", False)])
def test_static_mode_follows_the_book_build_flag(monkeypatch, value, static):
    monkeypatch.setenv(widgets.BOOK_BUILD_ENV, value)
    assert widgets.static_mode() is static


def test_static_mode_is_off_without_the_flag(jupyter):
    assert not widgets.static_mode()


@pytest.mark.parametrize("value", ["0", ""])
def test_an_unset_or_zero_book_flag_means_widgets(monkeypatch, value):
    monkeypatch.setenv(widgets.BOOK_BUILD_ENV, value)
    assert not widgets.static_mode()
    assert isinstance(softmax_scaling_explorer((1, 4), num_keys=4), anywidget.AnyWidget)
    assert isinstance(kv_cache_explorer(), anywidget.AnyWidget)
    assert isinstance(patch_explorer(), anywidget.AnyWidget)


def test_without_anywidget_the_live_explorers_fall_back_to_figures_with_a_note(jupyter, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "anywidget", None)
    x, y = _line_data()
    assert isinstance(nadaraya_watson_explorer(x, y), Figure)
    assert isinstance(softmax_scaling_explorer((1, 4), num_keys=4), Figure)
    assert isinstance(encoding_explorer(), Figure)
    assert isinstance(kv_cache_explorer(), Figure)
    assert isinstance(patch_explorer(), Figure)
    out = capsys.readouterr().out
    assert out.count(live.NO_ANYWIDGET_NOTE) == 5 and out.count("\n") == 5, "one line per explorer"


def test_the_book_build_needs_no_anywidget_and_prints_nothing(monkeypatch, capsys):
    """The book build runs the modules in the page: a missing anywidget changes nothing and prints no note."""
    monkeypatch.setenv(widgets.BOOK_BUILD_ENV, "1")
    monkeypatch.setitem(sys.modules, "anywidget", None)
    assert isinstance(kv_cache_explorer(), live.BookExplorer)
    assert capsys.readouterr().out == "", "the printed book shows no note about a missing anywidget"


def test_static_figure_detaches_the_figure_from_pyplot():
    fig = plt.figure()
    assert widgets.static_figure(fig) is fig
    assert not plt.fignum_exists(fig.number), "Jupyter then shows the figure once, as the cell's value"
