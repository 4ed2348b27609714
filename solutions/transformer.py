"""Answers to the stubs of book/transformer.md (D2L 11.7), by grade_id = function or class name.

The bodies are pasted into the notebook by the assembler, so they use only the notebook's names: ``math``,
``torch``, ``nn``, ``MultiHeadAttention``, ``transpose_qkv``, ``transpose_output`` (from ``qkv.multihead``) and
``ref`` (the course's ``qkv.transformer``). Downstream answers build on ``ref.AddNorm`` and ``ref.PositionWiseFFN``,
as their stubs ask, never on the student's Exercises 1 and 2.

``AddNorm`` and ``TransformerEncoderBlock`` are ``qkv``'s own (the assembler writes ``ref.AddNorm`` for the names
their bodies take from ``qkv.transformer``). The others are written out: ``PositionWiseFFN``'s stub asks for lazy
layers only, as D2L's does, where ``qkv``'s also takes the input size; ``TransformerDecoderBlock`` keeps D2L's state
(the block's inputs so far), where ``qkv``'s caches projected keys and values, and like ``qkv``'s (unlike D2L's) it
returns a new state instead of writing into the one it is given; ``cached_self_attention`` and
``decoder_forward`` are the two halves of ``qkv``'s cached decoder, written as functions of a ``qkv`` module.
"""

import math

import torch
from torch import nn

from qkv import transformer as ref
from qkv.multihead import MultiHeadAttention, transpose_output, transpose_qkv
from qkv.transformer import AddNorm, TransformerEncoderBlock

__all__ = [
    "PositionWiseFFN",
    "AddNorm",
    "TransformerEncoderBlock",
    "TransformerDecoderBlock",
    "cached_self_attention",
    "decoder_forward",
]


class PositionWiseFFN(nn.Module):
    def __init__(self, ffn_num_hiddens, ffn_num_outputs):
        super().__init__()
        self.dense1 = nn.LazyLinear(ffn_num_hiddens)
        self.relu = nn.ReLU()
        self.dense2 = nn.LazyLinear(ffn_num_outputs)

    def forward(self, X):
        return self.dense2(self.relu(self.dense1(X)))  # (..., T, d) -> (..., T, F) -> (..., T, N)


class TransformerDecoderBlock(nn.Module):
    def __init__(self, num_hiddens, ffn_num_hiddens, num_heads, dropout, i):
        super().__init__()
        self.i = i
        N = num_hiddens
        self.attention1 = MultiHeadAttention(N, num_heads, dropout, query_size=N, key_size=N, value_size=N)
        self.addnorm1 = ref.AddNorm(N, dropout)
        self.attention2 = MultiHeadAttention(N, num_heads, dropout, query_size=N, key_size=N, value_size=N)
        self.addnorm2 = ref.AddNorm(N, dropout)
        self.ffn = ref.PositionWiseFFN(ffn_num_hiddens, N, in_features=N)
        self.addnorm3 = ref.AddNorm(N, dropout)

    def forward(self, X, state):
        enc_outputs, enc_valid_lens = state[0], state[1]
        past = state[2][self.i]  # (B, T_past, N): this block's inputs so far, or None
        key_values = X if past is None else torch.cat((past, X), dim=1)  # (B, T_past + T, N)
        caches = list(state[2])  # a new list: the state given stays as it was
        caches[self.i] = key_values
        B, T = X.shape[0], X.shape[1]
        T_past = key_values.shape[1] - T
        # Causal, in training and in evaluation: the query at position T_past + t sees keys 0 .. T_past + t.
        dec_valid_lens = torch.arange(T_past + 1, T_past + T + 1, device=X.device).expand(B, T)  # (B, T)
        Y = self.addnorm1(X, self.attention1(X, key_values, key_values, dec_valid_lens))  # (B, T, N)
        Y2 = self.attention2(Y, enc_outputs, enc_outputs, enc_valid_lens)  # (B, T, N)
        Z = self.addnorm2(Y, Y2)  # (B, T, N)
        return self.addnorm3(Z, self.ffn(Z)), [enc_outputs, enc_valid_lens, caches]


def cached_self_attention(mha, X, cache):
    H = mha.num_heads
    B, T = X.shape[0], X.shape[1]
    queries = transpose_qkv(mha.W_q(X), H)  # (B, T, N) -> (B * H, T, h): only the new tokens
    keys = transpose_qkv(mha.W_k(X), H)  # (B * H, T, h)
    values = transpose_qkv(mha.W_v(X), H)  # (B * H, T, h)
    if cache is not None:
        keys = torch.cat((cache[0], keys), dim=1)  # (B * H, T_past, h) + (B * H, T, h) -> (B * H, K, h)
        values = torch.cat((cache[1], values), dim=1)  # (B * H, K, h), K = T_past + T
    T_past = keys.shape[1] - T
    # The new token t sits at position T_past + t and sees keys 0 .. T_past + t.
    valid_lens = torch.arange(T_past + 1, T_past + T + 1, device=X.device).expand(B * H, T)  # (B * H, T)
    output = mha.attention(queries, keys, values, valid_lens)  # (B * H, T, h)
    return mha.W_o(transpose_output(output, H)), (keys, values)  # (B * H, T, h) -> (B, T, N)


def decoder_forward(decoder, X, state):
    T_past = state[2][0].num_cached  # tokens decoded before X
    X = decoder.embedding(X) * math.sqrt(decoder.num_hiddens)  # (B, T) -> (B, T, N)
    X = decoder.pos_encoding(X, T_past)  # + P[T_past : T_past + T], then dropout: (B, T, N)
    for blk in decoder.blks:
        X, state = blk(X, state)  # (B, T, N)
    return decoder.dense(X), state  # (B, T, N) -> (B, T, V)
