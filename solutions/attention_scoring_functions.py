"""Answers to the stubs of book/attention-scoring-functions.md (D2L 11.3), by grade_id = function or class name.

The bodies below are pasted into the notebook by the assembler, so they use only the notebook's names:
``torch``, ``nn``, ``math`` and ``ref`` (the course's ``qkv.attention``). The graded classes mask with
``ref.masked_softmax``, as their stubs ask, so that they do not depend on the student's Exercise 1.

``DotProductAttention`` is ``qkv``'s own: the stub has its signature, and the assembler qualifies the names its
body takes from ``qkv.attention`` (``masked_softmax`` becomes ``ref.masked_softmax``). The others are written out:
``AdditiveAttention``'s stub asks for lazy layers only, where ``qkv``'s also takes the input sizes;
``DistanceAttention`` and ``ProjectedDotProductAttention`` are exercises beyond D2L with no ``qkv`` counterpart;
and ``masked_softmax`` keeps to the stub's contract (lengths only), where ``qkv``'s also takes boolean masks.
"""

import math

import torch
from torch import nn

from qkv import attention as ref
from qkv.attention import DotProductAttention

__all__ = [
    "masked_softmax",
    "DotProductAttention",
    "AdditiveAttention",
    "DistanceAttention",
    "ProjectedDotProductAttention",
]


def masked_softmax(X, valid_lens):
    if valid_lens is None:
        return torch.softmax(X, dim=-1)  # (B, Q, K): no mask, a plain softmax over the keys
    B, Q, K = X.shape
    if valid_lens.dim() == 1:
        valid_lens = valid_lens[:, None].expand(B, Q)  # (B,) -> (B, Q): one length shared by all queries
    keep = torch.arange(K, device=X.device) < valid_lens[:, :, None]  # (K,) < (B, Q, 1) -> (B, Q, K)
    # masked_fill returns a new tensor (the caller's scores stay as they were), and exp(-1e6 - max) is exactly 0.
    return torch.softmax(X.masked_fill(~keep, -1e6), dim=-1)  # (B, Q, K)


class AdditiveAttention(nn.Module):
    def __init__(self, num_hiddens, dropout):
        super().__init__()
        self.W_k = nn.LazyLinear(num_hiddens, bias=False)
        self.W_q = nn.LazyLinear(num_hiddens, bias=False)
        self.w_v = nn.LazyLinear(1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        queries, keys = self.W_q(queries), self.W_k(keys)  # (B, Q, d_q) -> (B, Q, N), (B, K, d_k) -> (B, K, N)
        features = torch.tanh(queries.unsqueeze(2) + keys.unsqueeze(1))  # (B, Q, 1, N) + (B, 1, K, N) -> (B, Q, K, N)
        scores = self.w_v(features).squeeze(-1)  # (B, Q, K, N) -> (B, Q, K, 1) -> (B, Q, K)
        self.attention_weights = ref.masked_softmax(scores, valid_lens)  # (B, Q, K)
        return torch.bmm(self.dropout(self.attention_weights), values)  # (B, Q, K) @ (B, K, v) -> (B, Q, v)


class DistanceAttention(nn.Module):
    def __init__(self, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        d = queries.shape[-1]
        dots = torch.bmm(queries, keys.transpose(1, 2))  # (B, Q, d) @ (B, d, K) -> (B, Q, K)
        key_norms = (keys**2).sum(dim=-1)  # (B, K): the squared norm of every key
        scores = (dots - 0.5 * key_norms.unsqueeze(1)) / math.sqrt(d)  # (B, Q, K) - (B, 1, K) -> (B, Q, K)
        self.attention_weights = ref.masked_softmax(scores, valid_lens)  # (B, Q, K)
        return torch.bmm(self.dropout(self.attention_weights), values)  # (B, Q, K) @ (B, K, v) -> (B, Q, v)


class ProjectedDotProductAttention(nn.Module):
    def __init__(self, query_size, key_size, dropout):
        super().__init__()
        self.W_q = nn.Linear(query_size, key_size, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        projected = self.W_q(queries)  # (B, Q, d_q) -> (B, Q, d_k)
        d_k = keys.shape[-1]
        scores = torch.bmm(projected, keys.transpose(1, 2)) / math.sqrt(d_k)  # (B, Q, d_k) @ (B, d_k, K) -> (B, Q, K)
        self.attention_weights = ref.masked_softmax(scores, valid_lens)  # (B, Q, K)
        return torch.bmm(self.dropout(self.attention_weights), values)  # (B, Q, K) @ (B, K, v) -> (B, Q, v)
