"""Tests for qkv.figures.queries_keys_values: the glance figure of D2L 11.1 shows what its weights say."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.patches import FancyArrowPatch  # noqa: E402

from qkv.figures import queries_keys_values as figures  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_glance_labels_one_key_value_and_weight_per_pair():
    weights = (0.1, 0.6, 0.3)
    (ax,) = figures.glance(weights).axes
    texts = [t.get_text() for t in ax.texts]
    for i, w in enumerate(weights, start=1):
        assert f"$\\mathbf{{k}}_{i}$" in texts and f"$\\mathbf{{v}}_{i}$" in texts
        assert f"$\\alpha_{i}={w:.2f}$" in texts
    assert not any("_4" in t for t in texts), "three weights draw three key-value pairs"


def test_glance_arrows_are_thicker_for_larger_weights():
    weights = (0.05, 0.7, 0.2, 0.05)
    (ax,) = figures.glance(weights).axes
    red = [p.get_linewidth() for p in ax.patches if isinstance(p, FancyArrowPatch) and p.get_edgecolor()[0] > 0.7]
    assert len(red) == 2 * len(weights), "each pair has a key-to-value arrow and a value-to-output line"
    key_to_value = red[0::2]
    assert key_to_value.index(max(key_to_value)) == 1 and key_to_value[0] == key_to_value[3] < key_to_value[2]
