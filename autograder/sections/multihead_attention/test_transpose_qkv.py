# Hidden: float64, other sizes (B = 1, one position, one head, h = 1 included), the layout against explicit
# slicing of nested lists, the dtype kept, 'meta' tensors, and no call to the reference.
# Contract: the page's sentences each check relies on.
#   "Returns (B * H, T, h) with H = num_heads and h = N / H" -> the shape, at other sizes
#   "row b * H + i holds head i of example b, the features i * h .. (i + 1) * h - 1" -> the layout, against slicing
#   "Same dtype and device as X." -> float64 kept; 'meta' tensors work
#   "no call to ref.transpose_qkv or ref.transpose_output." -> the reference is forbidden
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
