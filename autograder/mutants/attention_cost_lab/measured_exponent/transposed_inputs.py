"""Mistake: inputs of shape (batch, d, n) instead of (batch, n, d): attention over d tokens of width n, linear in n."""

import time

import torch

from qkv import timing


def measured_exponent(attention, ns, d=64, batch=1, device="cpu", warmup=1, repeats=5, clock=time.perf_counter):
    times_ms = []
    for n in ns:
        queries, keys, values = (torch.randn(batch, d, n, device=device) for _ in range(3))
        t = timing.benchmark(
            attention, queries, keys, values, warmup=warmup, repeats=repeats, device=device, clock=clock
        )
        times_ms.append(t.median_ms)
    return timing.fit_power_law(ns, times_ms)[1], times_ms
