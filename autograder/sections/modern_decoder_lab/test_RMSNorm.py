# Hidden: against torch.nn.RMSNorm with drawn scales, in float64 and float32, widths 1, 7 and 33, eps 1e-6 (the
# default) and 0.1; a zero vector; bfloat16 and float16 inputs against the float32 computation cast back; the
# gradients to X and to the scale against torch's; X unchanged; no call to the reference.
# Contract: the page's sentences each check relies on.
#   "self.weight = nn.Parameter(torch.ones(num_hiddens)), its one parameter." -> ['weight'], ones, a Parameter
#   "forward(X): X (..., num_hiddens) -> X / sqrt(mean(X**2) + eps) * weight," -> against torch.nn.RMSNorm
#   "the mean over the last axis; (..., num_hiddens), in X's dtype." -> (2, 3, 7) rows of other scales; float64 kept
#   "float16 or bfloat16 X is normalised in float32 and cast back to its" -> half inputs of size 300
#   "__init__(num_hiddens, eps=1e-6): self.eps = eps" -> eps 0.1 against torch's with eps 0.1; default 1e-6
#   "X is not changed." -> X compared with a copy after a call
# Classes: each kind of mistake, and the check that catches it.
#   value -> against torch.nn.RMSNorm (mean_subtracted, no_sqrt)
#   dtype -> float64 in, float64 out; half inputs normalised in float32 (squares_in_half)
#   device -> n/a: forward makes no tensor of its own, and the scale follows .to(device)
#   pass-through -> eps 0.1 reaches forward (eps_ignored)
#   state -> X unchanged after a call (scaled_in_place)
#   gradient -> gradients to X and to the scale against torch's (rms_detached)
#   type -> the scale is an nn.Parameter, the module's one parameter (weight_not_a_parameter)
#   edge -> a zero vector gives zeros, not NaN (no_eps)
#   symmetry -> rows of (2, 3, 7) with different scales: the mean over every axis differs (mean_over_all_axes)
#   train-eval -> n/a: RMSNorm computes the same in both modes
#   efficiency -> n/a: the contract promises no time or memory
from _common import _T, _f64, _md, _torch  # the section's shared helpers (the assembler inlines _common.py)

_g = _T.Generator().manual_seed(2601)


def _theirs(width, eps, weight, dtype=_f64):
    norm = _torch.nn.RMSNorm(width, eps=eps, dtype=dtype)
    with _torch.no_grad():
        norm.weight.copy_(weight)
    return norm


with checks.forbid_reference(RMSNorm, (_md, "RMSNorm")):
    _ours = RMSNorm(5)
    _params = list(_ours.named_parameters())
    checks.check_true(
        [n for n, _ in _params] == ["weight"] and isinstance(_ours.weight, _torch.nn.Parameter),
        "RMSNorm's one parameter is the nn.Parameter weight (hidden)",
        hint="self.weight = nn.Parameter(torch.ones(num_hiddens)); eps is a number, not a parameter",
    )
    for _width in (1, 7, 33):
        for _eps in (None, 0.1):
            _ours = (RMSNorm(_width) if _eps is None else RMSNorm(_width, _eps)).double()
            _w = 1 + _T.randn(_width, generator=_g, dtype=_f64) * 0.5
            with _torch.no_grad():
                _ours.weight.copy_(_w)
            _X = _T.randn(2, 3, _width, generator=_g, dtype=_f64) * _T.tensor([[[0.01]], [[30.0]]], dtype=_f64)
            _kept = _X.clone()
            _got = _ours(_X)
            checks.check_close(_X, _kept, "X after a call (hidden): not changed", atol=0, rtol=0,
                               hint="X * scale makes a new tensor; X.mul_ or X *= changes the caller's")  # fmt: skip
            _want = _theirs(_width, 1e-6 if _eps is None else _eps, _w)(_X)
            checks.check_true(_got.dtype == _f64, f"a float64 X gives float64 (hidden), got {_got.dtype}")
            checks.check_close(_got, _want, f"RMSNorm({_width}, eps={_eps or 1e-6})(X) (hidden)", atol=1e-10,
                               rtol=1e-8, hint="the mean of X**2 over the last axis, plus eps, rooted")  # fmt: skip
    _zero = RMSNorm(4).double()(_T.zeros(2, 4, dtype=_f64))
    checks.check_close(_zero, _T.zeros(2, 4, dtype=_f64), "RMSNorm of a zero vector (hidden)",
                       hint="eps inside the root keeps 0 / 0 away")  # fmt: skip
    # gradients: X and the scale, against torch's
    _w = 1 + _T.randn(7, generator=_g, dtype=_f64) * 0.5
    _ours = RMSNorm(7).double()
    with _torch.no_grad():
        _ours.weight.copy_(_w)
    _theirs7 = _theirs(7, 1e-6, _w)
    _X1 = _T.randn(3, 7, generator=_g, dtype=_f64, requires_grad=True)
    _X2 = _X1.detach().clone().requires_grad_(True)
    _c = _T.randn(3, 7, generator=_g, dtype=_f64)
    (_ours(_X1) * _c).sum().backward()
    (_theirs7(_X2) * _c).sum().backward()
    checks.check_close(_X1.grad, _X2.grad, "the gradient to X (hidden)", atol=1e-10, rtol=1e-8,
                       hint="the root mean square depends on X: keep it in the graph (no .detach())")  # fmt: skip
    checks.check_close(_ours.weight.grad, _theirs7.weight.grad, "the gradient to the scale (hidden)", atol=1e-10,
                       rtol=1e-8)  # fmt: skip
    # half precision: large entries, whose squares overflow float16
    for _half in (_T.float16, _T.bfloat16):
        _Xh = (_T.randn(4, 300, generator=_g) * 300).to(_half)
        _got = RMSNorm(300)(_Xh)
        _want = _theirs(300, 1e-6, _T.ones(300), _T.float32)(_Xh.float()).to(_half)
        checks.check_true(_got.dtype == _half, f"a {_half} X gives {_half} (hidden), got {_got.dtype}")
        checks.check_close(_got.float(), _want.float(), f"RMSNorm of a {_half} X with entries near 300 (hidden)",
                           atol=2e-2, rtol=2e-2, hint="square, average in float32, cast back")  # fmt: skip
