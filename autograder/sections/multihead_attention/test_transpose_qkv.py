# Hidden: float64, other sizes (B = 1, one position, one head, h = 1 included), the layout against explicit
# slicing of nested lists, the dtype kept, 'meta' tensors, the gradient passed back to X
# (the answer is trained through), and no call to the reference.
# Contract: the page's sentences each check relies on.
#   "Returns (B * H, T, h) with H = num_heads and h = N / H" -> the shape, at other sizes
#   "row b * H + i holds head i of example b, the features i * h .. (i + 1) * h - 1" -> the layout, against slicing
#   "Same dtype and device as X" -> float64 kept; 'meta' tensors work
#   "gradients flow back to X (attention is trained through it)." -> the gradient of X
#   "no call to ref.transpose_qkv or ref.transpose_output." -> the reference is forbidden
# Classes: each kind of mistake, and the check that catches it.
#   value -> the layout against slicing (reshape_not_transpose, strided_heads)
#   dtype -> float64 kept (default_dtype_copy)
#   device -> 'meta' tensors (copy_on_cpu)
#   pass-through -> n/a: num_heads is the only argument besides X, and every case varies it (1, 2, 3, 6)
#   state -> n/a: a rearrangement of X that keeps nothing and writes nothing (a view or a copy are both right)
#   gradient -> the gradient of X against the inverse rearrangement (via_data)
#   type -> the result must be one torch.Tensor (split_tuple)
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
    "reshape to (B, T, H, h), move the heads next to the batch, (B, H, T, h), then reshape to "
    "(B * H, T, h): row b * H + i is head i of example b"
)
_g = _T.Generator().manual_seed(1151)
with checks.forbid_reference(transpose_qkv, (_qm, "transpose_qkv"), (_qm, "transpose_output")):
    for _B, _Tn, _H, _p in [(3, 4, 2, 5), (2, 3, 6, 1), (1, 2, 3, 2), (4, 1, 1, 3)]:
        _X = _T.randn(_B, _Tn, _H * _p, generator=_g, dtype=_f64)
        _L = _X.tolist()
        _E = [[_L[b][t][i * _p : (i + 1) * _p] for t in range(_Tn)] for b in range(_B) for i in range(_H)]
        _out = transpose_qkv(_X, _H)
        _what = f"transpose_qkv(X, {_H}) (hidden, X of shape {(_B, _Tn, _H * _p)}, float64)"
        checks.check_shape(_out, (_B * _H, _Tn, _p), _what, hint="(B, T, N) -> (B * H, T, N / H)")
        checks.check_true(_out.dtype == _f64, f"{_what} keeps X's dtype", hint="do not convert X")
        checks.check_close(_out, _T.tensor(_E, dtype=_f64), _what, atol=0, rtol=0, hint=_hint)
_out, _err = _error_of(lambda: transpose_qkv(_T.zeros(2, 3, 8, device="meta"), 4))
checks.check_true(_err is None, f"transpose_qkv on the 'meta' device should work; it raised {_err}", hint=_hint)
checks.check_shape(_out, (8, 3, 2), "transpose_qkv(X, 4) on the 'meta' device")
checks.check_true(str(_out.device) == "meta", "transpose_qkv keeps X's device", hint="do not move X")
# The gradient: attention is trained through this rearrangement, so d(sum(out * G))/dX must be G put back in X's
# layout (row b * H + i of G in features i * h .. of X[b]).
_X = _T.randn(2, 3, 6, generator=_g, dtype=_f64).requires_grad_()
_G = _T.randn(6, 3, 2, generator=_g, dtype=_f64)  # (B * H, T, h) with B = 2, H = 3, h = 2
_out = transpose_qkv(_X, 3)
checks.check_true(
    type(_out) is type(_X) and _out.requires_grad,
    "the output of transpose_qkv keeps X's gradient (hidden: X requires grad, the output should too)",
    hint="rearrange X itself with reshape and permute; .data, .detach(), torch.no_grad() or a copy through "
    "Python lists cut the output off from X",
)
(_out * _G).sum().backward()
_L = _G.tolist()
_back = [[sum((_L[b * 3 + i][t] for i in range(3)), []) for t in range(3)] for b in range(2)]  # (B, T, N)
checks.check_close(
    _X.grad, _T.tensor(_back, dtype=_f64), "the gradient of X (hidden, float64)", atol=0, rtol=0, hint=_hint
)
