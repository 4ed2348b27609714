"""Mistake: the middle element of the sorted times, which for an even number of repeats is the upper of the two
middle times, not their mean (passes the visible test, which has an odd number of repeats)."""

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
    return sorted(times)[len(times) // 2]
