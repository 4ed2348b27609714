"""Tests for qkv.plotting: heatmaps (D2L 11.1) and the d2l.plot-like helper."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.image import AxesImage  # noqa: E402

from qkv import plotting  # noqa: E402
from qkv.plotting import plot, show_heatmaps, use_svg_display  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _images(fig):
    """The heatmap axes (those holding an AxesImage) and the others, in figure order."""
    panels = [ax for ax in fig.axes if any(isinstance(a, AxesImage) for a in ax.get_images())]
    others = [ax for ax in fig.axes if ax not in panels]
    return panels, others


def test_heatmaps_one_panel_per_matrix_plus_one_colour_bar():
    torch.manual_seed(0)
    M = torch.rand(2, 3, 4, 5)
    fig = show_heatmaps(M, xlabel="Keys", ylabel="Queries")
    panels, others = _images(fig)
    assert len(panels) == 2 * 3, f"expected 6 heatmap panels, got {len(panels)}"
    assert len(others) == 1, f"expected exactly one colour bar axes, got {len(others)}"
    assert len(fig.axes) == 2 * 3 + 1


def test_heatmap_images_equal_the_input_matrices_in_row_major_order():
    rng = np.random.default_rng(1)
    M = rng.random((2, 3, 4, 5))
    fig = show_heatmaps(M, "Keys", "Queries")
    panels, _ = _images(fig)
    for n, ax in enumerate(panels):
        i, j = divmod(n, 3)
        data = np.asarray(ax.get_images()[0].get_array())
        np.testing.assert_array_equal(data, M[i, j], err_msg=f"panel {n} should show matrices[{i}, {j}]")


def test_heatmaps_share_one_colour_range_spanning_all_matrices():
    # Panels with very different ranges: per-panel autoscaling would give each its own vmin/vmax.
    M = np.zeros((1, 3, 2, 2))
    M[0, 0] = [[0.0, 0.1], [0.2, 0.3]]
    M[0, 1] = [[5.0, 6.0], [7.0, 8.0]]
    M[0, 2] = [[-1.0, 0.0], [0.0, 2.0]]
    fig = show_heatmaps(M, "Keys", "Queries")
    panels, (cbar,) = _images(fig)
    for ax in panels:
        norm = ax.get_images()[0].norm
        assert (norm.vmin, norm.vmax) == (-1.0, 8.0), f"colour range {norm.vmin, norm.vmax}, expected (-1, 8)"
    lo, hi = sorted(cbar.get_ylim())
    assert lo == pytest.approx(-1.0) and hi == pytest.approx(8.0), "the colour bar must span the global range"


def test_heatmap_labels_on_outer_panels_and_titles_per_column():
    M = np.random.default_rng(2).random((2, 2, 3, 3))
    fig = show_heatmaps(M, "Keys", "Queries", titles=["head 1", "head 2"])
    panels, _ = _images(fig)
    grid = [panels[0:2], panels[2:4]]
    assert [ax.get_xlabel() for ax in grid[1]] == ["Keys", "Keys"]
    assert [ax.get_xlabel() for ax in grid[0]] == ["", ""], "only the bottom row gets x labels"
    assert [row[0].get_ylabel() for row in grid] == ["Queries", "Queries"]
    assert [row[1].get_ylabel() for row in grid] == ["", ""], "only the first column gets y labels"
    assert [ax.get_title() for ax in panels] == ["head 1", "head 2", "head 1", "head 2"]


def test_heatmaps_accept_2d_and_3d_inputs_and_tensors_requiring_grad():
    W = torch.rand(4, 6, requires_grad=True)
    panels, _ = _images(show_heatmaps(W, "Keys", "Queries"))
    assert len(panels) == 1
    np.testing.assert_array_equal(panels[0].get_images()[0].get_array(), W.detach().numpy())
    heads = torch.rand(3, 4, 6)
    panels, _ = _images(show_heatmaps(heads, "Keys", "Queries", titles=["a", "b", "c"]))
    assert len(panels) == 3, "a 3-D input is one row of panels"
    np.testing.assert_array_equal(panels[2].get_images()[0].get_array(), heads[2].numpy())


@pytest.mark.parametrize("shape", [(5,), (1, 1, 1, 2, 2)])
def test_heatmaps_reject_bad_shapes_with_a_message_naming_the_accepted_ones(shape):
    with pytest.raises(ValueError, match=r"num_rows, num_cols, Q, K"):
        show_heatmaps(np.zeros(shape), "Keys", "Queries")


def test_heatmaps_reject_wrong_number_of_titles_and_empty_input():
    with pytest.raises(ValueError, match="one title per column"):
        show_heatmaps(np.zeros((1, 2, 3, 3)), "Keys", "Queries", titles=["only one"])
    with pytest.raises(ValueError, match="non-empty"):
        show_heatmaps(np.zeros((1, 2, 0, 3)), "Keys", "Queries")


def test_plot_several_curves_sharing_x_and_cycling_formats():
    x = torch.arange(5.0)
    ys = [x**2, 2 * x, -x, x + 1, x - 1]
    ax = plot(x, ys, xlabel="x", ylabel="y", legend=["a", "b", "c", "d", "e"], xlim=(0, 4), yscale="log")
    lines = ax.get_lines()
    assert len(lines) == 5
    for line, y in zip(lines, ys):
        np.testing.assert_array_equal(line.get_xdata(), x.numpy())
        np.testing.assert_array_equal(line.get_ydata(), y.numpy())
    assert lines[4].get_linestyle() == lines[0].get_linestyle() == "-", "formats repeat after the fourth curve"
    assert lines[1].get_linestyle() == "--"
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_yscale()) == ("x", "y", "log")
    assert tuple(ax.get_xlim()) == (0, 4)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["a", "b", "c", "d", "e"]


def test_plot_without_x_uses_the_index_and_rows_of_a_2d_array_as_curves():
    Y = np.array([[1.0, 3.0, 2.0], [0.0, 0.5, 1.0]])
    ax = plot(Y)
    lines = ax.get_lines()
    assert len(lines) == 2
    np.testing.assert_array_equal(lines[1].get_xdata(), [0, 1, 2])
    np.testing.assert_array_equal(lines[1].get_ydata(), Y[1])


def test_plot_reuses_and_clears_given_axes():
    _, ax = plt.subplots()
    ax.plot([0, 1], [5, 5])
    out = plot([0, 1, 2], [1, 2, 3], axes=ax)
    assert out is ax
    assert len(ax.get_lines()) == 1, "the axes must be cleared before drawing"


def test_plot_rejects_mismatched_lengths():
    with pytest.raises(ValueError, match="3 points but y has 2"):
        plot([0, 1, 2], [1, 2])
    with pytest.raises(ValueError, match="one x per curve"):
        plot([[0, 1], [0, 1]], [[1, 2], [3, 4], [5, 6]])


def test_use_svg_display_is_a_no_op_outside_ipython(monkeypatch):
    called = []
    import matplotlib_inline.backend_inline as inline

    monkeypatch.setattr(inline, "set_matplotlib_formats", lambda *fmts: called.append(fmts))
    assert use_svg_display() is False
    assert called == []


def test_use_svg_display_switches_to_svg_inside_ipython(monkeypatch):
    import IPython
    import matplotlib_inline.backend_inline as inline

    called = []
    monkeypatch.setattr(IPython, "get_ipython", lambda: object())
    monkeypatch.setattr(inline, "set_matplotlib_formats", lambda *fmts: called.append(fmts))
    assert plotting.use_svg_display() is True
    assert called == [("svg",)]
