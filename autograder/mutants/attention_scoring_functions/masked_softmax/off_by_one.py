"""Mistake: off by one, j <= valid_len instead of j < valid_len, so one padded key per row gets weight."""

import torch


def masked_softmax(X, valid_lens):
    if valid_lens is None:
        return torch.softmax(X, dim=-1)
    B, Q, K = X.shape
    if valid_lens.dim() == 1:
        valid_lens = valid_lens[:, None].expand(B, Q)
    keep = torch.arange(K) <= valid_lens[:, :, None]
    return torch.softmax(X.masked_fill(~keep, -1e6), dim=-1)
