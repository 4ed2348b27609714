# Hidden: float16 (2 bytes), values of another size, batches, fused and materialised; references in plain Python,
# the materialised scores against the docstring's range; the answer may not call qkv's own count.
# Contract: the page's sentences each check relies on.
#   "Q, K and V are read once and the output (B, Q, v) written once." -> queries, keys, values, output
#   "When materialize is True, the (B, Q, K) scores are written and read back" -> scores_and_weights
#   "and the (B, Q, K) weights written and read back: 4 B Q K numbers." -> scores_and_weights
#   "The tests accept any count from 4 B Q K to 6 B Q K" -> 4 B Q K <= scores_and_weights <= 6 B Q K numbers
#   "A fused kernel (materialize=False) moves none of them." -> scores_and_weights 0 when fused
#   "dtype_bytes: bytes per number (4 for float32, 2 for float16)." -> dtype_bytes 2, 4 and 8
#   "n_q, n_k, d, d_v, batch: as in attention_flops." -> d_v of another size, d_v=None, batches
#   "A plain dict of integers with the keys" -> type(...) is dict; every value a Python int
#   ""total", exactly the sum of the five;" -> total == the sum of the five entries
#   "refuse an answer that calls the course's own version of the function" -> timing.attention_bytes not called
# Classes: each kind of mistake, and the check that catches it.
#   value -> every entry against the reference; the scores within 4 to 6 crossings (counted once or twice fails)
#   dtype -> dtype_bytes 2, 4 and 8: every number counted as 4 bytes (float32) fails in float16
#   device -> n/a: no tensor, so no device
#   pass-through -> batch 3 and 8, d_v = 16 and 2 beside d: a count that ignores batch or d_v differs
#   state -> n/a: a function of ints and a flag that returns a new dict; there is nothing to keep or change
#   gradient -> n/a: counts, nothing is trained through them
#   type -> type(...) is dict, and every value a Python int (not a float: exact counts)
#   edge -> materialize=False: "scores_and_weights" is 0 and still a key; d_v=None means d
#   symmetry -> d != d_v and Q != K: keys counted with d_v and values with d leave the total but not the entries
#   train-eval -> n/a: no module, no training behaviour
#   efficiency -> n/a: the contract promises no time or memory (closed forms are instant)
import qkv.timing as _timing


def _reference(n_q, n_k, d, d_v, batch, s):
    """The entries the docstring fixes exactly: every one but scores_and_weights."""
    return {
        "queries": s * batch * n_q * d,
        "keys": s * batch * n_k * d,
        "values": s * batch * n_k * d_v,
        "output": s * batch * n_q * d_v,
    }


_ENTRIES = ("queries", "keys", "values", "output", "scores_and_weights")

with checks.forbid_reference(attention_bytes, (_timing, "attention_bytes")):
    for _args in [
        (5, 7, 3, 2, 1, 2, True),
        (5, 7, 3, 2, 1, 2, False),
        (4, 9, 8, 16, 3, 4, True),
        (1, 1, 1, 1, 1, 8, True),
        (32768, 32768, 64, 64, 8, 2, True),
    ]:
        _n_q, _n_k, _d, _d_v, _b, _s, _m = _args
        _call = (
            f"attention_bytes(n_q={_n_q}, n_k={_n_k}, d={_d}, d_v={_d_v}, batch={_b}, dtype_bytes={_s}, "
            f"materialize={_m})"
        )
        _got = attention_bytes(_n_q, _n_k, _d, d_v=_d_v, batch=_b, dtype_bytes=_s, materialize=_m)
        checks.check_true(type(_got) is dict, "attention_bytes returns a dict")
        _types = sorted({type(_v).__name__ for _v in _got.values()})
        checks.check_true(
            all(isinstance(_v, int) and not isinstance(_v, bool) for _v in _got.values()),
            f"attention_bytes returns a dict of Python ints (got values of type {', '.join(_types)})",
            hint="count with integers only (no float(), no /): bytes are whole numbers",
        )
        for _key, _value in _reference(*_args[:-1]).items():
            checks.check_scalar(
                _got.get(_key),
                _value,
                f"{_call}[{_key!r}]",
                atol=0.5,
                hint="multiply by dtype_bytes and the batch; values and output have size d_v",
            )
        _matrix = _s * _b * _n_q * _n_k  # the bytes of one (B, Q, K) matrix
        _stored = _got.get("scores_and_weights")
        if _m:
            checks.check_true(
                type(_stored) is int and 4 * _matrix <= _stored <= 6 * _matrix,
                f"{_call}['scores_and_weights'] is from 4 B Q K to 6 B Q K numbers ({4 * _matrix} to "
                f"{6 * _matrix} bytes); got {_stored}",
                hint="the scores written and read back, the weights written and read back: 4 crossings of the "
                "(B, Q, K) matrix (6 if the scaling is a kernel of its own), times dtype_bytes",
            )
        else:
            checks.check_scalar(_stored, 0, f"{_call}['scores_and_weights']", atol=0)
        checks.check_scalar(
            _got.get("total"),
            sum(_got[_key] for _key in _ENTRIES),
            f"{_call}['total'], against the sum of its five entries",
            atol=0.5,
            hint="the total is the sum of the five entries",
        )
    _got = attention_bytes(3, 5, 4, batch=2, dtype_bytes=2)  # d_v defaults to d
    checks.check_scalar(_got.get("values"), 2 * 2 * 5 * 4, "values when d_v is None", atol=0)
