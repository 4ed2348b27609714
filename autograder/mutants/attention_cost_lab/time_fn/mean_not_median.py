"""Mistake: the mean of the repeats, which one slow repeat drags up, instead of the median."""

import time


def time_fn(fn, *args, warmup=3, repeats=10, clock=time.perf_counter, synchronize=None):
    sync = synchronize or (lambda: None)
    for _ in range(warmup):
        fn(*args)
    times = []
    for _ in range(repeats):
        sync()
        t0 = clock()
        fn(*args)
        sync()
        times.append((clock() - t0) * 1e3)
    return sum(times) / len(times)
