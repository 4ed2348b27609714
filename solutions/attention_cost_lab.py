"""Answers to the stubs of book/attention-cost-lab.md (the attention-cost lab, D2L 11.3 and 11.6.2), by grade_id.

The counting answers follow :mod:`qkv.timing`'s convention but are written out here, since the hidden tests reject a
call to that reference. ``measured_exponent`` builds on the course's timer and fit (``timing.benchmark``,
``timing.fit_power_law``), as the stub asks, not on the student's own.
"""

import math
import statistics
import time

import torch

from qkv import timing


def attention_flops(n_q, n_k, d, d_v=None, batch=1):
    d_v = d if d_v is None else d_v
    pairs = batch * n_q * n_k  # one score per query-key pair: (B, Q, K)
    flops = {
        "scores": 2 * pairs * d,  # (B, Q, d) @ (B, d, K) -> (B, Q, K): d multiply-adds per score
        "scale": pairs,  # one division by sqrt(d) per score
        "softmax": 5 * pairs,  # max, subtract, exp, add to the sum, divide
        "weighted_sum": 2 * pairs * d_v,  # (B, Q, K) @ (B, K, v) -> (B, Q, v): K multiply-adds per output entry
    }
    flops["total"] = sum(flops.values())
    return flops


def attention_bytes(n_q, n_k, d, d_v=None, batch=1, dtype_bytes=4, materialize=True):
    d_v = d if d_v is None else d_v
    size = dtype_bytes * batch
    nbytes = {
        "queries": size * n_q * d,  # (B, Q, d) read once
        "keys": size * n_k * d,  # (B, K, d) read once
        "values": size * n_k * d_v,  # (B, K, v) read once
        "output": size * n_q * d_v,  # (B, Q, v) written once
        "scores_and_weights": 4 * size * n_q * n_k if materialize else 0,  # (B, Q, K): write, read, write, read
    }
    nbytes["total"] = sum(nbytes.values())
    return nbytes


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
