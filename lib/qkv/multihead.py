"""Multi-head attention (D2L 11.5).

Each of ``num_heads`` heads projects the queries, keys and values to
``num_hiddens / num_heads`` features, attends with scaled dot products, and the
heads' outputs are concatenated and projected once more. The heads are not a
Python loop: they are folded into the batch axis (``transpose_qkv``), attended
in one batched product, and unfolded (``transpose_output``).
Grouped-query attention (beyond D2L: Ainslie et al., 2023) shares each key/value
head among a group of query heads; :func:`grouped_query_attention` and
:func:`attention_costs` are the references of section 11.5's exercises on it.
Shape letters are those of the glossary in :mod:`qkv`; ``G`` is the number of
key/value heads and ``r = H / G`` the query heads per group.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from qkv.attention import DotProductAttention, _linear, masked_softmax

__all__ = [
    "transpose_qkv",
    "transpose_output",
    "repeat_for_heads",
    "MultiHeadAttention",
    "grouped_query_attention",
    "attention_costs",
]


def transpose_qkv(X: torch.Tensor, num_heads: int) -> torch.Tensor:
    """Split the last axis into heads and fold them into the batch (D2L 11.5.2).

    (B, T, N) -> (B * H, T, N / H); head ``j`` of example ``b`` lands at row ``b * H + j``.
    """
    B, T, N = X.shape
    if N % num_heads:
        raise ValueError(f"num_hiddens = {N} is not divisible by num_heads = {num_heads}")
    X = X.reshape(B, T, num_heads, N // num_heads)  # (B, T, H, h)
    X = X.permute(0, 2, 1, 3)  # (B, H, T, h)
    return X.reshape(B * num_heads, T, N // num_heads)  # (B * H, T, h)


def transpose_output(X: torch.Tensor, num_heads: int) -> torch.Tensor:
    """Undo :func:`transpose_qkv`: (B * H, T, h) -> (B, T, H * h) (D2L 11.5.2)."""
    BH, T, h = X.shape
    X = X.reshape(BH // num_heads, num_heads, T, h)  # (B, H, T, h)
    X = X.permute(0, 2, 1, 3)  # (B, T, H, h)
    return X.reshape(BH // num_heads, T, num_heads * h)  # (B, T, N)


def repeat_for_heads(valid_lens: torch.Tensor | None, num_heads: int) -> torch.Tensor | None:
    """Repeat lengths (B,) / (B, Q), or a boolean mask (B, Q, K), once per head, in
    the order of :func:`transpose_qkv` (D2L 11.5.2). A mask without a batch axis
    (Q, K), or with a batch axis of size 1 (1, Q, K), broadcasts as it is."""
    if valid_lens is None:
        return None
    if valid_lens.dtype == torch.bool and (valid_lens.dim() < 3 or valid_lens.shape[0] == 1):
        return valid_lens  # no batch axis, or a batch axis of 1: broadcasts over B * H as it is
    return torch.repeat_interleave(valid_lens, repeats=num_heads, dim=0)  # (B, ...) -> (B * H, ...)


class MultiHeadAttention(nn.Module):
    """Multi-head scaled dot-product attention (D2L 11.5.2).

    ``MultiHeadAttention(num_hiddens, num_heads, dropout, bias=False)`` called as
    ``(queries, keys, values, valid_lens)``: queries (B, Q, d_q), keys (B, K, d_k),
    values (B, K, d_v) -> (B, Q, N). ``W_q, W_k, W_v, W_o`` each map to
    ``num_hiddens`` features; their input sizes are inferred on the first call
    (as in D2L) unless ``query_size``, ``key_size`` and ``value_size`` are given.
    ``self.attention.attention_weights`` holds the last weights, (B * H, Q, K).
    """

    def __init__(
        self,
        num_hiddens: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = False,
        *,
        query_size=None,
        key_size=None,
        value_size=None,
    ):
        super().__init__()
        if num_hiddens % num_heads:
            raise ValueError(f"num_hiddens = {num_hiddens} must be divisible by num_heads = {num_heads}")
        self.num_heads = num_heads
        self.attention = DotProductAttention(dropout)
        self.W_q = _linear(query_size, num_hiddens, bias)
        self.W_k = _linear(key_size, num_hiddens, bias)
        self.W_v = _linear(value_size, num_hiddens, bias)
        self.W_o = _linear(num_hiddens, num_hiddens, bias)

    def forward(self, queries, keys, values, valid_lens=None):
        """queries (B, Q, d_q), keys (B, K, d_k), values (B, K, d_v), valid_lens (B,) / (B, Q) -> (B, Q, N)."""
        if isinstance(valid_lens, torch.Tensor) and valid_lens.dtype != torch.bool:
            B, Q = queries.shape[0], queries.shape[1]
            if tuple(valid_lens.shape) not in {(B,), (B, Q)}:  # check before the lengths are repeated per head
                raise ValueError(
                    f"valid_lens must have shape (B,) = {(B,)} or (B, Q) = {(B, Q)}, got {tuple(valid_lens.shape)}"
                )
        queries = transpose_qkv(self.W_q(queries), self.num_heads)  # (B * H, Q, h)
        keys = transpose_qkv(self.W_k(keys), self.num_heads)  # (B * H, K, h)
        values = transpose_qkv(self.W_v(values), self.num_heads)  # (B * H, K, h)
        valid_lens = repeat_for_heads(valid_lens, self.num_heads)
        output = self.attention(queries, keys, values, valid_lens)  # (B * H, Q, h)
        return self.W_o(transpose_output(output, self.num_heads))  # (B, Q, N) -> (B, Q, N)


def grouped_query_attention(queries, keys, values, valid_lens=None):
    """Scaled dot-product attention with key/value heads shared by groups of query heads (D2L 11.5, beyond D2L).

    queries (B, H, Q, h), keys (B, G, K, h), values (B, G, K, v) with ``H`` a multiple of ``G``; query head ``i``
    attends with key/value head ``i // (H / G)``, the grouping of
    ``torch.nn.functional.scaled_dot_product_attention(..., enable_gqa=True)``. ``G = H`` is multi-head attention,
    ``G = 1`` multi-query attention. ``valid_lens``: ``None``, lengths (B,) or (B, Q), shared by all heads.
    Returns (B, H, Q, v). The keys and values are never copied per query head: the queries of a group are
    stacked instead, so one batched product serves the whole group.
    """
    B, H, Q, h = queries.shape
    G, K = keys.shape[1], keys.shape[2]
    if H % G:
        raise ValueError(f"the {H} query heads must split evenly among the {G} key/value heads")
    r = H // G
    grouped = queries.reshape(B, G, r * Q, h)  # (B, H, Q, h) -> (B, G, r * Q, h): heads i*r .. i*r + r-1 in group i
    scores = grouped @ keys.transpose(-1, -2) / math.sqrt(h)  # (B, G, rQ, h) @ (B, G, h, K) -> (B, G, rQ, K)
    if valid_lens is not None and valid_lens.dim() == 2:
        valid_lens = valid_lens[:, None, :].expand(B, H, Q).reshape(B, H * Q)  # (B, Q) -> (B, H * Q)
    weights = masked_softmax(scores.reshape(B, H * Q, K), valid_lens)  # (B, H * Q, K)
    out = weights.reshape(B, G, r * Q, K) @ values  # (B, G, rQ, K) @ (B, G, K, v) -> (B, G, rQ, v)
    return out.reshape(B, H, Q, values.shape[-1])  # (B, G, r * Q, v) -> (B, H, Q, v)


def attention_costs(
    num_hiddens: int,
    num_heads: int,
    num_kv_heads: int,
    seq_len: int,
    batch_size: int = 1,
    num_layers: int = 1,
    bytes_per_number: int = 2,
) -> tuple[int, int]:
    """Parameters of the attention layers and bytes of their key/value cache (D2L 11.5, beyond D2L).

    Each of ``num_layers`` layers has ``num_heads`` query heads of size ``h = num_hiddens / num_heads`` and
    ``num_kv_heads`` key/value heads of the same size, projections without bias from and to ``num_hiddens``
    features: W_q and W_o are N x N, W_k and W_v map N features to G h (weights G h x N, as ``nn.Linear`` stores
    them). The cache keeps, for every layer, token and example, the keys and the values of the G key/value heads.
    Returns ``(parameters, cache_bytes)``.
    """
    if num_hiddens % num_heads or num_heads % num_kv_heads:
        raise ValueError(
            f"num_hiddens = {num_hiddens} must split into num_heads = {num_heads} heads, "
            f"and those into num_kv_heads = {num_kv_heads} groups"
        )
    kv_width = num_kv_heads * (num_hiddens // num_heads)  # G * h features of keys, and as many of values
    parameters = num_layers * (2 * num_hiddens * num_hiddens + 2 * num_hiddens * kv_width)
    cache_bytes = num_layers * batch_size * seq_len * 2 * kv_width * bytes_per_number
    return parameters, cache_bytes
