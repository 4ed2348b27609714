"""Answers to the stubs of book/attention-cost-lab.md (the attention-cost lab, D2L 11.3 and 11.6.2), by grade_id.

The counting answers are :mod:`qkv.timing`'s own functions (the stubs have their signatures; the assembler pastes
their bodies, qualifying ``_check_sizes`` as ``timing._check_sizes``): a pasted body is not a call, which the
hidden tests reject. ``time_fn`` and ``fit_power_law`` are written out: the stub's timer takes a ``synchronize``
callable where ``timing.benchmark`` takes a device, and ``timing.fit_power_law`` uses NumPy, which the notebook
does not import. ``measured_exponent`` builds on the course's timer and fit (``timing.benchmark``,
``timing.fit_power_law``), as the stub asks, not on the student's own. ``online_attention`` is
:mod:`qkv.costlab.online`'s own (its body uses only ``torch`` and ``math``, which the notebook imports).
"""

import math
import statistics
import time

import torch

from qkv import timing
from qkv.costlab.online import online_attention
from qkv.timing import attention_bytes, attention_flops

__all__ = ["attention_flops", "attention_bytes", "time_fn", "fit_power_law", "measured_exponent", "online_attention"]


def time_fn(fn, *args, warmup=3, repeats=10, clock=time.perf_counter, synchronize=None):
    wait = synchronize if synchronize is not None else (lambda: None)
    for _ in range(warmup):
        fn(*args)  # untimed: allocation, kernel selection, caches
    times_ms = []
    for _ in range(repeats):
        wait()  # drain earlier work (the warm-ups, the previous repeat) before starting the clock
        start = clock()
        fn(*args)
        wait()  # this call's work is done only now
        times_ms.append((clock() - start) * 1e3)
    return float(statistics.median(times_ms))


def fit_power_law(ns, times):
    xs = [math.log(n) for n in ns]  # log n
    ys = [math.log(t) for t in times]  # log t
    if len(xs) != len(ys):
        raise ValueError(f"ns and times must have the same length, got {len(xs)} and {len(ys)}")
    if len(set(xs)) < 2:
        raise ValueError("a slope needs at least two different sizes")
    x_bar, y_bar = sum(xs) / len(xs), sum(ys) / len(ys)
    k = sum((x - x_bar) * (y - y_bar) for x, y in zip(xs, ys)) / sum((x - x_bar) ** 2 for x in xs)
    return math.exp(y_bar - k * x_bar), k


def measured_exponent(attention, ns, d=64, batch=1, device="cpu", warmup=1, repeats=5, clock=time.perf_counter):
    times_ms = []
    for n in ns:
        queries = torch.randn(batch, n, d, device=device)  # (B, T, d)
        keys = torch.randn(batch, n, d, device=device)  # (B, T, d)
        values = torch.randn(batch, n, d, device=device)  # (B, T, d)
        t = timing.benchmark(
            attention, queries, keys, values, warmup=warmup, repeats=repeats, device=device, clock=clock
        )
        times_ms.append(t.median_ms)
    c, k = timing.fit_power_law(ns, times_ms)
    return k, times_ms
