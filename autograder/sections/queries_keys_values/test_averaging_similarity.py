# Hidden: other sizes, float64 inputs, and queries that differ wildly must still get the plain mean; the softmax and
# the product are torch's, so only this exercise is tested.
# Contract: the page's sentences each check relies on.
#   "attention pooling averages the values, whatever the query" -> queries times 100: weights 1/9, the mean
#   "scores of shape (Q, K), of the queries' dtype and device." -> shape (3, 9); float64 scores for float64 queries;
#     'meta' scores for 'meta' queries
# Classes: each kind of mistake, and the check that catches it.
#   value -> weights 1/9 and the plain mean for queries that differ wildly (the dot products as scores)
#   dtype -> float64 scores for float64 queries (zeros of the default dtype)
#   device -> 'meta' queries and keys (a stand-in for a GPU) give 'meta' scores (torch.zeros without device=)
#   pass-through -> 3 queries and 9 keys, read from the inputs (the visible test's (4, 7) hard-coded)
#   state -> n/a: the inputs are only read for their shape, dtype and device
#   gradient -> n/a: the scores are constant; there is nothing to differentiate
#   type -> the scores are a tensor of shape (3, 9) (a Python number, "any constant", returned as it is)
#   edge -> n/a: the scores are constant, so no size is special; Q = 3 and K = 9 are read from the inputs
#   symmetry -> 3 queries and 9 keys: scores of shape (K, Q) fail the shape check
#   train-eval -> n/a: a function without a module, dropout or mode
#   efficiency -> n/a: the contract promises no time or memory bound
_T = checks.trusted
_g = _T.Generator().manual_seed(1103)
_q = 100 * _T.randn(3, 2, generator=_g, dtype=_T.float64)
_k = _T.randn(9, 2, generator=_g, dtype=_T.float64)
_v = _T.randn(9, 4, generator=_g, dtype=_T.float64)
_s = averaging_similarity(_q, _k)
checks.check_shape(_s, (3, 9), "scores (hidden, 3 queries x 9 keys)")
checks.check_true(
    _s.dtype == _q.dtype,
    f"the scores of float64 queries are float64 (hidden); they are {_s.dtype}",
    hint="make the scores with the queries' dtype and device, e.g. with queries.new_zeros",
)
# The pooling by trusted torch functions, never the student's Exercise 1 (a wrong attention_pooling must not cost
# points here).
_w = _T.softmax(_s, dim=-1)  # (Q, K)
checks.check_close(_w.to(_T.float64), _T.ones(3, 9, dtype=_T.float64) / 9, "weights (hidden)", atol=1e-12)
_out = _T.matmul(_w, _v)  # (Q, K) @ (K, v) -> (Q, v)
_mean = [sum(col) / 9 for col in zip(*_v.tolist())]
checks.check_close(_out.to(_T.float64), _T.tensor([_mean] * 3, dtype=_T.float64), "output (hidden)", atol=1e-6)
# Devices: queries and keys on the 'meta' device (shapes, no data: a stand-in for a GPU) must give 'meta' scores of the
# queries' dtype. Making zeros there costs nothing (no arithmetic runs on 'meta').
_qm = _T.zeros(3, 2, dtype=_T.float64, device="meta")
_km = _T.zeros(9, 2, dtype=_T.float64, device="meta")
try:
    _sm, _err = averaging_similarity(_qm, _km), None
except Exception as _e:  # report what the student's code raised, in one line
    _sm, _err = None, f"{type(_e).__name__}: {str(_e).splitlines()[0] if str(_e) else ''}"
checks.check_true(_err is None, f"averaging_similarity of queries on the 'meta' device raised {_err}")
checks.check_shape(_sm, (3, 9), "scores of 'meta' queries (hidden)")
checks.check_true(
    str(_sm.device) == "meta" and _sm.dtype == _T.float64,
    f"the scores of float64 queries on the 'meta' device are float64 on 'meta' (hidden); got {_sm.dtype} on "
    f"{_sm.device}",
    hint="make the scores with the queries' dtype and device: queries.new_zeros(...), or device=queries.device",
)
