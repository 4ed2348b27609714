"""Mistake: each point keeps its own weight (the diagonal is not excluded): this is the training error, and it
always prefers the narrowest width."""


def loo_loss(x, y, kernel, sigma):
    scores = kernel((x[:, None] - x[None, :]) / sigma)
    weights = scores / scores.sum(dim=1, keepdim=True)
    return float(((weights @ y - y) ** 2).mean())


def select_bandwidth(x, y, kernel, sigmas):
    losses = [loo_loss(x, y, kernel, s) for s in sigmas]
    best = min(range(len(losses)), key=losses.__getitem__)
    return sigmas[best], losses
