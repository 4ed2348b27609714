"""Tests for qkv.widgets.attention_pooling (D2L 11.2): the Nadaraya-Watson estimate the explorer draws, and the
explorer in Jupyter and in the book."""

import math
import re

import matplotlib

matplotlib.use("Agg")

import anywidget  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from qkv import nadaraya_watson as nw  # noqa: E402
from qkv.widgets import _live as live  # noqa: E402
from qkv.widgets.attention_pooling import (  # noqa: E402
    KERNEL_NAMES,
    LOG_SIGMA,
    fit_curve,
    nadaraya_watson_data,
    nadaraya_watson_explorer,
    query_grid,
)

pytestmark = pytest.mark.usefixtures("close_figures")


def _small_data():
    g = torch.Generator().manual_seed(7)
    x = torch.sort(5 * torch.rand(12, generator=g, dtype=torch.float64)).values
    return x, 2 * torch.sin(x) + x + 0.5 * torch.randn(12, generator=g, dtype=torch.float64)


def _gauss(u):
    return math.exp(-u * u / 2)


def _estimate_by_loops(x, y, queries, sigma):
    out = []
    for q in queries:
        a = [_gauss((q - k) / sigma) for k in x]
        out.append(sum(ai * yi for ai, yi in zip(a, y)) / sum(a))
    return out


def _loo_by_loops(x, y, sigma):
    errors = []
    for i in range(len(x)):
        rest = [j for j in range(len(x)) if j != i]
        pred = _estimate_by_loops([x[j] for j in rest], [y[j] for j in rest], [x[i]], sigma)[0]
        errors.append((pred - y[i]) ** 2)
    return sum(errors) / len(errors)


def _title_number(title: str, label: str) -> float:
    return float(re.search(rf"{label}\s+([-\d.]+)", title).group(1))


# ---- the pure part: the estimate and its leave-one-out loss ----------------------------------------------------


def test_fit_curve_matches_explicit_loops_on_a_padded_grid():
    x, y = _small_data()
    fit = fit_curve(x, y, "gaussian", sigma=0.4, num_points=31)
    span = float(x.max() - x.min())
    assert fit.x.shape == fit.y_hat.shape == (31,)
    assert fit.x[0].item() == pytest.approx(float(x.min()) - 0.05 * span)
    assert fit.x[-1].item() == pytest.approx(float(x.max()) + 0.05 * span)
    expected = _estimate_by_loops(x.tolist(), y.tolist(), fit.x.tolist(), 0.4)
    torch.testing.assert_close(fit.y_hat, torch.tensor(expected, dtype=torch.float64))
    assert fit.loo == pytest.approx(_loo_by_loops(x.tolist(), y.tolist(), 0.4), rel=1e-9)


def test_fit_curve_defaults_to_d2l_data_and_rejects_half_given_data():
    data = nw.make_data(n=40, noise=1.0, seed=0)
    fit = fit_curve(None, None, "boxcar", sigma=0.7)
    assert fit.loo == pytest.approx(nw.loo_loss(data.x_train.double(), data.y_train.double(), "boxcar", 0.7))
    with pytest.raises(ValueError, match="both x_train and y_train"):
        fit_curve(data.x_train, None)
    with pytest.raises(ValueError, match="same length"):
        fit_curve(data.x_train, data.y_train[:-1])
    with pytest.raises(ValueError, match="num_points"):
        fit_curve(data.x_train, data.y_train, num_points=1)


# ---- the explorer: widgets in Jupyter, figures in the book -----------------------------------------------------


def test_explorer_data_are_the_points_the_grid_and_the_truth_in_float64():
    x, y = _small_data()
    data = nadaraya_watson_data(x.float(), y.float())
    assert data["x"] == x.float().double().tolist() and data["y"] == y.float().double().tolist()
    grid = query_grid(x.float().double())
    assert data["grid"] == grid.tolist() and len(data["grid"]) == 200
    assert data["truth"] == (2 * torch.sin(grid) + grid).tolist()
    assert data["kernels"] == list(KERNEL_NAMES) and data["log_sigma"] == LOG_SIGMA
    assert nadaraya_watson_data(x, y, truth=None)["truth"] is None
    assert nadaraya_watson_data()["x"] == nw.make_data(n=40, noise=1.0, seed=0).x_train.double().tolist()


def test_regression_explorer_is_a_live_widget(jupyter):
    x, y = _small_data()
    panel = nadaraya_watson_explorer(x, y)
    assert isinstance(panel, anywidget.AnyWidget)
    assert panel._esm == live.module_text("nadaraya_watson")
    assert panel.data == nadaraya_watson_data(x, y)
    assert (panel.kernel, panel.sigma) == ("gaussian", 0.5)
    panel.kernel, panel.sigma = "boxcar", 2.0  # what the menu and the slider set
    assert panel.get_state(["kernel", "sigma"]) == {"kernel": "boxcar", "sigma": 2.0}


def test_regression_explorer_draws_a_static_grid_in_the_book(book_build):
    x, y = _small_data()
    explorer = nadaraya_watson_explorer(x, y)
    assert isinstance(explorer, live.BookExplorer) and explorer.name == "nadaraya_watson"
    assert explorer.data == nadaraya_watson_data(x, y)
    fig = explorer.figure
    assert isinstance(fig, Figure)
    assert not plt.fignum_exists(fig.number), "the figure is detached from pyplot, so Jupyter shows it only once"
    assert len(fig.axes) == 9
    titles = [ax.get_title() for ax in fig.axes]
    assert titles[0].startswith("gaussian, sigma = 0.1") and titles[-1].startswith("epanechnikov, sigma = 2")
    for title in titles:
        name, width = re.match(r"(\w+), sigma = ([\d.]+)", title).groups()
        assert _title_number(title, "LOO loss") == pytest.approx(nw.loo_loss(x, y, name, float(width)), abs=1e-3)
