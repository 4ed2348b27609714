"""Tests for qkv.figures.vision_transformer (D2L 11.8): the glance figure, patch grids, accuracy curves."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from qkv.figures import vision_transformer as figures  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def test_glance_draws_the_patches_of_a_real_image():
    image = figures.sample_image()
    assert image.shape == (28, 28) and 0 <= image.min() and image.max() <= 1 and image.max() > 0.5
    fig = figures.glance(image)
    assert isinstance(fig, Figure)
    assert "16 patches of 7 x 7" in fig.axes[0].get_title()


def test_draw_patches_numbers_them_row_by_row():
    fig, ax = plt.subplots()
    image = torch.zeros(12, 12)
    assert figures.draw_patches(ax, image, 4) == 9
    labels = {t.get_text(): t.get_position() for t in ax.texts}
    assert labels["2"] == (6.0, 2.0) and labels["4"] == (2.0, 6.0)  # 2 is right of 1; 4 starts the second row
    with pytest.raises(ValueError, match="divide"):
        figures.draw_patches(ax, image, 5)


def test_accuracy_against_time_plots_each_history():
    runs = {
        "a": {"train_seconds": [1.0, 2.0], "cpu_seconds": [1.5, 3.5], "val_acc": [0.5, 0.7]},
        "b": {"train_seconds": [3.0], "cpu_seconds": [5.0], "val_acc": [0.9]},
    }
    ax = figures.accuracy_against_time(runs, d2l=(0.86, 124))
    lines = ax.get_lines()
    assert list(lines[0].get_xdata()) == [1.0, 2.0] and list(lines[0].get_ydata()) == [0.5, 0.7]
    assert list(lines[2].get_ydata()) == [0.86, 0.86]
    ax = figures.accuracy_against_time(runs, d2l=0.86)  # an accuracy alone: D2L states no time
    assert list(ax.get_lines()[2].get_ydata()) == [0.86, 0.86]
    assert ax.get_legend_handles_labels()[1][2] == "D2L's ViT: 0.86 on a GPU"
    with pytest.raises(ValueError, match="one train_seconds per val_acc"):
        figures.accuracy_against_time({"bad": {"train_seconds": [1.0], "val_acc": [0.5, 0.6]}})
    with pytest.raises(ValueError, match="one cpu_seconds per val_acc"):
        figures.accuracy_against_time({"bad": {"cpu_seconds": [1.0], "val_acc": [0.5, 0.6]}}, clock="cpu")
    with pytest.raises(ValueError, match="clock"):
        figures.accuracy_against_time(runs, clock="gpu")
    ax = figures.accuracy_against_time(runs, clock="cpu")
    assert list(ax.lines[0].get_xdata()) == [1.5, 3.5] and "CPU" in ax.get_xlabel()
