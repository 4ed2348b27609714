"""Mistake: the masked scores are overwritten in the caller's tensor (X[~keep] = -1e6 on a view, as D2L's helper
does), so the function changes its input (passes the visible test)."""

import torch


def masked_softmax(X, valid_lens):
    if valid_lens is None:
        return torch.softmax(X, dim=-1)
    B, Q, K = X.shape
    if valid_lens.dim() == 1:
        valid_lens = torch.repeat_interleave(valid_lens, Q)
    else:
        valid_lens = valid_lens.reshape(-1)
    flat = X.reshape(-1, K)  # a view of X
    keep = torch.arange(K)[None, :] < valid_lens[:, None]
    flat[~keep] = -1e6
    return torch.softmax(flat.reshape(B, Q, K), dim=-1)
