"""Mistake: ignores the given similarity and always uses the dot product (passes the visible test)."""

import torch


def attention_pooling(queries, keys, values, similarity):
    weights = torch.softmax(queries @ keys.T, dim=-1)
    return weights @ values, weights
