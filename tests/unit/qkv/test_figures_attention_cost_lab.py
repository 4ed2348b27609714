"""Tests for qkv.figures.attention_cost_lab: the lab's glance figure (D2L 11.6.2) draws the n x n table, the RNN's
chain of tokens, and cost lines of slope 2 and 1 on log-log axes."""

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from qkv.figures import attention_cost_lab as figures  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_the_glance_figure_has_the_picture_and_the_slopes():
    left, right = figures.glance().axes
    assert sum(isinstance(p, Rectangle) for p in left.patches) == 6 * 6 + 6, "a 6 x 6 table and 6 RNN tokens"
    assert right.get_xscale() == right.get_yscale() == "log"
    assert [t.get_text() for t in right.get_legend().get_texts()] == ["slope 2: attention", "slope 1: RNN, CNN"]
    for line, slope in zip(right.get_lines(), (2, 1)):
        (x0, x1), (y0, y1) = line.get_xdata()[[0, -1]], line.get_ydata()[[0, -1]]
        assert math.log(y1 / y0) / math.log(x1 / x0) == pytest.approx(slope)
