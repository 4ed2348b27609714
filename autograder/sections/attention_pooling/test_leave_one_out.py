# Hidden: float64 noisy data with unsorted candidate widths and two kernels, references from refitting without
# each point in plain Python; a tie, which the first width must win; the answer must not call qkv's versions.
# Contract: the page's sentences each check relies on.
#   "Write `loo_loss` and `select_bandwidth` yourself," -> qkv's loo_loss, select_bandwidth, estimator forbidden
#   "without calling the reference versions in `qkv.nadaraya_watson`." -> the same
#   "the mean over i of (f_{-i}(x_i) - y_i)^2," -> loo_loss against refitting: Gaussian 0.25, triangular 1.5
#   "where f_{-i} is the estimate from every point except i." -> the same
#   "the loss as a Python float, computed in the dtype of x" -> float64 data, compared at 1e-9
#   "The inputs need not be sorted." -> 25 unsorted points
#   "sigmas: a list of candidate widths, in any order." -> the widths [1.0, 0.08, 0.3, 3.0, 0.15]
#   "losses[i] = loo_loss(x, y, kernel, sigmas[i])" -> losses in the order of the widths
#   "best_sigma is the entry of sigmas with the least loss" -> best_sigma for unsorted widths
#   "(the first of them on a tie)." -> a tie of 2.6 and 2.2, which 2.6 must win
import math as _math

import qkv.nadaraya_watson as _nwm

_T = checks.trusted
_poisoned = [(_nwm, n) for n in ("loo_loss", "select_bandwidth", "nadaraya_watson", "_weights")]
_g = _T.Generator().manual_seed(1122)
_x = 5 * _T.rand(25, generator=_g, dtype=_T.float64)  # not sorted
_y = 2 * _T.tensor([_math.sin(v) for v in _x.tolist()], dtype=_T.float64) + _x
_y = _y + _T.randn(25, generator=_g, dtype=_T.float64)


def _loo_by_refitting(xs, ys, ref_kernel, sigma):
    errors = []
    for i in range(len(xs)):
        a = [ref_kernel((xs[i] - xs[j]) / sigma) if j != i else 0.0 for j in range(len(xs))]
        errors.append((sum(aj * yj for aj, yj in zip(a, ys)) / sum(a) - ys[i]) ** 2)
    return sum(errors) / len(errors)


_gauss = (lambda u: _T.exp(-u * u / 2), lambda v: _math.exp(-v * v / 2))
_tri = (lambda u: (1 - u.abs()).clamp(min=0), lambda v: max(0.0, 1.0 - abs(v)))
for _name, (_kernel, _ref_kernel), _sigma in [("Gaussian", _gauss, 0.25), ("triangular", _tri, 1.5)]:
    with checks.forbid_reference(loo_loss, *_poisoned):
        _got = loo_loss(_x, _y, _kernel, _sigma)
    checks.check_scalar(
        _got,
        _loo_by_refitting(_x.tolist(), _y.tolist(), _ref_kernel, _sigma),
        f"loo_loss ({_name}, width {_sigma}, 25 unsorted points, float64)",
        atol=1e-9,
        hint="zero the diagonal of the kernel matrix, then normalise each row",
    )
_sigmas = [1.0, 0.08, 0.3, 3.0, 0.15]
_expected = [_loo_by_refitting(_x.tolist(), _y.tolist(), _gauss[1], s) for s in _sigmas]
with checks.forbid_reference(select_bandwidth, *_poisoned):
    _best, _losses = select_bandwidth(_x, _y, _gauss[0], _sigmas)
checks.check_true(len(_losses) == 5, "select_bandwidth returns one loss per candidate width (hidden)")
checks.check_close(
    _T.tensor([float(v) for v in _losses], dtype=_T.float64),
    _T.tensor(_expected, dtype=_T.float64),
    "losses for the widths [1.0, 0.08, 0.3, 3.0, 0.15] (hidden)",
    atol=1e-9,
    hint="keep the losses in the order of the given widths",
)
checks.check_scalar(_best, _sigmas[_expected.index(min(_expected))], "best_sigma (hidden, unsorted widths)")
# A tie: with the boxcar, any width in (2, 3] sees the same neighbours; the first of the tied widths wins.
_box = lambda u: (u.abs() < 1).to(u.dtype)
_best, _losses = select_bandwidth(
    _T.tensor([0.0, 1.0, 3.0], dtype=_T.float64), _T.tensor([1.0, 2.0, 4.0], dtype=_T.float64), _box, [5.0, 2.6, 2.2]
)
checks.check_close(
    _T.tensor([float(v) for v in _losses], dtype=_T.float64),
    _T.tensor([3.5, 1.75, 1.75], dtype=_T.float64),
    "losses of a hand-worked case (hidden)",
    atol=1e-9,
)
checks.check_scalar(
    _best,
    2.6,
    "best_sigma when two widths tie (hidden)",
    hint="on a tie return the first of the tied widths, as min() over the list does",
)
