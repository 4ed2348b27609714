"""Tests for qkv.figures.attention_pooling: the glance figure of D2L 11.2 draws the kernel and the weights it gives."""

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from qkv.figures import attention_pooling as figures  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_glance_bars_are_the_normalised_gaussian_kernel_of_the_distance_to_the_query():
    x_train, x_query, sigma = (0.5, 1.5, 2.0, 4.0), 1.8, 0.5
    top, bottom = figures.glance(x_train, x_query, sigma).axes
    raw = [math.exp(-(((x - x_query) / sigma) ** 2) / 2) for x in x_train]
    heights = [bar.get_height() for bar in bottom.patches]
    assert heights == pytest.approx([r / sum(raw) for r in raw])
    assert sum(heights) == pytest.approx(1.0)
    assert [t.get_text() for t in bottom.texts] == [f"{h:.2f}" for h in heights]
    (query_line,) = [line for line in top.get_lines() if list(line.get_xdata()) == [x_query, x_query]]
    assert query_line.get_linestyle() == "--"
    curve = top.get_lines()[0]
    peak = curve.get_xdata()[curve.get_ydata().argmax()]
    assert peak == pytest.approx(x_query, abs=0.01), "the kernel is centred on the query"
