"""Multi-head attention (D2L 11.5).

Each of ``num_heads`` heads projects the queries, keys and values to
``num_hiddens / num_heads`` features, attends with scaled dot products, and the
heads' outputs are concatenated and projected once more. The heads are not a
Python loop: they are folded into the batch axis (``transpose_qkv``), attended
in one batched product, and unfolded (``transpose_output``).
Shape letters are those of the glossary in :mod:`qkv`.
"""

from __future__ import annotations

import torch
from torch import nn

from qkv.attention import DotProductAttention, _linear

__all__ = ["transpose_qkv", "transpose_output", "repeat_for_heads", "MultiHeadAttention"]


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
    """Multi-head scaled dot-product attention (D2L 11.5).

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
