"""Tests for qkv.figures.self_attention_and_positional_encoding (D2L 11.6): the path lengths against their closed
forms, and each figure drawing the numbers it claims to draw."""

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.patches import FancyBboxPatch  # noqa: E402

from qkv.figures import self_attention_and_positional_encoding as figures  # noqa: E402
from qkv.positional import sinusoidal_table  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_glance_joins_every_token_to_every_output_and_shows_the_table():
    fig = figures.glance()
    drawing, heatmap = fig.axes
    assert sum(isinstance(p, FancyBboxPatch) for p in drawing.patches) == 10, "5 tokens and 5 outputs"
    assert len(drawing.lines) == 25, "one line per (token, output) pair"
    texts = [t.get_text() for t in drawing.texts]
    assert [f"$+\\,\\mathbf{{p}}_{i}$" for i in range(5)] == [t for t in texts if "mathbf{p}" in t]
    (image,) = heatmap.images
    np.testing.assert_allclose(image.get_array(), sinusoidal_table(40, 32).numpy())


@pytest.mark.parametrize("k", [3, 5, 7, 9])
@pytest.mark.parametrize("n", [2, 3, 8, 17, 64])
def test_path_lengths_match_the_closed_forms(n, k):
    lengths = figures.path_lengths(n, k)
    layers = math.ceil((n - 1) / (k // 2))  # each layer reaches k // 2 positions further
    assert lengths == {"CNN": (layers, layers), "RNN": (1, n - 1), "self-attention": (1, 1)}


@pytest.mark.parametrize("n,k", [(1, 3), (8, 2), (8, 4), (8, 1)])
def test_path_lengths_reject_bad_sizes(n, k):
    with pytest.raises(ValueError, match="odd kernel size"):
        figures.path_lengths(n, k)


def test_paths_title_each_panel_with_its_steps_and_draw_the_cnn_layers():
    fig = figures.paths(n=8, k=5)
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["CNN (k = 5): 4 steps", "RNN: 7 steps", "self-attention: 1 step"]
    cnn = fig.axes[0]
    assert len(cnn.collections) == 5, "the tokens and 4 layers above them"
    red = [line for line in cnn.lines if line.get_color() == "#c0392b"]
    assert len(red) == 4, "the red path climbs one layer per step"
    xs = [line.get_xdata()[-1] for line in red]
    assert xs[-1] == 7, "and ends at the last token"


def test_binary_analogy_draws_the_bits_and_the_table():
    fig = figures.binary_analogy(num_positions=16, num_bits=4, num_columns=8)
    left, right = fig.axes
    bits = left.images[0].get_array()
    assert bits.shape == (16, 4)
    for i in range(16):
        assert int("".join(str(int(b)) for b in bits[i][::-1]), 2) == i, f"row {i} spells {i} in binary"
    np.testing.assert_allclose(right.images[0].get_array(), sinusoidal_table(16, 32).numpy()[:, :8])


def test_permutation_puts_the_shuffled_outputs_back():
    torch.manual_seed(0)
    x, y = torch.randn(6, 5), torch.randn(6, 4)
    perm = torch.tensor([2, 0, 5, 1, 4, 3])
    fig = figures.permutation(x, y, perm, y[perm])
    panels = [ax.images[0].get_array() for ax in fig.axes]
    np.testing.assert_allclose(panels[2], y[perm].numpy())
    np.testing.assert_allclose(panels[3], y.numpy(), err_msg="row perm[r] of the put-back panel is row r shuffled")
    assert [t.get_text() for t in fig.axes[2].get_yticklabels()] == [str(p) for p in perm.tolist()]
    with pytest.raises(ValueError, match="permutation of 0 .. 5"):
        figures.permutation(x, y, [0, 0, 1, 2, 3, 4], y)
