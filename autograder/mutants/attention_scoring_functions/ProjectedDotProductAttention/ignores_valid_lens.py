"""Mistake: valid_lens is ignored, so padded keys get weight."""

import math

import torch
from torch import nn


class ProjectedDotProductAttention(nn.Module):
    def __init__(self, query_size, key_size, dropout):
        super().__init__()
        self.W_q = nn.Linear(query_size, key_size, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        scores = torch.bmm(self.W_q(queries), keys.transpose(1, 2)) / math.sqrt(keys.shape[-1])
        self.attention_weights = torch.softmax(scores, dim=-1)
        return torch.bmm(self.dropout(self.attention_weights), values)
