"""Mistake: select_bandwidth keeps the last width of a tie (it updates on <=), not the first (passes the
visible test, which has no tie)."""

import torch


def loo_loss(x, y, kernel, sigma):
    scores = kernel((x[:, None] - x[None, :]) / sigma)
    scores = scores * (1 - torch.eye(len(x), dtype=scores.dtype))
    weights = scores / scores.sum(dim=1, keepdim=True)
    return float(((weights @ y - y) ** 2).mean())


def select_bandwidth(x, y, kernel, sigmas):
    losses = [loo_loss(x, y, kernel, s) for s in sigmas]
    best_sigma, best_loss = None, float("inf")
    for sigma, loss in zip(sigmas, losses):
        if loss <= best_loss:
            best_sigma, best_loss = sigma, loss
    return best_sigma, losses
