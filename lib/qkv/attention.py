"""Attention scoring functions (D2L 11.3).

An attention layer scores every query against every key, turns the scores of
each query into weights with a softmax that ignores padding, and returns the
weighted sum of the values:

    attention(q, k_i, v_i) = sum_i softmax_i(a(q, k_i)) v_i

Two scoring functions ``a`` are provided: the scaled dot product
``q.k / sqrt(d)`` and the additive score ``w_v . tanh(W_q q + W_k k)``.
Shape letters are those of the glossary in :mod:`qkv`.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

__all__ = [
    "sequence_mask",
    "valid_mask",
    "masked_softmax",
    "DotProductAttention",
    "AdditiveAttention",
]


def sequence_mask(X: torch.Tensor, valid_len: torch.Tensor, value: float = 0.0) -> torch.Tensor:
    """Replace the entries of each row of ``X`` past its valid length by ``value`` (D2L 11.3.2.1).

    ``X`` has shape (R, K) and ``valid_len`` shape (R,): row ``r`` keeps its
    first ``valid_len[r]`` entries. Returns a new tensor; ``X`` is unchanged.
    """
    K = X.size(1)
    keep = torch.arange(K, device=X.device)[None, :] < valid_len[:, None]  # (1, K) < (R, 1) -> (R, K)
    return X.masked_fill(~keep, value)


def valid_mask(valid_lens: torch.Tensor | None, shape: torch.Size, device=None) -> torch.Tensor | None:
    """Boolean mask of shape ``shape`` = (B, Q, K), True where a key may be attended (D2L 11.3).

    ``valid_lens`` may be ``None`` (every key is valid), a tensor of shape (B,)
    (the same length for every query of an example), a tensor of shape (B, Q)
    (one length per query, as in a causal decoder), or already a boolean mask
    broadcastable to (B, Q, K) where True means "keep".
    """
    if valid_lens is None:
        return None
    if not isinstance(valid_lens, torch.Tensor):
        raise TypeError(
            f"valid_lens must be None or a tensor, got {type(valid_lens).__name__}; "
            "wrap the lengths with torch.tensor(...)"
        )
    B, Q, K = shape
    if valid_lens.dtype == torch.bool:
        try:
            return valid_lens.to(device).expand(B, Q, K)
        except RuntimeError as err:
            raise ValueError(
                f"a boolean attention mask must broadcast to the scores' shape (B, Q, K) = "
                f"{(B, Q, K)}; got a mask of shape {tuple(valid_lens.shape)}"
            ) from err
    if valid_lens.is_floating_point() or valid_lens.is_complex():
        raise TypeError(
            f"valid_lens must hold integer lengths (or be a boolean mask), got dtype {valid_lens.dtype}; "
            "convert it with valid_lens.long()"
        )
    if valid_lens.dim() == 1:
        if valid_lens.shape[0] != B:
            raise ValueError(f"valid_lens of shape (B,) must have B = {B} entries, got {valid_lens.shape[0]}")
        lens = valid_lens[:, None].expand(B, Q)  # (B,) -> (B, Q)
    elif valid_lens.dim() == 2:
        if tuple(valid_lens.shape) != (B, Q):
            raise ValueError(
                f"valid_lens of shape (B, Q) must be {(B, Q)} for scores of shape {(B, Q, K)}, "
                f"got {tuple(valid_lens.shape)}"
            )
        lens = valid_lens
    else:
        raise ValueError(
            f"valid_lens must have shape (B,) or (B, Q), or be a boolean mask; got shape {tuple(valid_lens.shape)}"
        )
    lens = lens.to(device)
    return torch.arange(K, device=device)[None, None, :] < lens[:, :, None]  # (1, 1, K) < (B, Q, 1) -> (B, Q, K)


def masked_softmax(X: torch.Tensor, valid_lens: torch.Tensor | None = None) -> torch.Tensor:
    """Softmax over the last axis of ``X`` that gives zero weight to masked keys (D2L 11.3.2.1).

    Args:
        X: scores of shape (B, Q, K).
        valid_lens: ``None``; lengths of shape (B,) or (B, Q); or a boolean
            mask broadcastable to (B, Q, K), True where a key counts.

    Returns:
        Weights of shape (B, Q, K). Each row sums to 1; entries past a row's
        valid length are exactly 0, so the values there cannot leak into the
        output. A row with no valid key (length 0) gets uniform weights, as in
        D2L, rather than NaN.
    """
    if X.dim() != 3:
        raise ValueError(f"masked_softmax expects scores of shape (B, Q, K), got shape {tuple(X.shape)}")
    mask = valid_mask(valid_lens, X.shape, device=X.device)
    if mask is None:
        return F.softmax(X, dim=-1)
    # Fill with the most negative finite number, so exp() of a masked score is
    # exactly 0 in any floating dtype; a fully masked row stays finite (uniform).
    X = X.masked_fill(~mask, torch.finfo(X.dtype).min)
    return F.softmax(X, dim=-1)


class DotProductAttention(nn.Module):
    """Scaled dot-product attention (D2L 11.3.3).

    ``softmax(Q K^T / sqrt(d)) V``, with masking by ``valid_lens`` and dropout
    on the attention weights. The weights of the last call are kept in
    ``self.attention_weights`` (B, Q, K) for plotting.
    """

    def __init__(self, dropout: float = 0.0):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.attention_weights: torch.Tensor | None = None

    def forward(self, queries, keys, values, valid_lens=None):
        """queries (B, Q, d), keys (B, K, d), values (B, K, v) -> (B, Q, v)."""
        if queries.shape[-1] != keys.shape[-1]:
            raise ValueError(
                f"dot-product attention needs queries and keys of the same size d; got "
                f"{queries.shape[-1]} and {keys.shape[-1]} (use AdditiveAttention, or project one of them)"
            )
        if keys.shape[1] != values.shape[1]:
            raise ValueError(f"keys and values must pair up: {keys.shape[1]} keys but {values.shape[1]} values")
        d = queries.shape[-1]
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)  # (B, Q, d) @ (B, d, K) -> (B, Q, K)
        self.attention_weights = masked_softmax(scores, valid_lens)  # (B, Q, K)
        return torch.bmm(self.dropout(self.attention_weights), values)  # (B, Q, K) @ (B, K, v) -> (B, Q, v)


def _linear(in_features: int | None, out_features: int, bias: bool) -> nn.Module:
    """An eager ``nn.Linear`` when the input size is known, else a ``nn.LazyLinear`` as D2L uses."""
    if in_features is None:
        return nn.LazyLinear(out_features, bias=bias)
    return nn.Linear(in_features, out_features, bias=bias)


class AdditiveAttention(nn.Module):
    """Additive attention, for queries and keys of different sizes (D2L 11.3.4).

    ``a(q, k) = w_v^T tanh(W_q q + W_k k)`` with ``W_q`` (num_hiddens x d_q),
    ``W_k`` (num_hiddens x d_k) and ``w_v`` (num_hiddens), none with a bias.
    As in D2L the input sizes are inferred on the first call; give
    ``query_size`` and ``key_size`` to build the weights at once.
    """

    def __init__(self, num_hiddens: int, dropout: float = 0.0, *, query_size=None, key_size=None):
        super().__init__()
        self.W_k = _linear(key_size, num_hiddens, bias=False)
        self.W_q = _linear(query_size, num_hiddens, bias=False)
        self.w_v = _linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(dropout)
        self.attention_weights: torch.Tensor | None = None

    def forward(self, queries, keys, values, valid_lens=None):
        """queries (B, Q, d_q), keys (B, K, d_k), values (B, K, v) -> (B, Q, v)."""
        if keys.shape[1] != values.shape[1]:
            raise ValueError(f"keys and values must pair up: {keys.shape[1]} keys but {values.shape[1]} values")
        queries, keys = self.W_q(queries), self.W_k(keys)  # (B, Q, N), (B, K, N)
        features = torch.tanh(queries.unsqueeze(2) + keys.unsqueeze(1))  # (B, Q, 1, N) + (B, 1, K, N) -> (B, Q, K, N)
        scores = self.w_v(features).squeeze(-1)  # (B, Q, K, 1) -> (B, Q, K)
        self.attention_weights = masked_softmax(scores, valid_lens)  # (B, Q, K)
        return torch.bmm(self.dropout(self.attention_weights), values)  # (B, Q, K) @ (B, K, v) -> (B, Q, v)
