"""Mistake: softmax over all keys, then zero the masked weights and renormalise. Right for moderate scores, but the
masked scores still enter the softmax: an inf or a huge score past the valid length turns the row into NaN or zeros
(passes the visible test)."""

import torch


def masked_softmax(X, valid_lens):
    if valid_lens is None:
        return torch.softmax(X, dim=-1)
    B, Q, K = X.shape
    if valid_lens.dim() == 1:
        valid_lens = valid_lens[:, None].expand(B, Q)
    keep = torch.arange(K) < valid_lens[:, :, None]
    W = torch.softmax(X, dim=-1) * keep
    return W / W.sum(dim=-1, keepdim=True)
