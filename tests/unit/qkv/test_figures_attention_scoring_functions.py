"""Tests for qkv.figures.attention_scoring_functions: the glance figure of D2L 11.3 shows the four steps in order."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402

from qkv.figures import attention_scoring_functions as figures  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_glance_shows_score_mask_softmax_and_sum_joined_left_to_right():
    (ax,) = figures.glance().axes
    titles = [t for t in ax.texts if t.get_fontweight() == "bold"]
    assert [t.get_text() for t in titles] == ["1. score", "2. mask", "3. softmax", "4. weighted sum"]
    xs = [t.get_position()[0] for t in titles]
    assert xs == sorted(xs), "the steps read left to right"
    assert any("sqrt{d}" in t.get_text() for t in ax.texts), "the score is the scaled dot product"
    assert sum(isinstance(p, FancyBboxPatch) for p in ax.patches) == 4
    assert sum(isinstance(p, FancyArrowPatch) for p in ax.patches) == 3, "an arrow between each pair of steps"
