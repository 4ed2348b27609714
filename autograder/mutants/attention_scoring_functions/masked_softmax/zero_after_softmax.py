"""Mistake: the mask is applied after the softmax, without renormalising, so rows no longer sum to 1."""

import torch


def masked_softmax(X, valid_lens):
    if valid_lens is None:
        return torch.softmax(X, dim=-1)
    B, Q, K = X.shape
    if valid_lens.dim() == 1:
        valid_lens = valid_lens[:, None].expand(B, Q)
    keep = torch.arange(K) < valid_lens[:, :, None]
    return torch.softmax(X, dim=-1) * keep
