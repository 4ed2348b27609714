# Hidden: other sizes and betas, float64; references from explicit loops over pairs.
# Contract: the page's sentences each check relies on.
#   "scores[i, j] = -beta * ||queries[i] - keys[j]||^2." -> scores for beta 0.5 and 3, 5 queries x 7 keys
#   "beta: the sharpness, a positive number (10 by default)." -> scores with the default beta
#   "scores of shape (Q, K) and the dtype of the inputs" -> float64 scores compared at 1e-9
_T = checks.trusted
_g = _T.Generator().manual_seed(1102)
_q = _T.randn(5, 4, generator=_g, dtype=_T.float64)
_k = _T.randn(7, 4, generator=_g, dtype=_T.float64)
for _beta in (0.5, 3.0):
    _ref = [[-_beta * sum((a - b) ** 2 for a, b in zip(qi, kj)) for kj in _k.tolist()] for qi in _q.tolist()]
    checks.check_close(
        sharp_similarity(_q, _k, beta=_beta),
        _T.tensor(_ref, dtype=_T.float64),
        f"scores with beta={_beta} (hidden, 5 queries x 7 keys)",
        atol=1e-9,
    )
_ref = [[-10.0 * sum((a - b) ** 2 for a, b in zip(qi, kj)) for kj in _k.tolist()] for qi in _q.tolist()]
checks.check_close(
    sharp_similarity(_q, _k), _T.tensor(_ref, dtype=_T.float64), "scores with the default beta", atol=1e-9
)
