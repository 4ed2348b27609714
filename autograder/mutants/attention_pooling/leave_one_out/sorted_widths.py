"""Mistake: select_bandwidth sorts the candidate widths first, so the losses come back in sorted order rather than
the order given (passes the visible test, whose widths are already sorted)."""

import torch


def loo_loss(x, y, kernel, sigma):
    scores = kernel((x[:, None] - x[None, :]) / sigma)
    scores = scores * (1 - torch.eye(len(x), dtype=scores.dtype))
    weights = scores / scores.sum(dim=1, keepdim=True)
    return float(((weights @ y - y) ** 2).mean())


def select_bandwidth(x, y, kernel, sigmas):
    sigmas = sorted(sigmas)
    losses = [loo_loss(x, y, kernel, s) for s in sigmas]
    best = min(range(len(losses)), key=losses.__getitem__)
    return sigmas[best], losses
