"""Mistake: never waits for the device, so on a GPU it times the launches, not the work."""

import statistics
import time


def time_fn(fn, *args, warmup=3, repeats=10, clock=time.perf_counter, synchronize=None):
    for _ in range(warmup):
        fn(*args)
    times = []
    for _ in range(repeats):
        t0 = clock()
        fn(*args)
        times.append((clock() - t0) * 1e3)
    return statistics.median(times)
