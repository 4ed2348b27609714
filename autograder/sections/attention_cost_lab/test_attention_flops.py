# Hidden: values of another size than the keys, batches, sizes whose counts overflow 32-bit integers; the products
# against references written out in plain Python, the elementwise terms against the docstring's ranges; the answer
# may not call qkv's own count.
# Contract: the page's sentences each check relies on.
#   "Convention: a multiply-add is 2 FLOPs, and the tests hold the two matrix" -> scores, weighted_sum exactly
#   "products to it exactly: 2 B Q K d for the scores, 2 B Q K v for the" -> scores, weighted_sum exactly
#   "conventions differ, so the tests accept either 0 or B Q K for the scaling" -> scale in {0, B Q K}
#   "any count from 3 B Q K to 5 B Q K for the softmax" -> 3 B Q K <= softmax <= 5 B Q K
#   "d_v: the size of the values (None means d);" -> d_v of another size; d_v=None
#   "batch: the batch size B." -> batches of 1, 2, 3 and 8
#   "Count with integers only, so that the counts are exact" -> n = 65536: counts past 32 bits, exact
#   "A plain dict of integers with the keys" -> type(...) is dict; every value a Python int
#   ""total", exactly the sum of the four." -> total == scores + scale + softmax + weighted_sum
#   "refuse an answer that calls the course's own version of the function" -> timing.attention_flops not called
# Classes: each kind of mistake, and the check that catches it.
#   value -> the products exactly (a multiply-add of 1 FLOP), the softmax per score (not per row), the total the sum
#   dtype -> n/a: no tensor is made or returned; the counts are Python ints (a float count is the type class)
#   device -> n/a: no tensor, so no device
#   pass-through -> batch of 2, 3 and 8 and d_v of another size than d: a count that ignores either differs
#   state -> n/a: a function of five ints that returns a new dict; there is nothing to keep or change
#   gradient -> n/a: counts, nothing is trained through them
#   type -> type(...) is dict, and every value a Python int (not a float: exact counts)
#   edge -> d_v=None (means d), for the weighted sum
#   symmetry -> d = 3, d_v = 2 and Q != K: the sizes of the two products swapped leave the total but not the terms
#   train-eval -> n/a: no module, no training behaviour
#   efficiency -> n/a: the contract promises no time or memory (closed forms are instant)
import qkv.timing as _timing

_TERMS = ("scores", "scale", "softmax", "weighted_sum")

with checks.forbid_reference(attention_flops, (_timing, "attention_flops")):
    for _args in [(5, 7, 3, 2, 1), (4, 4, 8, 16, 3), (1, 9, 1, 1, 2), (65536, 65536, 128, 128, 8)]:
        _n_q, _n_k, _d, _d_v, _b = _args
        _call = f"attention_flops(n_q={_n_q}, n_k={_n_k}, d={_d}, d_v={_d_v}, batch={_b})"
        _pairs = _b * _n_q * _n_k  # B Q K, the query-key pairs
        _got = attention_flops(_n_q, _n_k, _d, d_v=_d_v, batch=_b)
        checks.check_true(type(_got) is dict, "attention_flops returns a dict")
        _types = sorted({type(_v).__name__ for _v in _got.values()})
        checks.check_true(
            all(isinstance(_v, int) and not isinstance(_v, bool) for _v in _got.values()),
            f"attention_flops returns a dict of Python ints (got values of type {', '.join(_types)})",
            hint="count with integers only (no float(), no /, no 2.0): a float rounds counts past 2**53",
        )
        for _key, _value in (("scores", 2 * _pairs * _d), ("weighted_sum", 2 * _pairs * _d_v)):
            checks.check_scalar(
                _got.get(_key),
                _value,
                f"{_call}[{_key!r}]",
                atol=0.5,
                hint="2 FLOPs per multiply-add; use d for the scores and d_v for the weighted sum, multiply by the "
                "batch, and count with Python ints",
            )
        _scale, _softmax = _got.get("scale"), _got.get("softmax")
        checks.check_true(
            type(_scale) is int and _scale in (0, _pairs),
            f"{_call}['scale'] is 0 or B Q K = {_pairs}; got {_scale}",
            hint="one division per score (B Q K in all), or 0 if you fold it into another step",
        )
        checks.check_true(
            type(_softmax) is int and 3 * _pairs <= _softmax <= 5 * _pairs,
            f"{_call}['softmax'] is from 3 B Q K = {3 * _pairs} to 5 B Q K = {5 * _pairs}; got {_softmax}",
            hint="3 to 5 FLOPs per score, one score per query-key pair, times the batch",
        )
        checks.check_scalar(
            _got.get("total"),
            sum(_got[_key] for _key in _TERMS),
            f"{_call}['total'], against the sum of its four terms",
            atol=0.5,
            hint="the total is the sum of the four terms, all four",
        )
    _got = attention_flops(6, 10, 5, batch=2)  # d_v defaults to d
    checks.check_scalar(_got.get("weighted_sum"), 2 * 2 * 6 * 10 * 5, "weighted_sum when d_v is None", atol=0)
