"""Answers to the stubs of book/multihead-attention.md (D2L 11.5), by grade_id = function or class name.

The bodies are pasted into the notebook by the assembler, so they use only the notebook's names: ``torch``,
``nn``, ``math``, ``att`` (the course's ``qkv.attention``) and ``ref`` (``qkv.multihead``).

``transpose_qkv`` and ``transpose_output`` are ``qkv``'s own. The others are written out: the stub of
``MultiHeadAttention`` asks for the scores, the mask per head and the dropout by hand (where ``qkv``'s class hands
them to a ``DotProductAttention`` and also takes boolean masks), so that the scale and the repetition of the lengths
are the student's; ``grouped_query_attention`` gives every
query head its key/value head with ``repeat_interleave``, as the stub's hints do (``qkv``'s stacks the queries of a
group instead, which copies no keys, and reads ``masked_softmax`` from its own module, a name the notebook does not
have); ``attention_costs`` has the stub's keyword defaults.
"""

import math

import torch
from torch import nn

from qkv import attention as att
from qkv import multihead as ref
from qkv.multihead import transpose_output, transpose_qkv

__all__ = [
    "transpose_qkv",
    "transpose_output",
    "MultiHeadAttention",
    "grouped_query_attention",
    "attention_costs",
]


class MultiHeadAttention(nn.Module):
    def forward(self, queries, keys, values, valid_lens=None):
        H = self.num_heads
        queries = ref.transpose_qkv(self.W_q(queries), H)  # (B, Q, d_q) -> (B, Q, N) -> (B * H, Q, h)
        keys = ref.transpose_qkv(self.W_k(keys), H)  # (B, K, d_k) -> (B, K, N) -> (B * H, K, h)
        values = ref.transpose_qkv(self.W_v(values), H)  # (B, K, d_v) -> (B, K, N) -> (B * H, K, h)
        if valid_lens is not None:
            # (B,) -> (B * H,) or (B, Q) -> (B * H, Q): example b's lengths at rows b * H .. b * H + H - 1
            valid_lens = torch.repeat_interleave(valid_lens, repeats=H, dim=0)
        h = queries.shape[-1]
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(h)  # (BH, Q, h) @ (BH, h, K) -> (BH, Q, K)
        self.attention_weights = att.masked_softmax(scores, valid_lens)  # (B * H, Q, K)
        output = torch.bmm(self.dropout(self.attention_weights), values)  # (BH, Q, K) @ (BH, K, h) -> (BH, Q, h)
        return self.W_o(ref.transpose_output(output, H))  # (B * H, Q, h) -> (B, Q, N) -> (B, Q, N)


def grouped_query_attention(queries, keys, values, valid_lens=None):
    B, H, Q, h = queries.shape
    K = keys.shape[2]
    r = H // keys.shape[1]  # query heads per key/value head
    keys = keys.repeat_interleave(r, dim=1)  # (B, G, K, h) -> (B, H, K, h): head g at g * r .. g * r + r - 1
    values = values.repeat_interleave(r, dim=1)  # (B, G, K, v) -> (B, H, K, v)
    scores = queries @ keys.transpose(-1, -2) / math.sqrt(h)  # (B, H, Q, h) @ (B, H, h, K) -> (B, H, Q, K)
    if valid_lens is not None and valid_lens.dim() == 2:
        valid_lens = valid_lens[:, None, :].expand(B, H, Q).reshape(B, H * Q)  # (B, Q) -> (B, H * Q)
    weights = att.masked_softmax(scores.reshape(B, H * Q, K), valid_lens)  # (B, H * Q, K)
    return weights.reshape(B, H, Q, K) @ values  # (B, H, Q, K) @ (B, H, K, v) -> (B, H, Q, v)


def attention_costs(num_hiddens, num_heads, num_kv_heads, seq_len, batch_size=1, num_layers=1, bytes_per_number=2):
    h = num_hiddens // num_heads  # the size of every head, query or key/value
    kv_width = num_kv_heads * h  # W_k and W_v each map num_hiddens features to G * h
    parameters = num_layers * (2 * num_hiddens * num_hiddens + 2 * num_hiddens * kv_width)
    cache_bytes = num_layers * batch_size * seq_len * 2 * kv_width * bytes_per_number  # keys and values
    return parameters, cache_bytes
