"""Tests for qkv.widgets.self_attention_and_positional_encoding (D2L 11.6): the pair trajectory of the sinusoidal
table, and the encoding explorer in Jupyter and in the book."""

import math

import matplotlib

matplotlib.use("Agg")

import anywidget  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from qkv.widgets import _live as live  # noqa: E402
from qkv.widgets.self_attention_and_positional_encoding import (  # noqa: E402
    encoding_data,
    encoding_explorer,
    pair_trajectory,
)

pytestmark = pytest.mark.usefixtures("close_figures")


@pytest.mark.parametrize("pair", [0, 3, 15])
def test_pair_trajectory_walks_round_the_unit_circle_by_omega_per_position(pair):
    points = pair_trajectory(50, pair, num_hiddens=32)
    assert points.shape == (51, 2) and points.dtype == torch.float64
    omega = 1 / 10000 ** (2 * pair / 32)
    expected = [[math.cos(t * omega), math.sin(t * omega)] for t in range(51)]
    torch.testing.assert_close(points, torch.tensor(expected, dtype=torch.float64), atol=1e-12, rtol=0)
    torch.testing.assert_close(points.norm(dim=1), torch.ones(51, dtype=torch.float64))


@pytest.mark.parametrize(
    "args,error",
    [((5, 16, 32), ValueError), ((5, 0, 7), ValueError), ((-1, 0, 32), ValueError), ((2.5, 0, 32), TypeError)],
)
def test_pair_trajectory_rejects_bad_arguments(args, error):
    with pytest.raises(error):
        pair_trajectory(*args)


def test_explorer_is_a_live_widget(jupyter):
    panel = encoding_explorer(num_hiddens=16, max_position=40)
    assert isinstance(panel, anywidget.AnyWidget)
    assert panel._esm == live.module_text("positional_encoding")
    assert panel.data == encoding_data(16, 40) == {"num_hiddens": 16, "max_position": 40}
    assert (panel.position, panel.pair, panel.offset) == (10, 0, 5)
    panel.position, panel.pair, panel.offset = 30, 5, -12  # what the sliders set
    assert panel.get_state(["position", "pair", "offset"]) == {"position": 30, "pair": 5, "offset": -12}
    small = encoding_explorer(num_hiddens=4, max_position=3)
    assert (small.position, small.offset) == (2, 2), "the first settings stay inside a short table"


@pytest.mark.parametrize("args, error", [((7, 60), ValueError), ((32, 0), ValueError), ((32.0, 60), TypeError)])
def test_explorer_data_reject_bad_sizes(args, error):
    with pytest.raises(error):
        encoding_data(*args)


def test_explorer_draws_a_static_grid_in_the_book(book_build):
    explorer = encoding_explorer()
    assert isinstance(explorer, live.BookExplorer) and explorer.data == encoding_data(32, 60)
    fig = explorer.figure
    assert isinstance(fig, Figure) and not plt.fignum_exists(fig.number)
    titles = [ax.get_title() for ax in fig.axes[1:]]
    assert [t.split(":")[0] for t in titles] == [
        "position 10, pair 0",
        "position 10, pair 3",
        "position 40, pair 3",
        "position 40, pair 8",
    ]
