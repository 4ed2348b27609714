"""Mistake: -1e6 is added to the masked scores instead of replacing them, so an inf or NaN there still leaks into
the softmax (passes the visible test)."""

import torch


def masked_softmax(X, valid_lens):
    if valid_lens is None:
        return torch.softmax(X, dim=-1)
    B, Q, K = X.shape
    if valid_lens.dim() == 1:
        valid_lens = valid_lens[:, None].expand(B, Q)
    keep = torch.arange(K) < valid_lens[:, :, None]
    return torch.softmax(X + (~keep) * -1e6, dim=-1)
