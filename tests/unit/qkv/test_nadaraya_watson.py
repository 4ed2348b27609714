"""Tests for qkv.nadaraya_watson: kernels, the estimator, leave-one-out bandwidth choice (D2L 11.2)."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from qkv.nadaraya_watson import (
    KERNELS,
    boxcar,
    constant,
    epanechikov,
    epanechnikov,
    f,
    gaussian,
    loo_loss,
    make_data,
    nadaraya_watson,
    select_bandwidth,
)

KERNEL_NAMES = sorted(KERNELS)


def _loop_estimate(x_train, y_train, x_val, kernel, sigma):
    """Independent reference: the estimator written as explicit Python loops over queries and keys."""
    out = []
    for q in x_val.tolist():
        scores = [float(kernel(torch.tensor((q - k) / sigma, dtype=torch.float64))) for k in x_train.tolist()]
        total = sum(scores)
        out.append(sum(s * y for s, y in zip(scores, y_train.tolist())) / total)
    return torch.tensor(out, dtype=torch.float64)


def test_kernels_follow_d2l_definitions_at_hand_computed_points():
    x = torch.tensor([-1.5, -1.0, -0.5, 0.0, 0.25, 0.999, 1.0, 2.0])
    torch.testing.assert_close(gaussian(x), torch.tensor([math.exp(-v * v / 2) for v in x.tolist()]))
    torch.testing.assert_close(boxcar(x), torch.tensor([0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0]))
    torch.testing.assert_close(constant(x), torch.ones(8))
    torch.testing.assert_close(epanechikov(x), torch.tensor([0.0, 0.0, 0.5, 1.0, 0.75, 0.001, 0.0, 0.0]))
    assert epanechnikov is epanechikov
    assert set(KERNELS) == {"gaussian", "boxcar", "constant", "epanechikov"}


def test_make_data_matches_d2l_setup_and_is_reproducible():
    data = make_data(seed=3)
    assert data.x_train.shape == data.y_train.shape == (40,)
    assert torch.all(data.x_train[1:] >= data.x_train[:-1]), "training inputs are sorted, as in D2L"
    assert data.x_train.min() >= 0 and data.x_train.max() < 5
    torch.testing.assert_close(data.x_val, torch.arange(0, 5, 0.1))
    torch.testing.assert_close(data.y_val, 2 * torch.sin(data.x_val) + data.x_val)
    again = make_data(seed=3)
    assert torch.equal(data.y_train, again.y_train)
    clean = make_data(n=10, noise=0.0, seed=1)
    torch.testing.assert_close(clean.y_train, f(clean.x_train))
    big = make_data(n=4000, noise=0.5, seed=0)
    residual_std = float((big.y_train - f(big.x_train)).std())
    assert abs(residual_std - 0.5) < 0.03, f"noise std should be 0.5, measured {residual_std:.3f}"


def test_estimate_matches_an_explicit_loop_for_every_kernel():
    data = make_data(n=12, seed=0)
    x_train, y_train = data.x_train.double(), data.y_train.double()
    x_val = torch.linspace(-0.5, 5.5, 9, dtype=torch.float64)
    for name in ["gaussian", "constant", "epanechikov"]:
        y_hat, _ = nadaraya_watson(x_train, y_train, x_val, name, sigma=1.3)
        torch.testing.assert_close(y_hat, _loop_estimate(x_train, y_train, x_val, KERNELS[name], 1.3))
    y_hat, _ = nadaraya_watson(x_train, y_train, x_val[2:7], boxcar, sigma=2.0)  # every query has a key in range
    torch.testing.assert_close(y_hat, _loop_estimate(x_train, y_train, x_val[2:7], boxcar, 2.0))


def test_weights_are_laid_out_queries_by_keys_and_match_the_kernel_ratios():
    x_train = torch.tensor([0.0, 1.0, 3.0], dtype=torch.float64)
    y_train = torch.tensor([1.0, 2.0, 4.0], dtype=torch.float64)
    x_val = torch.tensor([0.0, 2.0], dtype=torch.float64)
    _, w = nadaraya_watson(x_train, y_train, x_val, "gaussian", sigma=1.0)
    assert w.shape == (2, 3)
    k = torch.tensor([[1.0, math.exp(-0.5), math.exp(-4.5)], [math.exp(-2), math.exp(-0.5), math.exp(-0.5)]])
    torch.testing.assert_close(w, (k / k.sum(1, keepdim=True)).double())


def test_constant_kernel_and_huge_bandwidth_give_the_mean():
    data = make_data(n=30, seed=1)
    y_hat, _ = nadaraya_watson(data.x_train, data.y_train, data.x_val, constant)
    torch.testing.assert_close(y_hat, data.y_train.mean().expand(50))
    y_hat, _ = nadaraya_watson(data.x_train.double(), data.y_train.double(), data.x_val, gaussian, sigma=1e4)
    torch.testing.assert_close(y_hat, data.y_train.double().mean().expand(50), rtol=0, atol=1e-6)


@pytest.mark.parametrize("sigma", [1e-3, 1e-9])  # weights still representable, then all underflowed
def test_tiny_bandwidth_gives_the_nearest_neighbour(sigma):
    x_train = torch.tensor([0.3, 1.1, 2.0, 2.6, 4.2])
    y_train = torch.tensor([5.0, -1.0, 2.0, 7.0, 3.0])
    x_val = torch.tensor([0.0, 0.72, 1.4, 2.25, 3.5, 9.0])
    nearest = torch.tensor([abs(x_train - q).argmin() for q in x_val.tolist()])
    for kernel in ["gaussian", "boxcar", "epanechikov"]:
        y_hat, w = nadaraya_watson(x_train, y_train, x_val, kernel, sigma=sigma)
        assert not torch.isnan(w).any(), f"{kernel}: NaN weights at sigma={sigma}"
        torch.testing.assert_close(y_hat, y_train[nearest], msg=f"{kernel} at sigma={sigma}")


def test_query_with_no_key_in_range_splits_between_equally_near_keys():
    y_hat, w = nadaraya_watson(torch.tensor([0.0, 1.0, 5.0]), torch.tensor([2.0, 4.0, 9.0]), [0.5], boxcar, 0.1)
    torch.testing.assert_close(w, torch.tensor([[0.5, 0.5, 0.0]]))
    torch.testing.assert_close(y_hat, torch.tensor([3.0]))


def test_vector_inputs_use_euclidean_distance_and_one_hot_values_give_class_probabilities():
    torch.manual_seed(0)
    x_train, x_val = torch.randn(7, 2, dtype=torch.float64), torch.randn(4, 2, dtype=torch.float64)
    labels = torch.tensor([0, 1, 2, 1, 0, 2, 2])
    y_train = torch.nn.functional.one_hot(labels, 3).double()
    probs, w = nadaraya_watson(x_train, y_train, x_val, gaussian, sigma=0.7)
    k = torch.exp(-(((x_val[:, None] - x_train[None]) ** 2).sum(-1)) / (2 * 0.7**2))  # (Q, 1, d) - (1, K, d) -> (Q, K)
    torch.testing.assert_close(w, k / k.sum(1, keepdim=True))
    assert probs.shape == (4, 3)
    torch.testing.assert_close(probs.sum(1), torch.ones(4, dtype=torch.float64))


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(2, 15),
    q=st.integers(1, 8),
    kernel=st.sampled_from(KERNEL_NAMES),
    sigma=st.floats(1e-4, 1e3),
    seed=st.integers(0, 2**16),
)
def test_weights_are_a_convex_combination(n, q, kernel, sigma, seed):
    g = torch.Generator().manual_seed(seed)
    x_train, y_train = torch.rand(n, generator=g) * 5, torch.randn(n, generator=g)
    x_val = torch.rand(q, generator=g) * 7 - 1
    y_hat, w = nadaraya_watson(x_train, y_train, x_val, kernel, sigma=sigma)
    assert w.shape == (q, n)
    assert (w >= 0).all()
    torch.testing.assert_close(w.sum(1), torch.ones(q))
    assert (y_hat >= y_train.min() - 1e-5).all() and (y_hat <= y_train.max() + 1e-5).all(), "a convex combination"


def _loo_by_loop(x, y, kernel, sigma):
    """Independent reference: refit without point i, predict x_i, for each i in turn."""
    errors = []
    for i in range(len(x)):
        keep = [j for j in range(len(x)) if j != i]
        y_hat, _ = nadaraya_watson(x[keep], y[keep], x[i : i + 1], kernel, sigma)
        errors.append(float(y_hat[0] - y[i]) ** 2)
    return sum(errors) / len(errors)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(2, 12), kernel=st.sampled_from(KERNEL_NAMES), sigma=st.floats(1e-3, 20), seed=st.integers(0, 999))
def test_vectorised_loo_matches_refitting_without_each_point(n, kernel, sigma, seed):
    g = torch.Generator().manual_seed(seed)
    x = (torch.rand(n, generator=g) * 5).double()
    y = torch.randn(n, generator=g).double()
    assert loo_loss(x, y, kernel, sigma) == pytest.approx(_loo_by_loop(x, y, kernel, sigma), rel=1e-9, abs=1e-12)


def test_leave_one_out_gives_each_point_zero_weight_on_itself():
    data = make_data(n=20, seed=2)
    _, w = nadaraya_watson(data.x_train, data.y_train, data.x_train, "gaussian", 0.01, exclude_self=True)
    assert torch.all(torch.diagonal(w) == 0)
    torch.testing.assert_close(w.sum(1), torch.ones(20))


def test_loo_selection_avoids_the_degenerate_tiny_bandwidth_that_training_error_prefers():
    data = make_data(n=60, noise=1.0, seed=0)
    sigmas = [1e-4, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 2.0, 5.0]
    train_mse = [
        float(((nadaraya_watson(data.x_train, data.y_train, data.x_train, gaussian, s)[0] - data.y_train) ** 2).mean())
        for s in sigmas
    ]
    assert train_mse[0] == pytest.approx(0.0, abs=1e-10), "with itself included, a tiny sigma copies each label"
    best, losses = select_bandwidth(data.x_train, data.y_train, gaussian, sigmas)
    assert losses == [loo_loss(data.x_train, data.y_train, gaussian, s) for s in sigmas]
    assert best == sigmas[losses.index(min(losses))]
    assert best > 1e-4, f"LOO must not choose the degenerate bandwidth; losses {losses}"
    assert 0.1 <= best <= 1.0, f"on D2L's data a moderate bandwidth should win, got {best}"
    val_mse, tiny_val_mse = (
        float(((nadaraya_watson(data.x_train, data.y_train, data.x_val, gaussian, s)[0] - data.y_val) ** 2).mean())
        for s in (best, 1e-4)
    )
    assert val_mse < tiny_val_mse, "the LOO choice should generalise better than the degenerate one"


def test_select_bandwidth_breaks_exact_ties_in_favour_of_the_first():
    """Documented tie rule: among bandwidths with the same least LOO loss, the first one listed wins."""
    x = torch.arange(10, dtype=torch.float64)
    y = torch.tensor([0.0, 1.0] * 5, dtype=torch.float64)  # alternating labels: the nearest neighbour is always wrong
    # A boxcar wider than the whole range (9) gives every other point the same weight: 20, 50 and 30 give the
    # very same weights, hence exactly equal losses, and those beat the narrow 0.3 (nearest neighbour only).
    sigmas = [0.3, 20.0, 50.0, 30.0]
    best, losses = select_bandwidth(x, y, "boxcar", sigmas)
    assert losses[1] == losses[2] == losses[3] < losses[0], (
        f"the construction needs exact ties at the minimum: {losses}"
    )
    assert best == 20.0, f"tied bandwidths 20, 50, 30 (in that order): the first, 20, must win, got {best}"
    # the constant kernel ignores sigma altogether: every bandwidth ties, and the first listed wins
    best, losses = select_bandwidth(x, y, constant, [3.0, 1.0, 2.0])
    assert len(set(losses)) == 1 and best == 3.0


def test_bad_inputs_raise_clear_errors():
    x, y = torch.rand(5), torch.rand(5)
    with pytest.raises(ValueError, match="positive finite"):
        nadaraya_watson(x, y, x, gaussian, sigma=0.0)
    with pytest.raises(ValueError, match="unknown kernel"):
        nadaraya_watson(x, y, x, "triangle")
    with pytest.raises(TypeError, match="kernel must be"):
        nadaraya_watson(x, y, x, 3)
    with pytest.raises(ValueError, match="one per key"):
        nadaraya_watson(x, torch.rand(4), x, gaussian)
    with pytest.raises(ValueError, match=r"shape \(n,\) or \(n, d\)"):
        nadaraya_watson(torch.rand(2, 2, 2), y, x, gaussian)
    with pytest.raises(ValueError, match="same feature size"):
        nadaraya_watson(torch.rand(5, 2), y, torch.rand(3, 3), gaussian)
    with pytest.raises(ValueError, match="training inputs themselves"):
        nadaraya_watson(x, y, x[:3], gaussian, exclude_self=True)
    with pytest.raises(ValueError, match="non-negative"):
        nadaraya_watson(x, y, x, lambda d: -torch.ones_like(d))
    with pytest.raises(ValueError, match="at least one bandwidth"):
        select_bandwidth(x, y, gaussian, [])
    with pytest.raises(ValueError, match="noise"):
        make_data(noise=-1.0)
