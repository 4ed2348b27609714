"""Mistake: the kernel values are cast to float32, as D2L's code does, which breaks float64 inputs
(passes the visible test, which is float32)."""

import torch


def nadaraya_watson(x_train, y_train, x_val, kernel, sigma=1.0):
    scores = kernel((x_val[:, None] - x_train[None, :]) / sigma).type(torch.float32)
    weights = scores / scores.sum(dim=1, keepdim=True)
    return weights @ y_train, weights
