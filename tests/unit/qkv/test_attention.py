"""Tests of qkv.attention (D2L 11.3): masked softmax, scaled dot-product and additive attention."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.nn import functional as F

from qkv.attention import AdditiveAttention, DotProductAttention, masked_softmax, sequence_mask

SETTINGS = settings(max_examples=60, deadline=None)
DTYPES = st.sampled_from([torch.float32, torch.float64])
TOL = {torch.float32: 1e-5, torch.float64: 1e-10}


@st.composite
def scores_and_mask(draw, allow_empty: bool = True):
    """Random scores (B, Q, K), a masking argument in one of three forms, and the mask it means (built by loops)."""
    B, Q, K = draw(st.integers(1, 6)), draw(st.integers(1, 6)), draw(st.integers(1, 6))
    form = draw(st.sampled_from(["lens_B", "lens_BQ", "bool"]))
    low = 0 if allow_empty else 1
    keep = np.zeros((B, Q, K), dtype=bool)
    if form == "lens_B":
        lens = draw(st.lists(st.integers(low, K + 2), min_size=B, max_size=B))  # lengths past K mean "all"
        arg = torch.tensor(lens)
        for b in range(B):
            keep[b, :, : lens[b]] = True
    elif form == "lens_BQ":
        lens = draw(st.lists(st.lists(st.integers(low, K), min_size=Q, max_size=Q), min_size=B, max_size=B))
        arg = torch.tensor(lens)
        for b in range(B):
            for q in range(Q):
                keep[b, q, : lens[b][q]] = True
    else:
        flat = draw(st.lists(st.booleans(), min_size=B * Q * K, max_size=B * Q * K))
        keep = np.array(flat, dtype=bool).reshape(B, Q, K)
        if not allow_empty:
            keep[:, :, 0] = True
        arg = torch.from_numpy(keep.copy())
    dtype = draw(DTYPES)
    seed = draw(st.integers(0, 2**16))
    scale = draw(st.sampled_from([0.1, 1.0, 30.0]))
    X = torch.randn(B, Q, K, generator=torch.Generator().manual_seed(seed), dtype=dtype) * scale
    return X, arg, torch.from_numpy(keep)


def reference_masked_softmax(X: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """Softmax over the kept entries of each row, computed row by row; a row with nothing kept is uniform."""
    out = torch.zeros_like(X)
    B, Q, K = X.shape
    for b in range(B):
        for q in range(Q):
            idx = keep[b, q].nonzero().flatten()
            if len(idx) == 0:
                out[b, q] = 1.0 / K
            else:
                out[b, q, idx] = torch.softmax(X[b, q, idx], dim=0)
    return out


# ----------------------------------------------------------------------------- masked_softmax


@SETTINGS
@given(case=scores_and_mask())
def test_masked_softmax_properties(case):
    X, arg, keep = case
    W = masked_softmax(X, arg)
    assert W.shape == X.shape and W.dtype == X.dtype
    assert torch.isfinite(W).all()
    has_key = keep.any(-1)  # (B, Q)
    assert torch.all(W[~keep & has_key[..., None]] == 0), "masked entries must be exactly 0"
    torch.testing.assert_close(W.sum(-1), torch.ones_like(W.sum(-1)), atol=TOL[X.dtype], rtol=0)
    torch.testing.assert_close(W, reference_masked_softmax(X, keep), atol=TOL[X.dtype], rtol=0)
    # a row with no valid key is uniform
    torch.testing.assert_close(W[~has_key], torch.full_like(W[~has_key], 1 / X.shape[-1]), atol=0, rtol=0)


@SETTINGS
@given(case=scores_and_mask(), junk=st.sampled_from([-1e4, 1e4, 1e30, float("inf")]))
def test_masked_scores_change_nothing(case, junk):
    X, arg, keep = case
    changed = X.masked_fill(~keep, junk)
    torch.testing.assert_close(masked_softmax(changed, arg), masked_softmax(X, arg), atol=0, rtol=0)


@SETTINGS
@given(shape=st.tuples(st.integers(1, 6), st.integers(1, 6), st.integers(1, 6)), dtype=DTYPES, scale=st.floats(0.1, 50))
def test_no_mask_is_plain_softmax(shape, dtype, scale):
    X = torch.randn(*shape, dtype=dtype) * scale
    torch.testing.assert_close(masked_softmax(X), torch.softmax(X, dim=-1), atol=0, rtol=0)
    torch.testing.assert_close(masked_softmax(X, None), torch.softmax(X, dim=-1), atol=0, rtol=0)


def test_masked_softmax_hand_case_and_gradient():
    X = torch.tensor([[[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]]], requires_grad=True)  # (B=1, Q=2, K=3)
    W = masked_softmax(X, torch.tensor([[2, 0]]))
    e = math.e
    expected = torch.tensor([[[1 / (1 + e), e / (1 + e), 0.0], [1 / 3, 1 / 3, 1 / 3]]])
    torch.testing.assert_close(W, expected)
    (W * torch.randn(1, 2, 3)).sum().backward()
    assert X.grad[0, 0, 2] == 0 and torch.all(X.grad[0, 1] == 0), "masked scores must get no gradient"


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_masked_softmax_in_every_floating_dtype(dtype):
    """The docstring's promise in half precision too: masked keys exactly 0, finite weights, rows summing to 1."""
    X = torch.tensor([[[1.0, 2.0, 3.0, 4.0], [0.5, -0.5, 0.0, 2.0], [1.0, 1.0, 1.0, 1.0]]], dtype=dtype)  # (1, 3, 4)
    lens = torch.tensor([[2, 3, 0]])  # the last row has no valid key
    W = masked_softmax(X, lens)
    assert W.dtype == dtype and torch.isfinite(W).all(), f"{dtype}: weights must be finite, got {W}"
    assert (W[0, 0, 2:] == 0).all() and W[0, 1, 3] == 0, f"{dtype}: masked keys must get exactly 0, got {W}"
    expected = torch.zeros(3, 4, dtype=torch.float64)
    expected[0, :2] = torch.softmax(X[0, 0, :2].double(), dim=0)
    expected[1, :3] = torch.softmax(X[0, 1, :3].double(), dim=0)
    expected[2] = 0.25  # no valid key: uniform
    tol = {torch.float16: 1e-3, torch.bfloat16: 1e-2}.get(dtype, 1e-6)
    torch.testing.assert_close(W[0].double(), expected, atol=tol, rtol=0)
    torch.testing.assert_close(W.double().sum(-1), torch.ones(1, 3, dtype=torch.float64), atol=tol, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_valid_scores_far_below_minus_a_million_still_mask_exactly(dtype):
    """A masked key gets 0 and the valid keys their softmax among themselves, however negative the valid scores.

    A fill value such as -1e6 is not small enough: valid scores of -3e6 would then lose all their weight to the
    masked key. Only the most negative finite number of the dtype (or -inf) is below every finite score.
    """
    X = torch.tensor([[[-3e6, -3e6 + 1.0, 5.0], [-1e30, -1e30, -1e30]]], dtype=dtype)  # (1, 2, 3)
    W = masked_softmax(X, torch.tensor([2]))
    e = math.e
    expected = torch.tensor([[[1 / (1 + e), e / (1 + e), 0.0], [0.5, 0.5, 0.0]]], dtype=dtype)
    torch.testing.assert_close(W, expected, atol=TOL[dtype], rtol=0)
    assert (W[..., 2] == 0).all(), "the masked key must get exactly 0"


def test_sequence_mask():
    X = torch.arange(12.0).reshape(3, 4)
    out = sequence_mask(X, torch.tensor([1, 0, 4]), value=-1.0)
    expected = torch.tensor([[0.0, -1, -1, -1], [-1, -1, -1, -1], [8, 9, 10, 11]])
    torch.testing.assert_close(out, expected)
    assert X[1, 0] == 4.0, "the input is left unchanged"


# ----------------------------------------------------------------------------- dot-product attention


def sdpa_mask(lens: list, B: int, Q: int, K: int) -> torch.Tensor:
    """Boolean attn_mask (B, Q, K) for torch's SDPA from (B,) or (B, Q) lengths; True = may attend."""
    mask = torch.zeros(B, Q, K, dtype=torch.bool)
    for b in range(B):
        for q in range(Q):
            n = lens[b] if not isinstance(lens[b], list) else lens[b][q]
            for k in range(min(n, K)):
                mask[b, q, k] = True
    return mask


@SETTINGS
@given(
    B=st.integers(1, 4),
    Q=st.integers(1, 5),
    K=st.integers(1, 5),
    d=st.integers(1, 8),
    v=st.integers(1, 6),
    per_query=st.booleans(),
    dtype=DTYPES,
    data=st.data(),
)
def test_dot_product_matches_torch_sdpa(B, Q, K, d, v, per_query, dtype, data):
    torch.manual_seed(0)
    queries, keys = torch.randn(B, Q, d, dtype=dtype), torch.randn(B, K, d, dtype=dtype)
    values = torch.randn(B, K, v, dtype=dtype)
    if per_query:
        lens = data.draw(st.lists(st.lists(st.integers(1, K), min_size=Q, max_size=Q), min_size=B, max_size=B))
    else:
        lens = data.draw(st.lists(st.integers(1, K), min_size=B, max_size=B))
    attention = DotProductAttention(dropout=0.0).eval()
    out = attention(queries, keys, values, torch.tensor(lens))
    mask = sdpa_mask(lens, B, Q, K)
    expected = F.scaled_dot_product_attention(queries, keys, values, attn_mask=mask)
    torch.testing.assert_close(out, expected, atol=TOL[dtype], rtol=0)
    # the kept weights are those torch computes: softmax(Q K^T / sqrt(d)) on the kept keys
    scores = (queries @ keys.transpose(1, 2)) / math.sqrt(d)
    expected_w = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    torch.testing.assert_close(attention.attention_weights, expected_w, atol=TOL[dtype], rtol=0)
    # and no mask at all
    torch.testing.assert_close(
        attention(queries, keys, values), F.scaled_dot_product_attention(queries, keys, values), atol=TOL[dtype], rtol=0
    )


def test_dot_product_is_scaled_by_sqrt_d():
    """Hand case, d = 4: scores q.k / 2 are (2, 0), not the unscaled (4, 0)."""
    queries = torch.ones(1, 1, 4)
    keys = torch.stack([torch.ones(4), torch.zeros(4)])[None]  # (1, 2, 4)
    values = torch.tensor([[[1.0], [0.0]]])  # (1, 2, 1)
    attention = DotProductAttention()
    out = attention(queries, keys, values)
    scaled = math.exp(2) / (math.exp(2) + 1)
    unscaled = math.exp(4) / (math.exp(4) + 1)
    assert out.item() == pytest.approx(scaled, abs=1e-6)
    assert abs(out.item() - unscaled) > 1e-2, "an attention without the 1/sqrt(d) factor would give this"
    torch.testing.assert_close(attention.attention_weights, torch.tensor([[[scaled, 1 - scaled]]]))
    # and against torch with a different explicit scale the result differs
    unscaled_torch = F.scaled_dot_product_attention(queries, keys, values, scale=1.0)
    assert not torch.allclose(out, unscaled_torch)


def test_dot_product_dropout_train_and_eval():
    torch.manual_seed(0)
    B, Q, K = 4, 6, 8
    queries, keys = torch.randn(B, Q, 5), torch.randn(B, K, 5)
    values = torch.eye(K).expand(B, K, K)  # output = (dropped) weights themselves
    attention = DotProductAttention(dropout=0.5)
    attention.train()
    out = attention(queries, keys, values)
    weights = attention.attention_weights
    torch.testing.assert_close(weights.sum(-1), torch.ones(B, Q), msg="stored weights are taken before dropout")
    dropped = out == 0
    assert 0.25 < dropped.float().mean() < 0.75
    torch.testing.assert_close(out[~dropped], 2 * weights[~dropped])
    attention.eval()
    torch.testing.assert_close(attention(queries, keys, values), attention.attention_weights)
    torch.testing.assert_close(attention(queries, keys, values), weights)


# ----------------------------------------------------------------------------- additive attention


def reference_additive(att: AdditiveAttention, queries, keys, values, lens) -> torch.Tensor:
    """w_v . tanh(W_q q + W_k k) for every (query, key) pair by loops, a masked softmax by loops, then the sum."""
    W_q, W_k, w_v = att.W_q.weight, att.W_k.weight, att.w_v.weight[0]  # (N, d_q), (N, d_k), (N,)
    B, Q, K = queries.shape[0], queries.shape[1], keys.shape[1]
    out = torch.zeros(B, Q, values.shape[-1], dtype=queries.dtype)
    for b in range(B):
        for i in range(Q):
            n = K if lens is None else min(int(lens[b]), K)
            scores = torch.stack([w_v @ torch.tanh(W_q @ queries[b, i] + W_k @ keys[b, k]) for k in range(n)])
            weights = torch.softmax(scores, dim=0)
            out[b, i] = sum(weights[k] * values[b, k] for k in range(n))
    return out


@pytest.mark.parametrize("lens", [None, [2, 5, 1]])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_additive_matches_loop_reference(lens, dtype):
    torch.manual_seed(0)
    B, Q, K, d_q, d_k, v = 3, 4, 5, 3, 7, 2  # queries and keys of different sizes
    queries, keys = torch.randn(B, Q, d_q, dtype=dtype), torch.randn(B, K, d_k, dtype=dtype)
    values = torch.randn(B, K, v, dtype=dtype)
    att = AdditiveAttention(6, dropout=0.0, query_size=d_q, key_size=d_k).to(dtype).eval()
    valid_lens = None if lens is None else torch.tensor(lens)
    with torch.no_grad():
        out = att(queries, keys, values, valid_lens)
        expected = reference_additive(att, queries, keys, values, lens)
    torch.testing.assert_close(out, expected, atol=TOL[dtype], rtol=0)
    assert att.attention_weights.shape == (B, Q, K)
    if lens is not None:
        assert att.attention_weights[0, :, 2:].abs().max() == 0


def test_additive_eager_and_lazy_agree():
    torch.manual_seed(0)
    queries, keys, values = torch.randn(2, 3, 4), torch.randn(2, 5, 6), torch.randn(2, 5, 3)
    valid_lens = torch.tensor([[1, 2, 5], [5, 4, 3]])
    lazy = AdditiveAttention(8)
    lazy(queries, keys, values, valid_lens)  # infers the input sizes
    eager = AdditiveAttention(8, query_size=4, key_size=6)
    assert all(not isinstance(p, torch.nn.parameter.UninitializedParameter) for p in eager.parameters())
    eager.load_state_dict(lazy.state_dict())
    torch.testing.assert_close(eager(queries, keys, values, valid_lens), lazy(queries, keys, values, valid_lens))
    assert lazy.W_q.weight.shape == (8, 4) and lazy.W_k.weight.shape == (8, 6) and lazy.w_v.weight.shape == (1, 8)


def test_additive_dropout_train_and_eval():
    torch.manual_seed(0)
    att = AdditiveAttention(4, dropout=0.5, query_size=2, key_size=2)
    queries, keys, values = torch.randn(2, 5, 2), torch.randn(2, 6, 2), torch.eye(6).expand(2, 6, 6)
    att.eval()
    torch.testing.assert_close(att(queries, keys, values), att.attention_weights)
    att.train()
    out = att(queries, keys, values)
    assert (out == 0).any() and not torch.allclose(out, att.attention_weights)


# ----------------------------------------------------------------------------- errors


def test_errors():
    dot, add = DotProductAttention(), AdditiveAttention(4, query_size=3, key_size=3)
    q, k, v = torch.randn(2, 3, 3), torch.randn(2, 4, 3), torch.randn(2, 4, 5)
    with pytest.raises(ValueError, match="same size d"):
        dot(q, torch.randn(2, 4, 2), v)
    for att in (dot, add):
        with pytest.raises(ValueError, match="4 keys but 3 values"):
            att(q, k, torch.randn(2, 3, 5))
        with pytest.raises(TypeError, match="integer lengths"):
            att(q, k, v, torch.tensor([1.0, 2.0]))
        with pytest.raises(ValueError, match="B = 2"):
            att(q, k, v, torch.tensor([1, 2, 3]))
        with pytest.raises(ValueError, match=r"\(2, 3\)"):
            att(q, k, v, torch.ones(2, 4, dtype=torch.long))
        with pytest.raises(ValueError, match=r"shape \(B,\) or \(B, Q\)"):
            att(q, k, v, torch.ones(2, 3, 4, dtype=torch.long))
        with pytest.raises(ValueError, match="broadcast"):
            att(q, k, v, torch.ones(2, 3, 5, dtype=torch.bool))
        with pytest.raises(TypeError, match="torch.tensor"):
            att(q, k, v, [1, 2])
    with pytest.raises(ValueError, match=r"\(B, Q, K\)"):
        masked_softmax(torch.randn(3, 4))
