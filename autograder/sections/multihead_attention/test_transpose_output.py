# Hidden: float64, other sizes (B = 1, one position, one head, h = 1 included), the layout against explicit
# slicing of nested lists, the dtype kept, 'meta' tensors, the gradient passed back to X (the answer is trained
# through), and no call to the reference.
# Contract: the page's sentences each check relies on.
#   "Returns (B, T, H * h):" -> the shape, at other sizes
#   "position t of example b holds the outputs of heads 0, ..., H - 1 side by side." -> the layout, against slicing
#   "Same dtype and device as X" -> float64 kept; 'meta' tensors work
#   "gradients flow back to X (attention is trained through it)." -> the gradient of X
#   "no call to ref.transpose_qkv or ref.transpose_output." -> the reference is forbidden
# Classes: each kind of mistake, and the check that catches it.
#   value -> the layout against slicing (reshape_not_transpose)
#   dtype -> float64 kept (default_dtype_copy)
#   device -> 'meta' tensors (copy_on_cpu)
#   pass-through -> n/a: num_heads is the only argument besides X, and every case varies it (1, 2, 3, 6)
#   state -> n/a: a rearrangement of X that keeps nothing and writes nothing (a view or a copy are both right)
#   gradient -> the gradient of X against the inverse rearrangement (via_data)
#   type -> the result must be one torch.Tensor (list_of_heads)
#   edge -> n/a: the docstring names no special case; B = 1, T = 1, H = 1 and h = 1 are checked as ordinary sizes
#   symmetry -> sizes all different, so that rows b * H + i and i * B + b differ (heads_major)
#   train-eval -> n/a: no dropout, no mode
#   efficiency -> n/a: the contract promises no cost (a view and a copy are both right)
from _common import (  # the section's shared helpers (the assembler inlines _common.py)
    _T,
    _error_of,
    _f64,
    _qm,
)

_hint = (
    "reshape (B * H, T, h) to (B, H, T, h), swap the head and position axes, then reshape to (B, T, H * h): "
    "rows b * H .. b * H + H - 1 are the heads of example b"
)
_g = _T.Generator().manual_seed(1152)
with checks.forbid_reference(transpose_output, (_qm, "transpose_qkv"), (_qm, "transpose_output")):
    for _B, _Tn, _H, _p in [(3, 4, 2, 5), (2, 3, 6, 1), (1, 2, 3, 2), (4, 1, 1, 3)]:
        _X = _T.randn(_B * _H, _Tn, _p, generator=_g, dtype=_f64)
        _L = _X.tolist()
        _E = [[sum((_L[b * _H + i][t] for i in range(_H)), []) for t in range(_Tn)] for b in range(_B)]
        _out = transpose_output(_X, _H)
        _what = f"transpose_output(X, {_H}) (hidden, X of shape {(_B * _H, _Tn, _p)}, float64)"
        checks.check_shape(_out, (_B, _Tn, _H * _p), _what, hint="(B * H, T, h) -> (B, T, H * h)")
        checks.check_true(_out.dtype == _f64, f"{_what} keeps X's dtype", hint="do not convert X")
        checks.check_close(_out, _T.tensor(_E, dtype=_f64), _what, atol=0, rtol=0, hint=_hint)
_out, _err = _error_of(lambda: transpose_output(_T.zeros(8, 3, 2, device="meta"), 4))
checks.check_true(_err is None, f"transpose_output on the 'meta' device should work; it raised {_err}", hint=_hint)
checks.check_shape(_out, (2, 3, 8), "transpose_output(X, 4) on the 'meta' device")
checks.check_true(str(_out.device) == "meta", "transpose_output keeps X's device", hint="do not move X")
# The gradient: attention is trained through this rearrangement, so d(sum(out * G))/dX must be G put back in X's
# layout (features i * h .. of G[b] in row b * H + i).
_X = _T.randn(6, 3, 2, generator=_g, dtype=_f64).requires_grad_()  # (B * H, T, h) with B = 2, H = 3, h = 2
_G = _T.randn(2, 3, 6, generator=_g, dtype=_f64)  # (B, T, N)
_out = transpose_output(_X, 3)
checks.check_true(
    type(_out) is type(_X) and _out.requires_grad,
    "the output of transpose_output keeps X's gradient (hidden: X requires grad, the output should too)",
    hint="rearrange X itself with reshape and permute; .data, .detach(), torch.no_grad() or a copy through "
    "Python lists cut the output off from X",
)
(_out * _G).sum().backward()
_L = _G.tolist()
_back = [[_L[b][t][i * 2 : (i + 1) * 2] for t in range(3)] for b in range(2) for i in range(3)]  # (B * H, T, h)
checks.check_close(
    _X.grad, _T.tensor(_back, dtype=_f64), "the gradient of X (hidden, float64)", atol=0, rtol=0, hint=_hint
)
