# Hidden: noisy data against the least-squares formula written out in plain Python; negative and fractional
# exponents, two points, tuples and NumPy arrays; a ValueError when the sizes cannot give a slope. The answer may
# not call qkv's own fit.
# Contract: the page's sentences each check relies on.
#   "(c, k) as floats: k is the least-squares slope of log(times) against" -> k and c on noisy data, 2 points; floats
#   "log(ns), and log(c) the intercept, as in the least-squares formulas above." -> c = exp(intercept)
#   "ns: the sizes, a sequence of positive numbers (list, tuple or 1-D NumPy array)." -> tuples and NumPy arrays
#   "ValueError: when fewer than two different sizes are given (no slope)." -> the ValueError for equal sizes
#   "refuse an answer that calls the course's own version of the function" -> timing.fit_power_law not called
# Classes: each kind of mistake, and the check that catches it.
#   value -> k and c on noisy and exact data against the least-squares formulas (log c returned, linear axes)
#   dtype -> k and c to 1e-9: logarithms taken in float32 (torch's default dtype) are off by about 1e-7
#   device -> n/a: sequences of numbers in, two floats out; no tensor is made
#   pass-through -> n/a: both arguments enter every formula; one left out is a wrong value (the value class)
#   state -> n/a: the contract names no object to keep or change; two new floats are returned
#   gradient -> n/a: a fit of measured times; nothing is trained through it
#   type -> c and k are Python floats (not 0-d tensors); tuples and NumPy arrays are accepted as ns
#   edge -> two points; equal sizes raise a ValueError
#   symmetry -> k = -0.5, 1.5 and about 2: the slope of log ns against log times equals it only for k = 1
#   train-eval -> n/a: no module, no training behaviour
#   efficiency -> n/a: the contract promises no time or memory (a few sums)
import math as _math
import random as _random

import numpy as _np

import qkv.timing as _timing


def _reference(ns, ts):
    xs, ys = [_math.log(n) for n in ns], [_math.log(t) for t in ts]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    k = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return _math.exp(my - k * mx), k


def _check(ns, ts, what):
    _c_ref, _k_ref = _reference(list(ns), list(ts))
    _got = fit_power_law(ns, ts)
    checks.check_true(len(_got) == 2, f"fit_power_law returns the pair (c, k) ({what})")
    _c, _k = _got
    checks.check_true(
        isinstance(_c, float) and isinstance(_k, float),
        f"fit_power_law returns (c, k) as Python floats ({what}; got {type(_c).__qualname__} and "
        f"{type(_k).__qualname__})",
        hint="return plain numbers: float(...) of a tensor, or math.exp and sums over Python floats",
    )
    checks.check_scalar(_k, _k_ref, f"k ({what})", atol=1e-9, hint="the least-squares slope over ALL the points")
    checks.check_scalar(_c, _c_ref, f"c ({what})", atol=1e-9 * abs(_c_ref), hint="c = exp(mean(y) - k * mean(x))")


_rng = _random.Random(1104)
with checks.forbid_reference(fit_power_law, (_timing, "fit_power_law")):
    _ns = [100, 200, 400, 800, 1600, 3200]
    _ts = [2e-5 * n**2 * _math.exp(_rng.gauss(0, 0.2)) for n in _ns]
    _check(_ns, _ts, "noisy quadratic data")
    _ns = [3, 10, 30, 100, 300]
    _ts = [7.0 * n**-0.5 * _math.exp(_rng.gauss(0, 0.1)) for n in _ns]
    _check(tuple(_ns), tuple(_ts), "noisy data, k = -0.5, tuples")
    _ns = _np.array([50.0, 75.0, 160.0, 900.0])
    _check(_ns, 0.25 * _ns**1.5, "an exact law with k = 1.5, NumPy arrays")
    _check([10, 1000], [4.0, 0.04], "two points")
    try:
        fit_power_law([64, 64, 64], [1.0, 2.0, 3.0])
    except ValueError:
        pass
    else:
        checks.check_true(
            False,
            "fit_power_law([64, 64, 64], ...) raises a ValueError: all sizes are equal",
            hint="with one size only there is no slope; raise ValueError with a clear message",
        )
