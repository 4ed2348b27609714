"""Mistake: the slope through the first and last points only, which is exact for a perfect power law but not the
least-squares fit of noisy data (passes the visible test)."""

import math


def fit_power_law(ns, times):
    ns, times = list(ns), list(times)
    if len(set(ns)) < 2:
        raise ValueError("need two different sizes")
    k = math.log(times[-1] / times[0]) / math.log(ns[-1] / ns[0])
    return times[0] / ns[0] ** k, k
