# Hidden: rows of float64 logits with many ties (a few levels), top_p from 0.05 to 1, against a brute-force search
# for the smallest set of tokens whose total reaches top_p, ties kept, renormalised; temperatures 0.5 and 3; a batch
# (3, 4, V) of rows; logits of size 1e4, at temperatures 1 and 1e4; float32 and float64 kept; a float32 row whose
# nucleus is one token larger when summed in float64, as the contract asks; logits unchanged; top_p
# 0, 1.5 and -0.1 refused; no call to the reference.
# Contract: the page's sentences each check relies on.
#   "With p = softmax(logits / temperature) over the last axis, the nucleus" -> temperatures 0.5, 3; a (3, 4, V) batch
#   "of each row holds, from the most likely token down, every token whose" -> against the brute-force nucleus
#   "more likely tokens add up to less than top_p, and every token exactly as" -> top_p reached exactly by one token
#   "likely as the least likely one of these (ties are all kept)." -> rows with ties at the cut
#   "Returns p on the nucleus and 0 elsewhere, divided by its sum." -> renormalised probabilities
#   "top_p = 1 keeps every token; a ValueError if top_p is not in (0, 1]." -> top_p 1; top_p 0, 1.5, -0.1 refused
#   "logits (..., V) -> probabilities (..., V), in logits' dtype." -> float32 in, float32 out; float64 kept
#   "logits is not changed." -> logits compared with a copy after a call
#   "Sums are compared in float64." -> float32 logits whose nucleus differs by 6e-8 between float32 and float64
#   "p is right for logits of any size, at any temperature." -> logits of size 1e4 at temperatures 1 and 1e4
# Classes: each kind of mistake, and the check that catches it.
#   value -> against the brute-force nucleus (sum_includes_the_token, not_renormalised)
#   dtype -> float32 in, float32 out, sums in float64 (cast_dropped: the final .to(logits.dtype), logits.double())
#   device -> n/a: every tensor comes from logits by sorting, summing and masking
#   pass-through -> temperature reaches the softmax (temperature_ignored)
#   state -> logits unchanged after a call (divided_in_place)
#   gradient -> n/a: a sampling distribution; nothing is trained through it
#   type -> n/a: one tensor, checked by shape and dtype
#   edge -> ties kept (ties_cut_by_rank); top_p outside (0, 1] refused (no_range_check); logits of 1e4 (unguarded)
#   symmetry -> a (3, 4, V) batch: a softmax or a sort over another axis differs (softmax_over_rows)
#   train-eval -> n/a: a function with no training behaviour
#   efficiency -> n/a: the contract promises no time or memory
import itertools as _it

from _common import _T, _f64, _md  # the section's shared helpers (the assembler inlines _common.py)

_g = _T.Generator().manual_seed(2605)


def _nucleus(row, p):
    n = len(row)
    for size in range(1, n + 1):
        best = max(_it.combinations(range(n), size), key=lambda s: sum(row[i] for i in s))
        if sum(row[i] for i in best) >= p - 1e-12:
            least = min(row[i] for i in best)
            return [i for i in range(n) if row[i] >= least]
    return list(range(n))


def _reference(logits, p, tau):
    out = []
    for row in (logits.to(_f64) / tau).softmax(-1).reshape(-1, logits.shape[-1]).tolist():
        keep = _nucleus(row, p)
        total = sum(row[i] for i in keep)
        out.append([row[i] / total if i in keep else 0.0 for i in range(len(row))])
    return _T.tensor(out, dtype=_f64).reshape(logits.shape)


with checks.forbid_reference(top_p_distribution, (_md, "top_p_distribution")):
    _levels = _T.randint(-3, 4, (40, 6), generator=_g).to(_f64) * 0.7  # few levels: ties are common
    for _p in (0.05, 0.3, 0.5, 0.8, 0.95, 1.0):
        _kept = _levels.clone()
        _got = top_p_distribution(_levels, _p)
        checks.check_close(_levels, _kept, "logits after a call (hidden): not changed", atol=0, rtol=0,
                           hint="logits / temperature makes a new tensor; logits /= changes the caller's")  # fmt: skip
        checks.check_close(_got, _reference(_levels, _p, 1.0), f"top_p_distribution(logits, {_p}) (hidden)",
                           atol=1e-9, rtol=1e-7,
                           hint="a token is in while the tokens before it sum to < top_p; ties with the last one in "
                                "are in; then divide by the sum")  # fmt: skip
    _exact = _T.tensor([[0.5, 0.25, 0.25], [0.2, 0.2, 0.6]], dtype=_f64).log()  # sums that reach top_p exactly
    checks.check_close(top_p_distribution(_exact, 0.5), _reference(_exact, 0.5, 1.0),
                       "a nucleus that reaches top_p exactly (hidden)", atol=1e-9, rtol=1e-7,
                       hint="compare the sums before each token with top_p in float64")  # fmt: skip
    _batch = _T.randn(3, 4, 7, generator=_g, dtype=_f64) * 2
    for _tau in (0.5, 3.0):
        checks.check_close(top_p_distribution(_batch, 0.7, _tau), _reference(_batch, 0.7, _tau),
                           f"a (3, 4, 7) batch at temperature {_tau} (hidden)", atol=1e-9, rtol=1e-7,
                           hint="softmax(logits / temperature) over the last axis, row by row")  # fmt: skip
    _big = _batch * 1e4  # logits of size 1e4: exp overflows unless the softmax subtracts the maximum
    checks.check_close(
        top_p_distribution(_big, 0.7),
        _reference(_big, 0.7, 1.0),
        "logits of size 1e4 (hidden)",
        atol=1e-9,
        rtol=1e-7,
        hint="torch.softmax subtracts the maximum; exp / sum does not",
    )
    checks.check_close(
        top_p_distribution(_big, 0.7, 1e4),
        _reference(_big, 0.7, 1e4),
        "logits of size 1e4 at temperature 1e4 (hidden)",
        atol=1e-9,
        rtol=1e-7,
        hint="divide the logits by the temperature before the softmax: softmax(logits) ** (1 / temperature) "
        "loses the tokens whose probability underflows to 0 at temperature 1",
    )
    _single = top_p_distribution(_batch.float(), 0.7)
    checks.check_true(_single.dtype == _T.float32, f"float32 logits give float32 (hidden), got {_single.dtype}")
    # float32 logits whose third token is more likely than top_p by 6e-8 only in float64: the two tokens above it add
    # up to 0.67522383 in float64 but to 0.67522389 = top_p in float32, so a nucleus summed in float32 leaves it out.
    _close = _T.tensor(
        [1.6065521240234375, 0.3496667742729187, 0.17795619368553162, -1.2274360656738281, 0.09236489981412888,
         -2.736518383026123, 0.674990177154541, 2.0222318172454834],
        dtype=_T.float32,
    )  # fmt: skip
    _kept = int((top_p_distribution(_close, 0.6752238869667053) > 0).sum())
    checks.check_true(
        _kept == 3,
        f"a nucleus whose sum reaches top_p only in float32 keeps {_kept} tokens, not 3 (hidden)",
        hint="compute the probabilities and their sums in float64 (logits.double()), then return logits' dtype",
    )
    for _bad in (0.0, 1.5, -0.1):
        try:
            top_p_distribution(_batch, _bad)
            _refused = False
        except ValueError:
            _refused = True
        checks.check_true(_refused, f"top_p = {_bad} raises a ValueError (hidden)")
