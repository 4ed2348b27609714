"""Tests of qkv.multihead (D2L 11.5): head folding, multi-head attention against torch.nn.MultiheadAttention, and
grouped-query attention against scaled_dot_product_attention(enable_gqa=True)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn
from torch.nn import functional as F

from qkv.multihead import (
    MultiHeadAttention,
    attention_costs,
    grouped_query_attention,
    repeat_for_heads,
    transpose_output,
    transpose_qkv,
)

SETTINGS = settings(max_examples=30, deadline=None)
TOL = {torch.float32: 1e-5, torch.float64: 1e-10}


# ----------------------------------------------------------------------------- folding heads into the batch


@SETTINGS
@given(B=st.integers(1, 4), T=st.integers(1, 5), H=st.integers(1, 4), h=st.integers(1, 4))
def test_transpose_qkv_layout_and_round_trip(B, T, H, h):
    X = torch.randn(B, T, H * h)
    Y = transpose_qkv(X, H)
    assert Y.shape == (B * H, T, h)
    for b in range(B):
        for j in range(H):
            # head j of example b is at row b * H + j and holds features j*h .. (j+1)*h - 1
            assert torch.equal(Y[b * H + j], X[b, :, j * h : (j + 1) * h])
    assert torch.equal(transpose_output(Y, H), X)
    Z = torch.randn(B * H, T, h)
    assert torch.equal(transpose_qkv(transpose_output(Z, H), H), Z)


def test_repeat_for_heads_follows_the_head_order():
    lens = torch.tensor([3, 1])
    assert repeat_for_heads(lens, 3).tolist() == [3, 3, 3, 1, 1, 1]
    per_query = torch.tensor([[1, 2], [3, 4]])
    assert repeat_for_heads(per_query, 2).tolist() == [[1, 2], [1, 2], [3, 4], [3, 4]]
    assert repeat_for_heads(None, 4) is None
    causal = torch.ones(3, 3, dtype=torch.bool).tril()
    assert repeat_for_heads(causal, 4) is causal  # no batch axis: broadcasts as it is
    assert repeat_for_heads(causal[None], 4).shape == (1, 3, 3)


def test_transpose_qkv_rejects_indivisible_width():
    with pytest.raises(ValueError, match="not divisible"):
        transpose_qkv(torch.zeros(2, 3, 10), 3)


# ----------------------------------------------------------------------------- against torch.nn.MultiheadAttention


def make_pair(N, H, bias, kdim=None, vdim=None, dtype=torch.float32, lazy=False):
    """Our MultiHeadAttention and torch's, with the same weights. Queries have N features (torch requires it)."""
    torch.manual_seed(0)
    kdim, vdim = kdim or N, vdim or N
    if lazy:
        ours = MultiHeadAttention(N, H, dropout=0.0, bias=bias)
        ours(torch.zeros(1, 1, N), torch.zeros(1, 1, kdim), torch.zeros(1, 1, vdim))  # infer the input sizes
    else:
        ours = MultiHeadAttention(N, H, dropout=0.0, bias=bias, query_size=N, key_size=kdim, value_size=vdim)
    if bias:  # make the biases non-zero so that a dropped bias shows
        for layer in (ours.W_q, ours.W_k, ours.W_v, ours.W_o):
            nn.init.normal_(layer.bias)
    ref = nn.MultiheadAttention(N, H, bias=bias, batch_first=True, kdim=kdim, vdim=vdim)
    with torch.no_grad():
        if ref._qkv_same_embed_dim:
            ref.in_proj_weight.copy_(torch.cat([ours.W_q.weight, ours.W_k.weight, ours.W_v.weight]))
        else:
            ref.q_proj_weight.copy_(ours.W_q.weight)
            ref.k_proj_weight.copy_(ours.W_k.weight)
            ref.v_proj_weight.copy_(ours.W_v.weight)
        ref.out_proj.weight.copy_(ours.W_o.weight)
        if bias:
            ref.in_proj_bias.copy_(torch.cat([ours.W_q.bias, ours.W_k.bias, ours.W_v.bias]))
            ref.out_proj.bias.copy_(ours.W_o.bias)
    return ours.to(dtype).eval(), ref.to(dtype).eval()


def padding_mask(lens, K):
    """torch's key_padding_mask (B, K): True marks a key to ignore."""
    mask = torch.zeros(len(lens), K, dtype=torch.bool)
    for b, n in enumerate(lens):
        mask[b, n:] = True
    return mask


def per_query_attn_mask(lens, H, K):
    """torch's attn_mask (B * H, Q, K) from lengths (B, Q): True marks a pair not allowed; row b * H + j."""
    B, Q = len(lens), len(lens[0])
    mask = torch.zeros(B * H, Q, K, dtype=torch.bool)
    for b in range(B):
        for j in range(H):
            for q in range(Q):
                mask[b * H + j, q, lens[b][q] :] = True
    return mask


def check_against_torch(ours, ref, queries, keys, values, valid_lens, tol, **torch_masks):
    out = ours(queries, keys, values, valid_lens)
    expected, expected_w = ref(queries, keys, values, need_weights=True, average_attn_weights=True, **torch_masks)
    torch.testing.assert_close(out, expected, atol=tol, rtol=0)
    B, Q, K = queries.shape[0], queries.shape[1], keys.shape[1]
    weights = ours.attention.attention_weights.reshape(B, ours.num_heads, Q, K)  # (B * H, Q, K) -> (B, H, Q, K)
    torch.testing.assert_close(weights.mean(1), expected_w, atol=tol, rtol=0)
    _, per_head = ref(queries, keys, values, need_weights=True, average_attn_weights=False, **torch_masks)
    torch.testing.assert_close(weights, per_head, atol=tol, rtol=0)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("kv_dims", [(None, None), (5, 7)])
def test_matches_torch_with_key_padding(bias, dtype, kv_dims):
    kdim, vdim = kv_dims
    B, Q, K, N, H = 3, 4, 6, 12, 3
    ours, ref = make_pair(N, H, bias, kdim, vdim, dtype)
    queries = torch.randn(B, Q, N, dtype=dtype)
    keys, values = torch.randn(B, K, kdim or N, dtype=dtype), torch.randn(B, K, vdim or N, dtype=dtype)
    lens = [2, 6, 1]
    check_against_torch(
        ours, ref, queries, keys, values, torch.tensor(lens), TOL[dtype], key_padding_mask=padding_mask(lens, K)
    )
    check_against_torch(ours, ref, queries, keys, values, None, TOL[dtype])


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("kv_dims", [(None, None), (10, 3)])
def test_matches_torch_with_per_query_lengths(bias, kv_dims):
    kdim, vdim = kv_dims
    B, Q, K, N, H = 2, 5, 5, 8, 4
    ours, ref = make_pair(N, H, bias, kdim, vdim)
    X = torch.randn(B, Q, N)
    keys, values = (X, X) if kdim is None else (torch.randn(B, K, kdim), torch.randn(B, K, vdim))
    lens = [[1, 2, 3, 4, 5], [3, 1, 5, 2, 4]]
    check_against_torch(ours, ref, X, keys, values, torch.tensor(lens), 1e-5, attn_mask=per_query_attn_mask(lens, H, K))


@pytest.mark.parametrize("batched", [False, True])
def test_matches_torch_with_boolean_causal_mask(batched):
    B, T, N, H = 3, 5, 8, 2
    ours, ref = make_pair(N, H, bias=True)
    X = torch.randn(B, T, N)
    causal = torch.ones(T, T, dtype=torch.bool).tril()  # True: may attend
    ours_mask = causal[None] if batched else causal  # (1, T, T) or (T, T)
    check_against_torch(ours, ref, X, X, X, ours_mask, 1e-5, attn_mask=~causal)
    full = causal.expand(B, T, T).clone()
    full[1, :, 3:] = False  # (B, T, T) with a different mask for example 1
    torch_mask = (~full).repeat_interleave(H, dim=0)  # (B, T, T) -> (B * H, T, T)
    check_against_torch(ours, ref, X, X, X, full, 1e-5, attn_mask=torch_mask)


def test_lazy_form_matches_torch():
    B, Q, K, N, H = 2, 3, 4, 6, 2
    ours, ref = make_pair(N, H, bias=True, kdim=5, vdim=3, lazy=True)
    assert ours.W_k.weight.shape == (N, 5) and ours.W_v.weight.shape == (N, 3)
    queries, keys, values = torch.randn(B, Q, N), torch.randn(B, K, 5), torch.randn(B, K, 3)
    lens = [4, 2]
    check_against_torch(
        ours, ref, queries, keys, values, torch.tensor(lens), 1e-5, key_padding_mask=padding_mask(lens, K)
    )


# ----------------------------------------------------------------------------- structure, dropout, errors


def test_heads_are_batched_not_separate_modules():
    mha = MultiHeadAttention(16, 4, query_size=16, key_size=16, value_size=16)
    linears = [m for m in mha.modules() if isinstance(m, nn.Linear)]
    assert len(linears) == 4, "one projection each for queries, keys, values and output, shared by all heads"
    assert all(m.weight.shape == (16, 16) for m in linears)
    assert not any(isinstance(m, (nn.ModuleList, nn.ModuleDict)) for m in mha.modules())
    out = mha(torch.randn(2, 3, 16), torch.randn(2, 5, 16), torch.randn(2, 5, 16))
    assert out.shape == (2, 3, 16)
    assert mha.attention.attention_weights.shape == (2 * 4, 3, 5)


def test_dropout_train_and_eval():
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2, dropout=0.5, query_size=8, key_size=8, value_size=8)
    X = torch.randn(2, 6, 8)
    mha.eval()
    first, second = mha(X, X, X), mha(X, X, X)
    torch.testing.assert_close(first, second)
    mha.train()
    assert not torch.allclose(mha(X, X, X), first)


def test_errors():
    with pytest.raises(ValueError, match="divisible"):
        MultiHeadAttention(10, 3)
    mha = MultiHeadAttention(8, 2, query_size=8, key_size=8, value_size=8)
    X = torch.randn(2, 3, 8)
    with pytest.raises(ValueError, match=r"\(B,\) = \(2,\)"):
        mha(X, X, X, torch.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match=r"\(B, Q\) = \(2, 3\)"):
        mha(X, X, X, torch.ones(2, 4, dtype=torch.long))
    with pytest.raises(TypeError, match="integer lengths"):
        mha(X, X, X, torch.tensor([1.0, 2.0]))


# ----------------------------------------------------------------------------- grouped-query attention (beyond D2L)


@SETTINGS
@given(
    B=st.integers(1, 3),
    G=st.integers(1, 3),
    r=st.integers(1, 3),
    Q=st.integers(1, 4),
    K=st.integers(1, 5),
    h=st.integers(1, 4),
    v=st.integers(1, 3),
    per_query=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_grouped_query_attention_matches_torch_enable_gqa(B, G, r, Q, K, h, v, per_query, seed):
    g = torch.Generator().manual_seed(seed)
    H = G * r
    queries = torch.randn(B, H, Q, h, generator=g, dtype=torch.float64)
    keys = torch.randn(B, G, K, h, generator=g, dtype=torch.float64)
    values = torch.randn(B, G, K, v, generator=g, dtype=torch.float64)
    lens = torch.randint(1, K + 1, (B, Q) if per_query else (B,), generator=g)
    keep = torch.arange(K) < (lens[..., None] if per_query else lens[:, None, None])  # (B, Q or 1, K)
    expected = F.scaled_dot_product_attention(queries, keys, values, attn_mask=keep[:, None], enable_gqa=True)
    torch.testing.assert_close(grouped_query_attention(queries, keys, values, lens), expected, atol=1e-12, rtol=0)
    unmasked = F.scaled_dot_product_attention(queries, keys, values, enable_gqa=True)
    torch.testing.assert_close(grouped_query_attention(queries, keys, values), unmasked, atol=1e-12, rtol=0)


def test_grouped_query_attention_with_G_equal_H_is_multi_head_attention():
    """G = H: every query head has its own key/value head, the heads of qkv's MultiHeadAttention."""
    B, Q, K, N, H = 2, 3, 4, 12, 3
    mha = MultiHeadAttention(N, H, query_size=N, key_size=N, value_size=N).double().eval()
    X, Y = torch.randn(B, Q, N, dtype=torch.float64), torch.randn(B, K, N, dtype=torch.float64)
    lens = torch.tensor([2, 4])
    out = mha(X, Y, Y, lens)
    split = [
        transpose_qkv(layer(Z), H).reshape(B, H, -1, N // H) for layer, Z in ((mha.W_q, X), (mha.W_k, Y), (mha.W_v, Y))
    ]
    heads = grouped_query_attention(*split, lens)  # (B, H, Q, h)
    torch.testing.assert_close(mha.W_o(transpose_output(heads.reshape(B * H, Q, N // H), H)), out)


def test_grouped_query_attention_copies_no_keys():
    """The reference stacks the queries of a group instead of repeating keys and values per query head."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Largest(TorchDispatchMode):
        largest = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            for t in out if isinstance(out, tuple | list) else (out,):
                if isinstance(t, torch.Tensor):
                    Largest.largest = max(Largest.largest, t.untyped_storage().nbytes())
            return out

    B, H, G, Q, K, h = 1, 16, 1, 2, 512, 8
    queries, keys = torch.randn(B, H, Q, h), torch.randn(B, G, K, h)
    with Largest():
        grouped_query_attention(queries, keys, keys)
    assert Largest.largest < H * K * h * 4, "no tensor as large as the keys repeated for every query head"


def test_grouped_query_attention_rejects_uneven_groups():
    with pytest.raises(ValueError, match="split evenly"):
        grouped_query_attention(torch.zeros(1, 4, 2, 3), torch.zeros(1, 3, 2, 3), torch.zeros(1, 3, 2, 3))


@pytest.mark.parametrize(("N", "H", "G"), [(64, 8, 8), (64, 8, 2), (64, 8, 1), (4096, 32, 8)])
def test_attention_costs_count_real_layers(N, H, G):
    """Parameters of bias-free projections built on the meta device; cache = the numbers of keys and values."""
    h = N // H
    layers = [nn.Linear(N, N, bias=False, device="meta"), nn.Linear(N, G * h, bias=False, device="meta")]
    params, cache = attention_costs(N, H, G, seq_len=1000, batch_size=3, num_layers=5, bytes_per_number=2)
    assert params == 5 * 2 * sum(layer.weight.numel() for layer in layers)
    keys = torch.zeros(3, 1000, G, h, device="meta")  # (B, T, G, h): one layer's keys; as many values
    assert cache == 5 * 2 * keys.numel() * 2
    mha_params, mha_cache = attention_costs(N, H, H, seq_len=1000, batch_size=3, num_layers=5)
    assert mha_cache * G == cache * H, "the cache shrinks by exactly G / H"


def test_attention_costs_rejects_bad_shapes():
    with pytest.raises(ValueError, match="num_kv_heads"):
        attention_costs(64, 8, 3, 10)
    with pytest.raises(ValueError, match="num_heads"):
        attention_costs(60, 8, 1, 10)
