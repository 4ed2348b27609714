"""Mistake: the median times converted to seconds; the exponent is right but the times are not in milliseconds."""

import time

import torch

from qkv import timing


def measured_exponent(attention, ns, d=64, batch=1, device="cpu", warmup=1, repeats=5, clock=time.perf_counter):
    times = []
    for n in ns:
        queries, keys, values = (torch.randn(batch, n, d, device=device) for _ in range(3))
        t = timing.benchmark(
            attention, queries, keys, values, warmup=warmup, repeats=repeats, device=device, clock=clock
        )
        times.append(t.median_ms / 1e3)
    return timing.fit_power_law(ns, times)[1], times
