# Hidden: T = 2, 7, 13, 30, 33, 70 and 100 (n = 1, 1, 2, 4, 5, 10, 15 noise tokens, Python's round taking 4.5 and
# 10.5 to the even side; m = 1, 1, 1, 1, 2, 3, 5 spans), 200 draws each: exactly n noise tokens in exactly m separate
# spans every time; for T = 100 every position is noise in some draw, the span lengths vary, and the share of spans
# of length 1 is that of a uniform split of n = 15 into 5 positive parts (C(13, 3) / C(14, 4) = 2/7, by an exact
# binomial test at level 1e-8, _shared._rate_problem); the generator alone decides the result.
# Contract: the page's sentences each check relies on.
#   "T: int >= 2. Returns a bool tensor (T,) with exactly" -> dtype and shape
#   "n = min(max(round(0.15 * T), 1), T - 1) True entries, forming exactly" -> n noise tokens in every draw
#   "m = max(round(n / 3), 1) runs (spans) separated by at least one False." -> m separate spans in every draw
#   "round(0.15 * 30) = round(4.5) = 4." -> T = 30: 4 noise tokens
#   "every bool (T,) tensor of n True entries in m runs equally likely, so" -> T = 100: every position is noise
#   "that the m span lengths are a uniform split of n into positive parts." -> T = 100: lengths vary; share of 1s
#   "Random, drawn with `generator` (CPU):" -> the same generator state gives the same spans
#   "The same generator state gives the same tensor, but no particular draw" -> two calls with seed 5 agree
#   "is expected: only this distribution and the counts are graded." -> counts and shares only; no draw compared
#   "the grader refuses an answer that calls the course's own version of it" -> qkv.corruption's spans not called
# Classes: each kind of mistake, and the check that catches it.
#   value -> exactly n noise tokens in exactly m separate spans in every draw, for seven T; lengths uniform
#   dtype -> a bool tensor
#   device -> n/a: drawn with a CPU generator; the contract names no device
#   pass-through -> generator: the same state gives the same spans
#   state -> n/a: a function of T and a generator, whose advancing is the contract; nothing else to keep or change
#   gradient -> n/a: positions; nothing is trained through them
#   type -> n/a: one tensor; its dtype is the dtype class
#   edge -> T = 2 and 7 (n = 1: one span of one token); Python's round on 4.5 and 10.5 (T = 30 and 70)
#   symmetry -> n/a: span_noise takes only T; no input whose symmetry could hide a mistake
#   train-eval -> n/a: a function with no training behaviour
#   efficiency -> n/a: the contract promises no time or memory
from _common import _T, _is_tensor, _math, _qc, _runs  # the section's shared helpers (the assembler inlines _common.py)
from _shared import _rate_problem  # the course's laws of random draws (the assembler inlines _shared.py)

for _Tn, _n, _S in [(2, 1, 1), (7, 1, 1), (13, 2, 1), (30, 4, 1), (33, 5, 2), (70, 10, 3), (100, 15, 5)]:
    _g = _T.Generator().manual_seed(_Tn)
    _hits = [0] * _Tn
    _lengths = set()
    _all_lengths = []
    with checks.forbid_reference(span_noise, (_qc, "corrupt_spans"), (_qc, "_composition")):
        _draws = [span_noise(_Tn, generator=_g) for _ in range(200)]
    for _d in _draws:
        _is_tensor(_d, f"span_noise({_Tn}) (hidden)", (_T.bool,), "a bool tensor")
        checks.check_shape(_d, (_Tn,), f"span_noise({_Tn}) (hidden)")
        _f = _d.tolist()
        checks.check_true(
            sum(_f) == _n,
            f"span_noise({_Tn}) has {_n} noise tokens (got {sum(_f)}; hidden)",
            hint="n = min(max(round(0.15 * T), 1), T - 1), with Python's round (round(4.5) = 4)",
        )
        checks.check_true(
            _runs(_f) == _S,
            f"span_noise({_Tn}) has {_S} separate spans (got {_runs(_f)}; hidden)",
            hint="m = max(round(n / 3), 1) spans that neither overlap nor touch",
        )
        for _t, _x in enumerate(_f):
            _hits[_t] += _x
        _run = 0
        for _x in _f + [False]:
            if _x:
                _run += 1
            elif _run:
                _lengths.add(_run)
                _all_lengths.append(_run)
                _run = 0
    if _Tn == 100:
        checks.check_true(
            min(_hits) > 0,
            "every position of T = 100 is noise in some of 200 draws (hidden)",
            hint="place the spans at random over the whole sequence, ends included",
        )
        checks.check_true(
            len(_lengths) >= 3,
            f"span lengths vary (got {sorted(_lengths)}; hidden)",
            hint="split n into m random positive lengths",
        )
        # a uniform split of n into m positive parts gives each part the length 1 with probability
        # C(n - 2, m - 2) / C(n - 1, m - 1); the parts of one draw are negatively correlated, so the exact binomial
        # test over all the spans (_shared._rate_problem) is conservative: a right answer fails it less often than
        # its level, once in 1e8 gradings
        _p1 = _math.comb(_n - 2, _S - 2) / _math.comb(_n - 1, _S - 1)
        _problem = _rate_problem(
            _all_lengths.count(1), len(_all_lengths), _p1, "spans of length 1 for a uniform split of n into m parts"
        )
        checks.check_true(
            _problem is None,
            f"{_problem} (hidden)",
            hint="draw the m - 1 cut points among 1 .. n - 1 uniformly, all distinct (torch.randperm)",
        )
_a = span_noise(100, generator=_T.Generator().manual_seed(5))
_b = span_noise(100, generator=_T.Generator().manual_seed(5))
checks.check_true(
    bool((_a == _b).all()),
    "the same generator state gives the same spans (hidden)",
    hint="draw with generator=generator",
)
