"""Mistake: synchronises after each call but not before starting the clock, so the first repeat also pays for the
warm-ups still queued on the device."""

import statistics
import time


def time_fn(fn, *args, warmup=3, repeats=10, clock=time.perf_counter, synchronize=None):
    sync = synchronize or (lambda: None)
    for _ in range(warmup):
        fn(*args)
    times = []
    for _ in range(repeats):
        t0 = clock()
        fn(*args)
        sync()
        times.append((clock() - t0) * 1e3)
    return statistics.median(times)
