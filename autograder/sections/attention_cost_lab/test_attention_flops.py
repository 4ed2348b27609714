# Hidden: values of another size than the keys, batches, sizes whose counts overflow 32-bit integers; references
# written out in plain Python; the answer may not call qkv's own count.
# Contract: the page's sentences each check relies on.
#   "Convention: a multiply-add is 2 FLOPs; any other elementwise operation is 1;" -> every term against the reference
#   "the softmax costs 5 per score (max, subtract, exp, add to the sum, divide)." -> the softmax term
#   "d_v: the size of the values (None means d);" -> d_v of another size; d_v=None
#   "batch: the batch size B." -> batches of 1, 2, 3 and 8
#   "Count with integers only, so that the counts are exact" -> n = 65536: counts past 32 bits, atol 0.5
#   "A plain dict of integers with the keys" -> type(...) is dict; every value a Python int
#   "refuse an answer that calls the course's own version of the function" -> timing.attention_flops not called
# Classes: each kind of mistake, and the check that catches it.
#   value -> every term against the reference (a softmax of 3, a multiply-add of 1 FLOP)
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


def _reference(n_q, n_k, d, d_v, batch):
    pairs = batch * n_q * n_k
    parts = {"scores": 2 * pairs * d, "scale": pairs, "softmax": 5 * pairs, "weighted_sum": 2 * pairs * d_v}
    parts["total"] = sum(parts.values())
    return parts


with checks.forbid_reference(attention_flops, (_timing, "attention_flops")):
    for _args in [(5, 7, 3, 2, 1), (4, 4, 8, 16, 3), (1, 9, 1, 1, 2), (65536, 65536, 128, 128, 8)]:
        _n_q, _n_k, _d, _d_v, _b = _args
        _got = attention_flops(_n_q, _n_k, _d, d_v=_d_v, batch=_b)
        checks.check_true(type(_got) is dict, "attention_flops returns a dict")
        _types = sorted({type(_v).__name__ for _v in _got.values()})
        checks.check_true(
            all(isinstance(_v, int) and not isinstance(_v, bool) for _v in _got.values()),
            f"attention_flops returns a dict of Python ints (got values of type {', '.join(_types)})",
            hint="count with integers only (no float(), no /, no 2.0): a float rounds counts past 2**53",
        )
        for _key, _value in _reference(*_args).items():
            checks.check_scalar(
                _got.get(_key),
                _value,
                f"attention_flops(n_q={_n_q}, n_k={_n_k}, d={_d}, d_v={_d_v}, batch={_b})[{_key!r}]",
                atol=0.5,
                hint="use d_v for the weighted sum, multiply everything by the batch, and count with Python ints",
            )
    _got = attention_flops(6, 10, 5, batch=2)  # d_v defaults to d
    checks.check_scalar(_got.get("weighted_sum"), 2 * 2 * 6 * 10 * 5, "weighted_sum when d_v is None", atol=0)
