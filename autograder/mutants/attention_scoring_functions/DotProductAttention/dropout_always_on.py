"""Mistake: F.dropout(weights, p) is called without training=self.training, so dropout also acts in evaluation mode."""

import math

import torch
from torch import nn
from torch.nn import functional as F

from qkv import attention as ref


class DotProductAttention(nn.Module):
    def __init__(self, dropout):
        super().__init__()
        self.p = dropout

    def forward(self, queries, keys, values, valid_lens=None):
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])
        self.attention_weights = ref.masked_softmax(scores, valid_lens)
        return torch.bmm(F.dropout(self.attention_weights, self.p), values)
