"""Mistake: one query against n keys, so the sweep times a linear-time attention and finds an exponent of 1 or less."""

import time

import torch

from qkv import timing


def measured_exponent(attention, ns, d=64, batch=1, device="cpu", warmup=1, repeats=5, clock=time.perf_counter):
    times_ms = []
    for n in ns:
        queries = torch.randn(batch, 1, d, device=device)
        keys = torch.randn(batch, n, d, device=device)
        values = torch.randn(batch, n, d, device=device)
        t = timing.benchmark(
            attention, queries, keys, values, warmup=warmup, repeats=repeats, device=device, clock=clock
        )
        times_ms.append(t.median_ms)
    return timing.fit_power_law(ns, times_ms)[1], times_ms
