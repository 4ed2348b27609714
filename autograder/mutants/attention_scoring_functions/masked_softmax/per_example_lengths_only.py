"""Mistake: only lengths of shape (B,) are handled (repeated for every query); lengths per query (B, Q) break."""

import torch


def masked_softmax(X, valid_lens):
    if valid_lens is None:
        return torch.softmax(X, dim=-1)
    B, Q, K = X.shape
    lens = torch.repeat_interleave(valid_lens, Q)  # right for (B,), wrong for (B, Q)
    flat = X.reshape(-1, K)
    keep = torch.arange(K)[None, :] < lens[:, None]
    return torch.softmax(flat.masked_fill(~keep, -1e6), dim=-1).reshape(B, Q, K)
