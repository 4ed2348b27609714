# Hidden: float64, unsorted keys, other sizes and widths, three kernels, a single query; references from
# explicit loops over queries and keys in plain Python. The answer must not call qkv's estimator.
# Contract: the page's sentences each check relies on.
#   "without calling the reference `qkv.nadaraya_watson.nadaraya_watson`." -> qkv's estimator forbidden
#   "the weight of key j for query i is proportional to" -> weights against loops: Gaussian of widths 0.7, 0.3,
#   "kernel((x_val[i] - x_train[j]) / sigma): query minus key." -> triangular 2.5, constant; a shifted Gaussian
#   "A kernel that is not symmetric tells the two signs apart. The grader's hidden tests use one," -> shifted Gaussian
#   "each row non-negative and summing to 1" -> the same weights
#   "y_hat of shape (Q,), the predictions" -> y_hat against loops
#   "both in the dtype of x_train (float64 stays float64)" -> float64 compared at 1e-9
#   "and on its device." -> CPU results with 'meta' as the default device
#   "x_train: training inputs, the keys; tensor of shape (K,)." -> 9 unsorted keys, 6 queries, then one query
#   "def nadaraya_watson(x_train, y_train, x_val, kernel, sigma=1.0):" -> the default width 1
# Classes: each kind of mistake, and the check that catches it.
#   value -> weights and y_hat against loops (a softmax of the kernel values, normalised over the queries)
#   dtype -> float64 compared at 1e-9 (kernel values cast to float32, as D2L's code does)
#   device -> CPU inputs with 'meta' as the default device: a tensor made without device= lands on 'meta'
#   pass-through -> widths 0.7, 0.3, 2.5, 0.1 and four kernels (the width ignored, the Gaussian hard-coded)
#   state -> n/a: the inputs are only read; every in-place step of an answer acts on a tensor it made itself
#   gradient -> n/a: nothing is trained through the estimator in this section (the width is chosen on a grid)
#   type -> n/a: two tensors come back, which check_close accepts only as exactly torch.Tensor
#   edge -> a single query with the default width (weights squeezed to (K,))
#   symmetry -> a shifted Gaussian, not symmetric: key minus query gives other weights (so does D2L's (K, Q) layout)
#   train-eval -> n/a: a function without a module, dropout or mode
#   efficiency -> n/a: the contract promises no time or memory bound; the (Q, K) weights are the result
import math as _math

from _shared import _device_probe  # the course's shared probes (the assembler inlines _shared.py)

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
    # not symmetric: the weight of a key depends on which side of the query it lies
    ("shifted Gaussian", lambda u: _T.exp(-((u - 0.8) ** 2) / 2), lambda v: _math.exp(-((v - 0.8) ** 2) / 2), 0.5),
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
            "the kernel's argument is (query - key) / sigma, x_val[:, None] - x_train[None, :]; a kernel that is "
            "not symmetric tells it from key - query"
            if _name == "shifted Gaussian"
            else "divide the differences by sigma, then divide each query's kernel values by their sum"
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
# Devices: every tensor the answer makes must be on the inputs' device (_common.py: _device_probe).
_gauss_t = lambda u: _T.exp(-u * u / 2)  # noqa: E731
_err = _device_probe(
    lambda: nadaraya_watson(_xk, _yk, _xq, _gauss_t, sigma=0.7),
    lambda: nadaraya_watson(_xk.to("meta"), _yk.to("meta"), _xq.to("meta"), _gauss_t, sigma=0.7),
    "nadaraya_watson",
)
checks.check_true(
    _err is None,
    f"y_hat and the weights are made on the inputs' device (hidden): {_err}",
    hint="make every new tensor on the inputs' device: torch.zeros(..., device=x_train.device), or from the inputs",
)
