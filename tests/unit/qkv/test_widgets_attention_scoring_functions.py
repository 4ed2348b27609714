"""Tests for qkv.widgets.attention_scoring_functions (D2L 11.3): random dot products and the entropy of their
softmax, and the softmax-scaling explorer in Jupyter and in the book."""

import math
import re

import matplotlib

matplotlib.use("Agg")

import anywidget  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from qkv.widgets import _live as live  # noqa: E402
from qkv.widgets.attention_scoring_functions import (  # noqa: E402
    CURVE_TRIALS,
    attention_score_samples,
    attention_weight_samples,
    softmax_entropy,
    softmax_entropy_vs_dim,
    softmax_scaling_data,
    softmax_scaling_explorer,
)

D_VALUES = (1, 4, 16, 64, 256, 1024)

pytestmark = pytest.mark.usefixtures("close_figures")


# ---- the pure functions ----------------------------------------------------------------------------------------


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


# ---- the explorer: widgets in Jupyter, figures in the book -----------------------------------------------------


def test_score_samples_are_the_weights_before_the_softmax():
    scores = attention_score_samples(64, num_keys=5, trials=3, seed=2)  # (B, K)
    assert scores.shape == (3, 5) and scores.dtype == torch.float64
    for scaled in (False, True):
        expected = torch.softmax(scores / (8.0 if scaled else 1.0), dim=-1)
        assert torch.equal(attention_weight_samples(64, scaled, num_keys=5, trials=3, seed=2), expected)


def test_explorer_data_hold_one_query_per_d_and_the_curves():
    data = softmax_scaling_data((1, 16, 256), num_keys=8, seed=3)
    assert data["d_values"] == [1, 16, 256] and (data["num_keys"], data["seed"]) == (8, 3)
    assert data["trials"] == CURVE_TRIALS and data["log_k"] == math.log(8)
    assert data["scores"] == [attention_score_samples(d, 8, 1, 3)[0].tolist() for d in (1, 16, 256)]
    assert data["curves"] == {
        "unscaled": softmax_entropy_vs_dim((1, 16, 256), False, num_keys=8, seed=3),
        "scaled": softmax_entropy_vs_dim((1, 16, 256), True, num_keys=8, seed=3),
    }
    with pytest.raises(ValueError, match="at least one dimension"):
        softmax_scaling_data(())


def test_softmax_explorer_is_a_live_widget(jupyter):
    panel = softmax_scaling_explorer(D_VALUES, num_keys=8, seed=3)
    assert isinstance(panel, anywidget.AnyWidget)
    assert panel._esm == live.module_text("softmax_scaling")
    assert panel.data == softmax_scaling_data(D_VALUES, num_keys=8, seed=3)
    assert (panel.d, panel.scaled) == (1, False)
    panel.d, panel.scaled = 1024, True  # what the slider and the check box set
    assert panel.get_state(["d", "scaled"]) == {"d": 1024, "scaled": True}


def test_softmax_explorer_draws_a_static_grid_in_the_book(book_build):
    explorer = softmax_scaling_explorer(D_VALUES, num_keys=8)
    assert isinstance(explorer, live.BookExplorer) and explorer.settings == {"d": 1, "scaled": False}
    fig = explorer.figure
    assert isinstance(fig, Figure) and not plt.fignum_exists(fig.number)
    titles = [ax.get_title() for ax in fig.axes]
    shown = [1, 16, 64, 1024]  # four of the six dimensions, evenly spread, first and last included
    assert titles[:8] == [t for t in titles[:8] if t.startswith("d = ")]
    assert [int(re.match(r"d = (\d+)", t).group(1)) for t in titles[:4]] == shown
    assert all("unscaled" in t for t in titles[:4]) and all(", scaled" in t for t in titles[4:8])
    curves = fig.axes[8].get_lines()
    assert [list(line.get_xdata()) for line in curves[:2]] == [list(D_VALUES)] * 2
    assert list(curves[0].get_ydata()) == pytest.approx(softmax_entropy_vs_dim(D_VALUES, False, num_keys=8))
