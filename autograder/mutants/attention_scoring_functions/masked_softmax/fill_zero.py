"""Mistake: masked scores are filled with 0 instead of a large negative number, so exp(0) = 1 still weighs them."""

import torch


def masked_softmax(X, valid_lens):
    if valid_lens is None:
        return torch.softmax(X, dim=-1)
    B, Q, K = X.shape
    if valid_lens.dim() == 1:
        valid_lens = valid_lens[:, None].expand(B, Q)
    keep = torch.arange(K) < valid_lens[:, :, None]
    return torch.softmax(X.masked_fill(~keep, 0.0), dim=-1)
