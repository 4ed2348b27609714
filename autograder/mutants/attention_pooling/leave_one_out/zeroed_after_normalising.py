"""Mistake: the diagonal is zeroed after the rows are normalised, so the remaining weights no longer sum to 1."""

import torch


def loo_loss(x, y, kernel, sigma):
    scores = kernel((x[:, None] - x[None, :]) / sigma)
    weights = scores / scores.sum(dim=1, keepdim=True)
    weights = weights * (1 - torch.eye(len(x), dtype=weights.dtype))
    return float(((weights @ y - y) ** 2).mean())


def select_bandwidth(x, y, kernel, sigmas):
    losses = [loo_loss(x, y, kernel, s) for s in sigmas]
    best = min(range(len(losses)), key=losses.__getitem__)
    return sigmas[best], losses
