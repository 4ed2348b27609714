"""Mistake: the median in seconds, as the clock gives it, not in milliseconds."""

import statistics
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
        times.append(clock() - t0)
    return statistics.median(times)
