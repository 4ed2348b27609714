# Hidden: float64 and 2-D inputs, just inside and outside the window (its edge |u| = 1 ungraded: 0 or 1), far tails;
# references from math, point by point; each kernel must be the student's own function.
# Contract: the page's sentences each check relies on.
#   "Write the four kernels of {eq}`eq-kernels` yourself," -> each kernel is the student's own function
#   "without calling or assigning the reference kernels of `qkv.nadaraya_watson`." -> qkv's kernels forbidden
#   "Gaussian kernel exp(-x^2 / 2), elementwise" -> the gaussian, far tails included, float64, at 1e-12
#   "1 where |x| < 1 and 0 where |x| > 1" -> the boxcar at +-0.999, 1.001, 0.3, -3 and 7
#   "On the edge, |x| = 1 exactly, either 0 or 1 is accepted:" -> the boxcar at +-1: 0 or 1, each
#   "Constant kernel: 1 everywhere" -> the constant kernel
#   "kernel max(0, 1 - |x|), elementwise" -> the Epanechnikov kernel
#   "x: floating-point tensor of any shape" -> a (2, 5) input
#   "tensor of x's shape, dtype and device" -> shape (2, 5) kept; float64 stays float64; CPU with 'meta' default
#   "(floats 0.0 and 1.0, not booleans)." -> the boxcar's dtype float64, not bool
#   "and leaves its input as it was." -> u after each kernel
# Classes: each kind of mistake, and the check that catches it.
#   value -> each kernel at ten points against math (the Gaussian without its 1/2, the unclamped Epanechnikov)
#   dtype -> float64 in, float64 out (the constant kernel's torch.ones(x.shape), float32)
#   device -> a CPU input with 'meta' as the default device: a tensor made without device= lands on 'meta'
#   pass-through -> n/a: the one argument is x, and every value is checked
#   state -> u unchanged after each kernel (an in-place x.abs_())
#   gradient -> n/a: nothing is trained through the kernels in this section (the width is chosen on a grid)
#   type -> the boxcar returns floats, not the booleans of its comparison
#   edge -> n/a: the edge |u| = 1 is ungraded, 0 (D2L's code) or 1 (its equation); +-0.999, 1.001 are under value
#   symmetry -> negative and positive points: the Epanechnikov kernel written 1 - x instead of 1 - |x|
#   train-eval -> n/a: functions without a module, dropout or mode
#   efficiency -> n/a: elementwise functions; the contract promises no time or memory bound
import math as _math

from _shared import _device_probe  # the course's shared probes (the assembler inlines _shared.py)

import qkv.nadaraya_watson as _nwm

_T = checks.trusted
_pts = [-3.0, -1.0, -0.999, -0.5, 0.0, 0.3, 0.999, 1.0, 1.001, 7.0]
_u = _T.tensor(_pts, dtype=_T.float64).reshape(2, 5)
_pts_2d = _u.tolist()
_refs = [
    ("gaussian", gaussian, lambda v: _math.exp(-v * v / 2)),
    ("boxcar", boxcar, lambda v: 1.0 if abs(v) < 1 else 0.0),
    ("constant", constant, lambda v: 1.0),
    ("epanechnikov", epanechnikov, lambda v: max(0.0, 1.0 - abs(v))),
]
_edge = _u.abs() == 1  # the boxcar's edge: 0 (D2L's code, <) and 1 (D2L's equation, <=) are both accepted
_hints = {
    "gaussian": "exp(-u**2 / 2): keep the factor 1/2 in the exponent",
    "boxcar": "1 inside the window |u| < 1, 0 outside it (|u| > 1)",
    "constant": "1 everywhere",
    "epanechnikov": "1 - |u|, but never below 0",
}
_poisoned = [(_nwm, n) for n in ("gaussian", "boxcar", "constant", "epanechikov", "epanechnikov")]
for _name, _fn, _ref in _refs:
    checks.check_true(
        not str(getattr(_fn, "__module__", "")).startswith("qkv"),
        f"{_name} is your own function",
        hint="write the kernel yourself instead of assigning the one from qkv",
    )
    with checks.forbid_reference(_fn, *_poisoned):
        _out = _fn(_u)
    checks.check_true(
        _u.tolist() == _pts_2d,
        f"{_name} leaves its input as it was (hidden)",
        hint="return a new tensor: x.abs() and torch.clamp(...), not the in-place x.abs_() or x.clamp_()",
    )
    checks.check_shape(_out, (2, 5), f"{_name} of a (2, 5) tensor (hidden)", hint="act elementwise, keep the shape")
    checks.check_true(
        _out.dtype == _T.float64,
        f"{_name} of a float64 tensor is float64 (hidden)",
        hint="build the result from x's dtype, e.g. torch.ones_like(x) or .to(x.dtype)",
    )
    _expected = _T.tensor([_ref(v) for v in _pts], dtype=_T.float64).reshape(2, 5)
    if _name == "boxcar":
        _at_edge = _out[_edge].tolist()
        checks.check_true(
            all(v in (0.0, 1.0) for v in _at_edge),
            f"boxcar at u = -1 and 1 is 0 or 1 (hidden): {_at_edge}",
            hint="either convention is accepted on the edge |u| = 1, but the boxcar's values are 0 and 1 only",
        )
        _expected = _T.where(_edge, _out.detach(), _expected)  # the edge is ungraded: whichever of 0 and 1
    checks.check_close(
        _out,
        _expected,
        f"{_name} at u = {_pts} (hidden, float64)",
        atol=1e-12,
        hint=_hints[_name],
    )
    # Devices: every tensor the kernel makes must be on x's device (_common.py: _device_probe).
    _err = _device_probe(lambda f=_fn: f(_u), lambda f=_fn: f(_u.to("meta")), _name)
    checks.check_true(
        _err is None,
        f"{_name} makes its result on x's device (hidden): {_err}",
        hint="build the result from x: torch.ones_like(x), .to(x.dtype), or device=x.device",
    )
