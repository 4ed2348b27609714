"""Mistake: fits the sizes against the times, fit_power_law(times, ns), so the exponent comes out as about 1/2."""

import time

import torch

from qkv import timing


def measured_exponent(attention, ns, d=64, batch=1, device="cpu", warmup=1, repeats=5, clock=time.perf_counter):
    times_ms = []
    for n in ns:
        queries, keys, values = (torch.randn(batch, n, d, device=device) for _ in range(3))
        t = timing.benchmark(
            attention, queries, keys, values, warmup=warmup, repeats=repeats, device=device, clock=clock
        )
        times_ms.append(t.median_ms)
    return timing.fit_power_law(times_ms, ns)[1], times_ms
