"""Tests for qkv.widgets.self_attention_and_positional_encoding (D2L 11.6): the pair trajectory of the sinusoidal
table, and the encoding explorer in Jupyter and in the book."""

import math

import matplotlib

matplotlib.use("Agg")

import ipywidgets  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from qkv.widgets.self_attention_and_positional_encoding import encoding_explorer, pair_trajectory  # noqa: E402

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


def test_explorer_is_an_interactive_widget_that_redraws(jupyter):
    panel = encoding_explorer(num_hiddens=16, max_position=40)
    assert isinstance(panel, ipywidgets.interactive)
    position, pair = panel.children[0], panel.children[1]
    assert (position.max, pair.max) == (39, 7)
    for i, j in [(12, 0), (30, 5)]:
        position.value, pair.value = i, j
        circle = panel.result.axes[0]
        dots = circle.get_lines()[1]  # the positions 0 .. i
        torch.testing.assert_close(torch.tensor(dots.get_xdata(), dtype=torch.float64), pair_trajectory(i, j, 16)[:, 0])
        assert f"position {i}, pair {j}" in circle.get_title()


def test_explorer_draws_a_static_grid_in_the_book(book_build):
    fig = encoding_explorer()
    assert isinstance(fig, Figure) and not plt.fignum_exists(fig.number)
    titles = [ax.get_title() for ax in fig.axes[1:]]
    assert [t.split(":")[0] for t in titles] == [
        "position 10, pair 0",
        "position 10, pair 3",
        "position 40, pair 3",
        "position 40, pair 8",
    ]
