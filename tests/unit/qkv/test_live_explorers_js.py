"""The live explorers compute in the page what ``qkv`` computes (D2L 11.2, 11.3, 11.6): each module's exported
functions, run in Node on the data its Python side makes, equal ``qkv``'s results within 1e-9 relative (and 1e-12
absolute, for values that cancel to about zero), at several settings per explorer.

The book's explorers draw these same functions' results (``tests/book/test_explorers_browser.py`` reads the drawing
back in Chromium); here they are checked without a browser, in the unit tier.
"""

from __future__ import annotations

import math

import pytest
import torch

from qkv import nadaraya_watson as nw
from qkv.positional import sinusoidal_table
from qkv.widgets.attention_pooling import KERNEL_NAMES, fit_curve, nadaraya_watson_data
from qkv.widgets.attention_scoring_functions import (
    attention_weight_samples,
    softmax_entropy,
    softmax_entropy_vs_dim,
    softmax_scaling_data,
)
from qkv.widgets.self_attention_and_positional_encoding import encoding_data, pair_trajectory
from tests.support.js_modules import call_module, node_or_skip

RTOL, ATOL = 1e-9, 1e-12

pytestmark = pytest.mark.usefixtures("_node")


@pytest.fixture
def _node():
    node_or_skip()


def _close(js, reference, what: str):
    got = torch.tensor(js, dtype=torch.float64)
    torch.testing.assert_close(got, reference.to(torch.float64), rtol=RTOL, atol=ATOL, msg=lambda m: f"{what}: {m}")


# ---- 11.3: softmax scaling ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "d_values, num_keys, seed", [((1, 4, 16, 64, 256, 1024), 16, 0), ((2, 16, 128), 8, 3), ((5,), 3, 11)]
)
def test_softmax_scaling_weights_and_entropy_are_qkvs(d_values, num_keys, seed):
    data = softmax_scaling_data(d_values, num_keys, seed)
    settings = [(d, scaled) for d in d_values for scaled in (False, True)]
    results = call_module("softmax_scaling", [("explore", [data, d, scaled]) for d, scaled in settings])
    curves = {s: softmax_entropy_vs_dim(d_values, s, num_keys, trials=data["trials"], seed=seed) for s in (0, 1)}
    for (d, scaled), result in zip(settings, results):
        what = f"d = {d}, scaled = {scaled}"
        weights = attention_weight_samples(d, scaled, num_keys, trials=1, seed=seed)[0]  # (K,)
        _close(result["weights"], weights, f"{what}: weights")
        assert result["entropy"] == pytest.approx(float(softmax_entropy(weights)), rel=RTOL), what
        assert result["top"]["key"] == int(weights.argmax()), f"{what}: the key with the largest weight"
        assert result["order"] == torch.sort(weights, descending=True, stable=True).indices.tolist(), what
        assert result["meanEntropy"] == pytest.approx(curves[scaled][d_values.index(d)], rel=RTOL), what


def test_softmax_scaling_makes_a_difference_that_the_comparison_sees():
    """The unscaled and scaled weights of d = 64 differ far beyond the tolerance: the comparison above can fail."""
    data = softmax_scaling_data((64,), 16, 0)
    calls = [("attentionWeights", [data["scores"][0], 64, scaled]) for scaled in (False, True)]
    unscaled, scaled = call_module("softmax_scaling", calls)
    assert max(abs(a - b) for a, b in zip(unscaled, scaled)) > 0.1


def test_softmax_scaling_summary_says_the_key_numbers():
    data = softmax_scaling_data()
    [result] = call_module("softmax_scaling", [("explore", [data, 64, False])])
    [text] = call_module("softmax_scaling", [("summary", [result, data])])
    weights = attention_weight_samples(64, False, 16, 1, 0)[0]
    top = int(weights.argmax())
    assert text.startswith(f"d = 64, unscaled: the largest weight is {float(weights[top]):.2f}, on key {top};")
    assert f"entropy {float(softmax_entropy(weights)):.2f} nats" in text
    assert f"uniform weights: {math.log(16):.2f}" in text


def test_softmax_scaling_picks_the_nearest_d_it_has():
    data = softmax_scaling_data((1, 4, 16), 4, 0)
    results = call_module("softmax_scaling", [("explore", [data, d, True]) for d in (3, 5, 100, 1)])
    assert [r["d"] for r in results] == [4, 4, 16, 1]


# ---- 11.2: Nadaraya-Watson -----------------------------------------------------------------------------------------


def _gappy_data():
    """Points with a wide gap, where a narrow boxcar or Epanechnikov kernel reaches no key: the nearest-key fallback."""
    x = torch.tensor([0.0, 0.1, 0.25, 3.0, 3.2, 4.0], dtype=torch.float64)
    return x, torch.sin(x) * 3 + x


@pytest.mark.parametrize("which", ["d2l", "gappy"])
def test_nadaraya_watson_estimate_and_loo_loss_are_qkvs(which):
    x, y = (None, None) if which == "d2l" else _gappy_data()
    data = nadaraya_watson_data(x, y)
    x_train = torch.tensor(data["x"], dtype=torch.float64)
    y_train = torch.tensor(data["y"], dtype=torch.float64)
    settings = [(k, s) for k in KERNEL_NAMES for s in (0.01, 0.07, 0.5, 2.0, 10.0)]
    results = call_module("nadaraya_watson", [("explore", [data, k, s]) for k, s in settings])
    for (kernel, sigma), result in zip(settings, results):
        what = f"{which} data, {kernel}, sigma = {sigma}"
        fit = fit_curve(x_train, y_train, kernel, sigma)
        _close(result["grid"], fit.x, f"{what}: the queries")
        _close(result["yHat"], fit.y_hat, f"{what}: the estimate")
        assert result["loo"] == pytest.approx(fit.loo, rel=RTOL), what
        assert result["loo"] == pytest.approx(nw.loo_loss(x_train, y_train, kernel, sigma), rel=RTOL), what


def test_nadaraya_watson_fallback_is_exercised_by_the_gappy_data():
    """At sigma = 0.01 a boxcar reaches no other point from most of the gappy queries: the test above covers qkv's
    nearest-key rule, not only the ordinary weights."""
    x, y = _gappy_data()
    grid = torch.tensor(nadaraya_watson_data(x, y)["grid"], dtype=torch.float64)
    diffs = (grid[:, None] - x[None, :]) / 0.01  # (Q, K)
    assert (nw.boxcar(diffs).sum(dim=1) == 0).sum() > 100


def test_nadaraya_watson_summary_and_unknown_kernel():
    data = nadaraya_watson_data()
    [result] = call_module("nadaraya_watson", [("explore", [data, "epanechnikov", 1.3])])
    [text] = call_module("nadaraya_watson", [("summary", [result])])
    loo = nw.loo_loss(torch.tensor(data["x"]), torch.tensor(data["y"]), "epanechnikov", 1.3)
    assert text.startswith(f"epanechnikov kernel, sigma = 1.30: leave-one-out loss {loo:.3f};")
    with pytest.raises(AssertionError, match="unknown kernel cosine"):
        call_module("nadaraya_watson", [("explore", [data, "cosine", 1.0])])


# ---- 11.6: sinusoidal positions and the rotation between them -------------------------------------------------------


@pytest.mark.parametrize("rows, d", [(60, 32), (7, 10), (3, 2), (200, 128)])
def test_positional_table_is_qkvs(rows, d):
    [table] = call_module("positional_encoding", [("table", [rows, d])])
    _close(table, sinusoidal_table(rows, d), f"table ({rows}, {d})")


@pytest.mark.parametrize("position, pair, d", [(0, 0, 32), (10, 0, 32), (40, 3, 32), (59, 15, 32), (25, 4, 10)])
def test_positional_trajectory_is_qkvs(position, pair, d):
    [points, omega] = call_module("positional_encoding", [("trajectory", [position, pair, d]), ("omega", [pair, d])])
    _close(points, pair_trajectory(position, pair, d), f"position {position}, pair {pair}, d = {d}")
    assert omega == pytest.approx(1 / 10000 ** (2 * pair / d), rel=RTOL)


@pytest.mark.parametrize("position, offset, pair", [(10, 5, 0), (10, 5, 3), (40, -25, 8), (3, 56, 15), (30, -30, 1)])
def test_positional_shift_is_a_rotation_onto_qkvs_row(position, offset, pair):
    """eq-shift-rotation: the 2 x 2 rotation of the page, applied to row i's pair, gives qkv's row i + delta."""
    d = 32
    [shifted, rotation] = call_module(
        "positional_encoding", [("shifted", [position, offset, pair, d]), ("rotation", [offset, pair, d])]
    )
    row = sinusoidal_table(position + offset + 1, d)[position + offset]  # (d,)
    _close(shifted, row[2 * pair : 2 * pair + 2], f"row {position} shifted by {offset}, pair {pair}")
    angle = offset / 10000 ** (2 * pair / d)
    c, s = math.cos(angle), math.sin(angle)
    _close(rotation, torch.tensor([[c, s], [-s, c]], dtype=torch.float64), "the rotation")


def test_positional_explore_and_summary():
    data = encoding_data(32, 60)
    [result] = call_module("positional_encoding", [("explore", [data, 40, 3, -7])])
    [text] = call_module("positional_encoding", [("summary", [result])])
    points = pair_trajectory(40, 3, 32)
    _close(result["point"], points[-1], "the point of row 40")
    row = sinusoidal_table(34, 32)[33]
    _close(result["target"], torch.stack((row[7], row[6])), "the point of row 33, (cos, sin)")
    omega = 1 / 10000 ** (6 / 32)
    assert text.startswith(f"position 40, pair 3 (columns 6 and 7): w = {omega:.3g} radians per position, ")
    assert f"{40 * omega / (2 * math.pi):.2f} turns" in text and "to position 33" in text
