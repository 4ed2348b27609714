"""Mistake: valid_lens is ignored (the visible test uses no mask: passes it)."""

import math

import torch
from torch import nn


class DistanceAttention(nn.Module):
    def __init__(self, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        dots = torch.bmm(queries, keys.transpose(1, 2))
        key_norms = (keys**2).sum(dim=-1).unsqueeze(1)
        scores = (dots - 0.5 * key_norms) / math.sqrt(queries.shape[-1])
        self.attention_weights = torch.softmax(scores, dim=-1)
        return torch.bmm(self.dropout(self.attention_weights), values)
