"""Mistake: no tanh, so the score splits into a query part (which cancels in the softmax) and a key part: every query
gets the same weights."""

import torch
from torch import nn

from qkv import attention as ref


class AdditiveAttention(nn.Module):
    def __init__(self, num_hiddens, dropout):
        super().__init__()
        self.W_k = nn.LazyLinear(num_hiddens, bias=False)
        self.W_q = nn.LazyLinear(num_hiddens, bias=False)
        self.w_v = nn.LazyLinear(1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        queries, keys = self.W_q(queries), self.W_k(keys)
        features = queries.unsqueeze(2) + keys.unsqueeze(1)
        scores = self.w_v(features).squeeze(-1)
        self.attention_weights = ref.masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)
