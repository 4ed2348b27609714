"""Mistake: the dot products are divided by d instead of sqrt(d)."""

import torch
from torch import nn

from qkv import attention as ref


class DotProductAttention(nn.Module):
    def __init__(self, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        scores = torch.bmm(queries, keys.transpose(1, 2)) / queries.shape[-1]
        self.attention_weights = ref.masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)
