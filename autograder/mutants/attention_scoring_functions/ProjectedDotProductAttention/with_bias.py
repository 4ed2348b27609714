"""Mistake: the projection keeps nn.Linear's default bias, which adds a key-dependent term b.k to the scores."""

import math

import torch
from torch import nn

from qkv import attention as ref


class ProjectedDotProductAttention(nn.Module):
    def __init__(self, query_size, key_size, dropout):
        super().__init__()
        self.W_q = nn.Linear(query_size, key_size)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        scores = torch.bmm(self.W_q(queries), keys.transpose(1, 2)) / math.sqrt(keys.shape[-1])
        self.attention_weights = ref.masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)
