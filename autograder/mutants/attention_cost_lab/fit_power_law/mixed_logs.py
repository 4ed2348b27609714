"""Mistake: log10 of the sizes but the natural log of the times, so the slope is off by a factor ln(10)."""

import math


def fit_power_law(ns, times):
    xs, ys = [math.log10(n) for n in ns], [math.log(t) for t in times]
    if len(set(xs)) < 2:
        raise ValueError("need two different sizes")
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    k = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return math.exp(my - k * mx), k
