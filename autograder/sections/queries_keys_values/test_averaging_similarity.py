# Hidden: other sizes, float64 inputs, and queries that differ wildly must still get the plain mean; the softmax and
# the product are torch's, so only this exercise is tested.
# Contract: the page's sentences each check relies on.
#   "attention pooling averages the values, whatever the query" -> queries times 100: weights 1/9, the mean
#   "scores of shape (Q, K), of the queries' dtype and device." -> shape (3, 9); float64 scores for float64 queries
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
