# Hidden: float64, other sizes (B = 1, one position, one head, h = 1 included), the layout against explicit
# slicing of nested lists, the dtype kept, 'meta' tensors, and no call to the reference.
# Contract: the page's sentences each check relies on.
#   "Returns (B, T, H * h):" -> the shape, at other sizes
#   "position t of example b holds the outputs of heads 0, ..., H - 1 side by side." -> the layout, against slicing
#   "Same dtype and device as X." -> float64 kept; 'meta' tensors work
#   "no call to ref.transpose_qkv or ref.transpose_output." -> the reference is forbidden
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
