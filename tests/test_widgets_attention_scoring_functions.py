"""Tests for qkv.widgets: the pure functions behind the explorers (D2L 11.2, 11.3), and what each explorer returns
in Jupyter, during the book build, and without ipywidgets."""

import math
import re
import sys

import matplotlib

matplotlib.use("Agg")

import ipywidgets  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from qkv import nadaraya_watson as nw  # noqa: E402
from qkv import widgets  # noqa: E402
from qkv.widgets import (  # noqa: E402
    attention_weight_samples,
    fit_curve,
    nadaraya_watson_explorer,
    softmax_entropy,
    softmax_entropy_vs_dim,
    softmax_scaling_explorer,
)

D_VALUES = (1, 4, 16, 64, 256, 1024)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture
def jupyter(monkeypatch):
    """As in a Jupyter session: no book build."""
    monkeypatch.delenv(widgets.BOOK_BUILD_ENV, raising=False)


@pytest.fixture
def book_build(monkeypatch):
    monkeypatch.setenv(widgets.BOOK_BUILD_ENV, "1")


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


# ---- D2L 11.2: the regression explorer's pure parts -----------------------------------------------------------


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


# ---- D2L 11.3: random dot products and the entropy of their softmax ---------------------------------------------


def test_attention_weight_samples_are_the_softmax_of_the_documented_draws():
    d, num_keys, trials = 3, 4, 2
    g = torch.Generator().manual_seed(5)
    queries = torch.randn(trials, 1, d, generator=g, dtype=torch.float64).tolist()
    keys = torch.randn(trials, num_keys, d, generator=g, dtype=torch.float64).tolist()
    for scaled in (False, True):
        expected = []
        for b in range(trials):
            scores = [sum(qi * ki for qi, ki in zip(queries[b][0], key)) for key in keys[b]]
            scores = [s / math.sqrt(d) if scaled else s for s in scores]
            exps = [math.exp(s) for s in scores]
            expected.append([e / sum(exps) for e in exps])
        got = attention_weight_samples(d, scaled, num_keys=num_keys, trials=trials, seed=5)
        torch.testing.assert_close(got, torch.tensor(expected, dtype=torch.float64))


def test_softmax_entropy_of_hand_worked_rows():
    rows = torch.tensor([[0.25, 0.25, 0.25, 0.25], [1.0, 0.0, 0.0, 0.0], [0.5, 0.25, 0.25, 0.0]], dtype=torch.float64)
    torch.testing.assert_close(softmax_entropy(rows), torch.tensor([math.log(4), 0.0, 1.5 * math.log(2)]).double())


def test_entropy_vs_dim_matches_a_direct_computation():
    d_values, num_keys, trials = (2, 8), 5, 3
    for scaled in (False, True):
        expected = []
        for d in d_values:
            g = torch.Generator().manual_seed(11)
            queries = torch.randn(trials, 1, d, generator=g, dtype=torch.float64).tolist()
            keys = torch.randn(trials, num_keys, d, generator=g, dtype=torch.float64).tolist()
            entropies = []
            for b in range(trials):
                scores = [
                    sum(qi * ki for qi, ki in zip(queries[b][0], key)) / (math.sqrt(d) if scaled else 1.0)
                    for key in keys[b]
                ]
                top = max(scores)
                exps = [math.exp(s - top) for s in scores]
                probs = [e / sum(exps) for e in exps]
                entropies.append(-sum(p * math.log(p) for p in probs if p > 0))
            expected.append(sum(entropies) / trials)
        got = softmax_entropy_vs_dim(d_values, scaled, num_keys=num_keys, trials=trials, seed=11)
        assert isinstance(got, list) and len(got) == 2
        assert got == pytest.approx(expected, rel=1e-9)


def test_unscaled_entropy_falls_towards_zero_while_scaled_entropy_stays_put():
    unscaled = softmax_entropy_vs_dim(D_VALUES, scaled=False)
    scaled = softmax_entropy_vs_dim(D_VALUES, scaled=True)
    log_k = math.log(16)
    assert unscaled[0] == pytest.approx(scaled[0]), "for d = 1 the scale is 1"
    assert all(a > b for a, b in zip(unscaled, unscaled[1:])), f"unscaled entropy should fall with d: {unscaled}"
    assert unscaled[-1] < 0.1 * log_k, f"at d = 1024 the unscaled softmax should be nearly one-hot: {unscaled}"
    assert max(scaled) - min(scaled) < 0.1 * log_k, f"scaled entropy should not depend on d: {scaled}"
    assert min(scaled) > 0.75 * log_k, f"scaled weights should stay spread out: {scaled}"


def test_bad_dimensions_raise_clear_errors():
    with pytest.raises(ValueError, match="at least 1"):
        attention_weight_samples(0, scaled=True)
    with pytest.raises(TypeError, match="integer"):
        attention_weight_samples(2.5, scaled=True)
    with pytest.raises(ValueError, match="at least one dimension"):
        softmax_entropy_vs_dim([], scaled=True)
    with pytest.raises(TypeError, match="integer"):
        softmax_scaling_explorer((1, True))


# ---- the explorers: widgets in Jupyter, figures in the book ----------------------------------------------------


def _estimate_line(ax):
    return next(line for line in ax.get_lines() if line.get_label() == "estimate")


def test_regression_explorer_is_an_interactive_widget_that_redraws(jupyter):
    x, y = _small_data()
    panel = nadaraya_watson_explorer(x, y)
    assert isinstance(panel, ipywidgets.interactive)
    kernel, sigma = panel.children[0], panel.children[1]
    assert isinstance(kernel, ipywidgets.Dropdown) and set(kernel.options) == set(widgets.KERNEL_NAMES)
    assert isinstance(sigma, ipywidgets.FloatLogSlider) and sigma.base == 10
    for name, width in [("gaussian", sigma.value), ("epanechnikov", 1.3), ("boxcar", 2.0)]:
        kernel.value, sigma.value = name, width
        ax = panel.result.axes[0]
        title = ax.get_title()
        assert title.startswith(f"{name}, sigma = {width:.3g}")
        assert _title_number(title, "LOO loss") == pytest.approx(nw.loo_loss(x, y, name, width), abs=1e-3)
        fit = fit_curve(x, y, name, width)
        torch.testing.assert_close(torch.tensor(_estimate_line(ax).get_ydata()), fit.y_hat)
    assert len(plt.get_fignums()) == 1, "each redraw should free the previous figure"


def test_regression_explorer_draws_a_static_grid_in_the_book(book_build):
    x, y = _small_data()
    fig = nadaraya_watson_explorer(x, y)
    assert isinstance(fig, Figure)
    assert not plt.fignum_exists(fig.number), "the figure is detached from pyplot, so Jupyter shows it only once"
    assert len(fig.axes) == 9
    titles = [ax.get_title() for ax in fig.axes]
    assert titles[0].startswith("gaussian, sigma = 0.1") and titles[-1].startswith("epanechnikov, sigma = 2")
    for title in titles:
        name, width = re.match(r"(\w+), sigma = ([\d.]+)", title).groups()
        assert _title_number(title, "LOO loss") == pytest.approx(nw.loo_loss(x, y, name, float(width)), abs=1e-3)


def test_softmax_explorer_is_an_interactive_widget_that_redraws(jupyter):
    panel = softmax_scaling_explorer(D_VALUES, num_keys=8, seed=3)
    assert isinstance(panel, ipywidgets.interactive)
    d, scaled = panel.children[0], panel.children[1]
    assert isinstance(d, ipywidgets.SelectionSlider) and list(d.options) == list(D_VALUES)
    assert isinstance(scaled, ipywidgets.ToggleButton) and "1/sqrt(d)" in scaled.description
    for dim, on in [(1024, False), (1024, True), (16, True)]:
        d.value, scaled.value = dim, on
        ax = panel.result.axes[0]
        weights = attention_weight_samples(dim, on, num_keys=8, trials=1, seed=3)[0]
        heights = torch.tensor([bar.get_height() for bar in ax.patches], dtype=torch.float64)
        torch.testing.assert_close(heights, torch.sort(weights, descending=True).values)
        assert f"d = {dim}, {'scaled' if on else 'unscaled'}" in ax.get_title()
        assert _title_number(ax.get_title(), "entropy") == pytest.approx(float(softmax_entropy(weights)), abs=0.01)


def test_softmax_explorer_draws_a_static_grid_in_the_book(book_build):
    fig = softmax_scaling_explorer(D_VALUES, num_keys=8)
    assert isinstance(fig, Figure) and not plt.fignum_exists(fig.number)
    titles = [ax.get_title() for ax in fig.axes]
    shown = [1, 16, 64, 1024]  # four of the six dimensions, evenly spread, first and last included
    assert titles[:8] == [t for t in titles[:8] if t.startswith("d = ")]
    assert [int(re.match(r"d = (\d+)", t).group(1)) for t in titles[:4]] == shown
    assert all("unscaled" in t for t in titles[:4]) and all(", scaled" in t for t in titles[4:8])
    curves = fig.axes[8].get_lines()
    assert [list(line.get_xdata()) for line in curves[:2]] == [list(D_VALUES)] * 2
    assert list(curves[0].get_ydata()) == pytest.approx(softmax_entropy_vs_dim(D_VALUES, False, num_keys=8))


@pytest.mark.parametrize("value", ["0", ""])
def test_an_unset_or_zero_book_flag_means_widgets(monkeypatch, value):
    monkeypatch.setenv(widgets.BOOK_BUILD_ENV, value)
    assert not widgets.static_mode()
    assert isinstance(softmax_scaling_explorer((1, 4), num_keys=4), ipywidgets.interactive)


def test_without_ipywidgets_both_explorers_fall_back_to_figures_with_a_note(jupyter, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # makes `import ipywidgets` raise ImportError
    x, y = _small_data()
    assert isinstance(nadaraya_watson_explorer(x, y), Figure)
    assert isinstance(softmax_scaling_explorer((1, 4), num_keys=4), Figure)
    out = capsys.readouterr().out
    assert out.count(widgets.NO_WIDGETS_NOTE) == 2 and out.count("\n") == 2, "one line per explorer"
