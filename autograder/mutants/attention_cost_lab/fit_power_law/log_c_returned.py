"""Mistake: returns the intercept log(c) instead of c."""

import math


def fit_power_law(ns, times):
    xs, ys = [math.log(n) for n in ns], [math.log(t) for t in times]
    if len(set(xs)) < 2:
        raise ValueError("need two different sizes")
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    k = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return my - k * mx, k
