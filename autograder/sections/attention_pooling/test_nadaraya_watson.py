# Hidden: float64, unsorted keys, other sizes and widths, three kernels, a single query; references from
# explicit loops over queries and keys in plain Python. The answer must not call qkv's estimator.
# Contract: the page's sentences each check relies on.
#   "without calling the reference `qkv.nadaraya_watson.nadaraya_watson`." -> qkv's estimator forbidden
#   "the weight of key j for query i is proportional to" -> weights against loops: Gaussian of widths 0.7, 0.3,
#   "kernel((x_val[i] - x_train[j]) / sigma): query minus key." -> triangular 2.5, constant (sign not tested yet)
#   "each row non-negative and summing to 1" -> the same weights
#   "y_hat of shape (Q,), the predictions" -> y_hat against loops
#   "both in the dtype of x_train (float64 stays float64)" -> float64 compared at 1e-9
#   "x_train: training inputs, the keys; tensor of shape (K,)." -> 9 unsorted keys, 6 queries, then one query
#   "def nadaraya_watson(x_train, y_train, x_val, kernel, sigma=1.0):" -> the default width 1
import math as _math

import qkv.nadaraya_watson as _nwm

_T = checks.trusted
_g = _T.Generator().manual_seed(1121)
_xk = 5 * _T.rand(9, generator=_g, dtype=_T.float64)  # keys, not sorted
_yk = _T.randn(9, generator=_g, dtype=_T.float64)
_xq = 6 * _T.rand(6, generator=_g, dtype=_T.float64) - 0.5
_cases = [
    ("Gaussian", lambda u: _T.exp(-u * u / 2), lambda v: _math.exp(-v * v / 2), 0.7),
    ("Gaussian", lambda u: _T.exp(-u * u / 2), lambda v: _math.exp(-v * v / 2), 0.3),
    ("triangular", lambda u: (1 - u.abs()).clamp(min=0), lambda v: max(0.0, 1.0 - abs(v)), 2.5),
    ("constant", lambda u: 0 * u + 1, lambda v: 1.0, 0.1),
]


def _reference(queries, sigma, ref_kernel):
    weights, preds = [], []
    for q in queries:
        a = [ref_kernel((q - k) / sigma) for k in _xk.tolist()]
        weights.append([ai / sum(a) for ai in a])
        preds.append(sum(w * y for w, y in zip(weights[-1], _yk.tolist())))
    return _T.tensor(preds, dtype=_T.float64), _T.tensor(weights, dtype=_T.float64)


for _name, _kernel, _ref_kernel, _sigma in _cases:
    _y_ref, _w_ref = _reference(_xq.tolist(), _sigma, _ref_kernel)
    with checks.forbid_reference(nadaraya_watson, (_nwm, "nadaraya_watson"), (_nwm, "_weights")):
        _y_hat, _w = nadaraya_watson(_xk, _yk, _xq, _kernel, sigma=_sigma)
    checks.check_close(
        _w,
        _w_ref,
        f"attention_weights ({_name}, width {_sigma}, 6 queries x 9 keys, float64)",
        atol=1e-9,
        hint=(
            "divide the differences by sigma, then divide each query's kernel values by their sum"
            " (not a softmax of them)"
        ),
    )
    checks.check_close(
        _y_hat,
        _y_ref,
        f"y_hat ({_name}, width {_sigma}, float64)",
        atol=1e-9,
        hint="keep the inputs' dtype: do not convert the weights to float32",
    )
_y_ref, _w_ref = _reference(_xq.tolist()[:1], 1.0, lambda v: _math.exp(-v * v / 2))
_y_hat, _w = nadaraya_watson(_xk, _yk, _xq[:1], lambda u: _T.exp(-u * u / 2))
checks.check_close(_w, _w_ref, "attention_weights for one query with the default width 1 (hidden)", atol=1e-9)
checks.check_close(_y_hat, _y_ref, "y_hat for one query with the default width 1 (hidden)", atol=1e-9)
