"""Mistake: a straight line fitted to the times against the sizes on linear axes, its slope taken as the exponent."""


def fit_power_law(ns, times):
    xs, ys = [float(n) for n in ns], [float(t) for t in times]
    if len(set(xs)) < 2:
        raise ValueError("need two different sizes")
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    k = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return my - k * mx, k
