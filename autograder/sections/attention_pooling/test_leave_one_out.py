# Hidden: float64 noisy data with unsorted candidate widths and two kernels, references from refitting without
# each point in plain Python; a tie, which the first width must win; the answer must not call qkv's versions.
# Contract: the page's sentences each check relies on.
#   "Write `loo_loss` and `select_bandwidth` yourself," -> qkv's loo_loss, select_bandwidth, estimator forbidden
#   "without calling the reference versions in `qkv.nadaraya_watson`." -> the same
#   "the mean over i of (f_{-i}(x_i) - y_i)^2," -> loo_loss against refitting: Gaussian 0.25, triangular 1.5
#   "where f_{-i} is the estimate from every point except i." -> the same
#   "the loss as a Python float (not a tensor), computed in the dtype of x" -> a float; float64 data, at 1e-9
#   "and on its device:" -> the loss of CPU data with 'meta' as the default device
#   "weight of point j is proportional to kernel((x[i] - x[j]) / sigma)," -> a shifted Gaussian, not symmetric
#   "x: training inputs, a float32 or float64 tensor of shape (n,), n >= 2." -> n = 2; float64 data
#   "The list is left as it was." -> the widths after select_bandwidth
#   "losses is a list of floats" -> a list of Python floats
#   "The inputs need not be sorted." -> 25 unsorted points
#   "sigmas: a list of candidate widths, in any order." -> the widths [1.0, 0.08, 0.3, 3.0, 0.15]
#   "losses[i] = loo_loss(x, y, kernel, sigmas[i])" -> losses in the order of the widths
#   "best_sigma is the entry of sigmas with the least loss" -> best_sigma for unsorted widths
#   "(the first of them on a tie)." -> a tie of 2.6 and 2.2, which 2.6 must win
# Classes: each kind of mistake, and the check that catches it.
#   value -> loo_loss against refitting without each point (a point that keeps its own weight)
#   dtype -> float64 data, compared at 1e-9 (kernel values cast to float32)
#   device -> CPU data with 'meta' as the default device: torch.eye(n) without device= lands on 'meta'
#   pass-through -> select_bandwidth with the boxcar given: losses of the kernel passed, not of a fixed one
#   state -> the caller's list of widths unchanged (sorted in place)
#   gradient -> n/a: the loss is a Python float, nothing is trained through it (the width is chosen on a grid)
#   type -> loo_loss a Python float, not a 0-d tensor; the losses a list of floats; best_sigma an entry of sigmas
#   edge -> n = 2; a tie, which the first width must win (the last of the tied widths)
#   symmetry -> a shifted Gaussian, not symmetric: x[j] - x[i] gives another loss
#   train-eval -> n/a: functions without a module, dropout or mode
#   efficiency -> n/a: the contract promises no time or memory bound; the (n, n) weights are allowed
import math as _math

from _shared import _device_probe  # the course's shared probes (the assembler inlines _shared.py)

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
# not symmetric: the weight of a point depends on which side of x_i it lies
_shifted = (lambda u: _T.exp(-((u - 0.8) ** 2) / 2), lambda v: _math.exp(-((v - 0.8) ** 2) / 2))
for _name, (_kernel, _ref_kernel), _sigma in [
    ("Gaussian", _gauss, 0.25),
    ("triangular", _tri, 1.5),
    ("shifted Gaussian", _shifted, 0.6),
]:
    with checks.forbid_reference(loo_loss, *_poisoned):
        _got = loo_loss(_x, _y, _kernel, _sigma)
    checks.check_true(
        isinstance(_got, float),
        f"loo_loss returns a Python float (hidden); it returned a {type(_got).__name__}",
        hint="convert the mean at the end: float(...) or .item()",
    )
    checks.check_scalar(
        _got,
        _loo_by_refitting(_x.tolist(), _y.tolist(), _ref_kernel, _sigma),
        f"loo_loss ({_name}, width {_sigma}, 25 unsorted points, float64)",
        atol=1e-9,
        hint="the weight of point j for x_i is kernel((x[i] - x[j]) / sigma): x[:, None] - x[None, :]"
        if _name == "shifted Gaussian"
        else "zero the diagonal of the kernel matrix, then normalise each row",
    )
_sigmas = [1.0, 0.08, 0.3, 3.0, 0.15]
_expected = [_loo_by_refitting(_x.tolist(), _y.tolist(), _gauss[1], s) for s in _sigmas]
with checks.forbid_reference(select_bandwidth, *_poisoned):
    _best, _losses = select_bandwidth(_x, _y, _gauss[0], _sigmas)
checks.check_true(
    _sigmas == [1.0, 0.08, 0.3, 3.0, 0.15],
    f"select_bandwidth leaves the list of widths as it was (hidden); it is now {_sigmas}",
    hint="do not sort the list in place (sigmas.sort()); loop over it in the order given",
)
checks.check_true(
    isinstance(_losses, list) and len(_losses) == 5,
    "select_bandwidth returns a list of one loss per candidate width (hidden)",
)
checks.check_true(
    all(isinstance(_l, float) for _l in _losses) and isinstance(_best, float) and _best in _sigmas,
    f"the losses are Python floats and best_sigma is an entry of sigmas (hidden); got {type(_best).__name__} "
    f"and {sorted({type(_l).__name__ for _l in _losses})}",
    hint="return sigmas[i] itself for the best i, and the losses of loo_loss as they are",
)
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
# n = 2, the fewest points: each is predicted from the other alone, so the loss is (y_1 - y_2)^2 whatever the width.
checks.check_scalar(
    loo_loss(_T.tensor([0.5, 1.5], dtype=_T.float64), _T.tensor([2.0, -1.0], dtype=_T.float64), _gauss[0], 0.7),
    9.0,
    "loo_loss of two points (hidden): each predicted from the other",
    atol=1e-9,
)
# Devices: every tensor the answer makes must be on x's device (_common.py: _device_probe); torch.eye(n) without
# device= is the classic slip.
_err = _device_probe(
    lambda: loo_loss(_x, _y, _gauss[0], 0.25),
    lambda: loo_loss(_x.to("meta"), _y.to("meta"), _gauss[0], 0.25),
    "loo_loss",
)
checks.check_true(
    _err is None,
    f"loo_loss makes its tensors on x's device (hidden): {_err}",
    hint="make every new tensor on x's device: torch.eye(n, device=x.device)",
)
