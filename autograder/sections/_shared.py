# Shared by the hidden tests of every section that imports it (``from _shared import ...``): the course's probes, a
# fix to one lands once. The assembler puts this text where the import was (autograder/assemble.py: hidden_tests), so
# every hidden block stays self-contained in its notebook cell; a section's own helpers are in its _common.py.
import math as _math
import types as _types

import torch as _torch

_Tensor = type(checks.trusted.zeros(0))


def _one_line(err):
    return f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"


def _tensors(result):
    items = result if isinstance(result, (tuple, list)) else [result]
    return [t for t in items if type(t) is _Tensor]


def _answer_codes(fn):
    """The code objects of the answers that ``fn`` (a hidden test's lambda) calls: the functions, classes and
    modules defined in the notebook that its names (and its defaults) refer to, with every code nested in them."""
    found, todo, seen = [], [], set()
    names = [fn.__globals__.get(n) for n in fn.__code__.co_names] + list(fn.__defaults__ or ())
    for obj in names:
        if obj is not None and not isinstance(obj, (_types.FunctionType, type)):
            obj = type(obj)  # an instance of an answer: its class
        if getattr(obj, "__module__", None) == "__main__":
            todo.append(obj)
    while todo:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, type):
            todo += [v for v in vars(obj).values() if isinstance(v, _types.FunctionType)]
        elif isinstance(obj, _types.FunctionType):
            todo.append(obj.__code__)
        elif isinstance(obj, _types.CodeType):
            found.append(obj)
            todo += [c for c in obj.co_consts if isinstance(c, _types.CodeType)]
    return found


def _names_cpu(fn):
    """Whether an answer that ``fn`` calls writes the CPU by name (``device="cpu"``, ``torch.device("cpu")``)."""
    return any(c == "cpu" for code in _answer_codes(fn) for c in code.co_consts)


def _device_probe(on_cpu, on_meta, what):
    """None when ``what`` makes its tensors on its inputs' device, else a sentence saying where they went.

    ``on_cpu()`` first runs on CPU inputs with PyTorch's default device set to 'meta' (a stand-in for a GPU; it holds
    shapes, no data): a tensor made without device= lands there. A right answer makes none and pays nothing (the first
    arithmetic on 'meta' imports torch._dynamo, seconds). Only when that run fails does ``on_meta()`` decide, the same
    call on inputs on 'meta', as a GPU runs it: a tensor made on the default device and then moved with .to(device), or
    a 0-d tensor, which a GPU accepts beside its own, passes there. A result on another device, two devices meeting, or
    the inputs' values copied into a tensor made on the default device count against the answer; reading a value,
    which 'meta' cannot and a GPU can, does not. An answer that names the CPU (``device="cpu"``: a tensor made there
    passes the first run, whose inputs are on the CPU) is always run the second way too."""
    try:
        with _torch.device("meta"):
            result = on_cpu()
    except Exception:
        pass
    else:
        devices = sorted({str(t.device) for t in _tensors(result)})
        if devices not in ([], ["cpu"]):
            return f"with CPU inputs and another default device ('meta', as a GPU would be), {what} returned {devices}"
        if not _names_cpu(on_cpu):
            return None
    try:
        result = on_meta()
    except Exception as err:
        if "expected device" in str(err) or "same device" in str(err):
            return f"{what} on inputs on the 'meta' device (as on a GPU) raised {_one_line(err)}"
        if "copy out of meta" in str(err):
            return f"{what} copied values of inputs on the 'meta' device (as on a GPU) into a tensor made elsewhere"
        return None  # a value read, or an operation 'meta' lacks: a GPU allows both
    devices = sorted({str(t.device) for t in _tensors(result)})
    if devices in ([], ["meta"]):
        return None
    return f"{what} on inputs on the 'meta' device (as on a GPU) returned tensors on {devices}"


# ---------------------------------------------------------------- laws of random draws (issue 40)
# A contract on a distribution is checked against the law itself, never one draw: every statistical check below
# fails a correct answer with probability at most _ALPHA, computed exactly (binomial tails) or from the chi-square
# law of a sum of squared standard scores (the spread). The course has at most 100 such checks in all the hidden
# tests of one notebook (tests/unit/autograder/test_statistics.py counts them), so a correct submission loses a point
# by chance with probability below 100 * _ALPHA = 1e-6.
_ALPHA = 1e-8
_P_VALUES = []  # (what, p-value) of every statistical check run: benchmarks/false_alarms.py reads them


def _log_binom_pmf(k, n, p):
    return (
        _math.lgamma(n + 1)
        - _math.lgamma(k + 1)
        - _math.lgamma(n - k + 1)
        + k * _math.log(p)
        + (n - k) * _math.log1p(-p)
    )


def _binom_tails(k, n, p):
    """(P[X <= k], P[X >= k]) for X ~ Binomial(n, p), summed exactly in log space."""

    def total(ks):
        logs = [_log_binom_pmf(j, n, p) for j in ks]
        top = max(logs)
        return _math.exp(top) * sum(_math.exp(v - top) for v in logs)

    return min(1.0, total(range(0, k + 1))), min(1.0, total(range(k, n + 1)))


def _rate_problem(count, total, p, what):
    """None when ``count`` successes in ``total`` draws fit probability ``p`` (an exact two-sided binomial test at
    level _ALPHA), else a sentence saying how far they are."""
    low, high = _binom_tails(count, total, p)
    _P_VALUES.append((what, min(1.0, 2 * min(low, high))))
    if min(low, high) * 2 > _ALPHA:
        return None
    side = "few" if low < high else "many"
    return (
        f"{what}: {count} of {total} ({count / total:.4f}), too {side} for probability {p:.4f} "
        f"(a right answer is this far off less than once in {1 / _ALPHA:.0e} gradings)"
    )


def _chi2_cdf(x, dof):
    """P[chi^2_dof <= x]: the regularised lower incomplete gamma P(dof / 2, x / 2), by its series."""
    a, y = dof / 2, x / 2
    if y <= 0:
        return 0.0
    term = total = 1.0 / a
    n = 0
    while term > total * 1e-16:
        n += 1
        term *= y / (a + n)
        total += term
    return min(1.0, _math.exp(a * _math.log(y) - y - _math.lgamma(a)) * total)


def _spread_problem(counts, totals, p, what):
    """None when the rows' counts (``counts[i]`` of ``totals[i]``) spread as independent draws with probability ``p``
    do, else a sentence. The sum of the squared standard scores of the rows follows a chi-square law with one degree
    per row; a fixed count per row (the same mean, no spread) makes it far too small. Level _ALPHA (lower tail)."""
    rows = [(c, n) for c, n in zip(counts, totals) if n > 0]
    stat = sum((c - n * p) ** 2 / (n * p * (1 - p)) for c, n in rows)
    _P_VALUES.append((what, _chi2_cdf(stat, len(rows))))
    if _chi2_cdf(stat, len(rows)) > _ALPHA:
        return None
    return (
        f"{what}: the counts per row vary far less than independent draws do (spread {stat:.1f} over {len(rows)} "
        f"rows; independent draws give about {len(rows)}): each element must be drawn on its own, not a fixed number"
    )
