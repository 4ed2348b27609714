# Hidden: d = 8, max_len = 1000; the table against sin/cos computed with Python's math in float64 (positions from 0,
# interleaved, frequency 1 / 10000^(2j/d)) to 1e-6 at every position up to 999 (angles in float32 are off by 1e-5 and
# more there), and for d = 12 at positions up to 19999 (a frequency rounded to float32 is off by 3e-4 there); P is a
# buffer and no parameter, left out of state_dict() (non-persistent: a checkpoint holds nothing that follows from the
# sizes), in the default dtype, and .to('meta') moves it (cheap: no operation runs on 'meta');
# a float64 input gives a float64 output, and bfloat16 and float16 inputs keep their dtype (and their sums X + P to
# half precision); T < max_len uses the first T rows; dropout acts on X + P in training only, with the p
# given; X is left unchanged and gets the output's gradient; max_len rows for max_len = 30.
# (Runs in the notebook, after its visible test: checks and the answers are defined there.)
# Contract: the page's sentences each check relies on.
#   "Compute P[i, 2j] = sin(i / 10000^(2j/d)) and P[i, 2j+1] = cos(i / 10000^(2j/d))" -> rows up to 999, to 1e-6
#   "for the positions i = 0 .. max_len - 1, in float64," -> positions from 0; angles in float64, d = 12 up to 19999
#   "keep P as a buffer of shape (1, max_len, d) in the default dtype" -> P's shape and dtype
#   "self.register_buffer("P", ..., persistent=False), so that it moves" -> P not in state_dict()
#   "with .to(device), is not a parameter" -> buffer, no parameters, .to('meta')
#   "and is not saved in state_dict()" -> P not in state_dict()
#   "Returns self.dropout(X + P[:, :T, :]), of shape (B, T, d) and X's dtype," -> T = 11 of 1000 rows
#   "whatever that is (float16, bfloat16 and float64 too: cast the rows of P to X.dtype)." -> the dtypes kept
#   "Keep nn.Dropout(dropout) as self.dropout." -> dropout on X + P, in training mode only, with p = 0.5 and 0.2
#   "Gradients flow back to X (the embeddings before it are trained)," -> the gradient of X
#   "and X itself is left as it was." -> X unchanged after forward
# Classes: each kind of mistake, and the check that catches it.
#   value -> rows up to 999 against Python's math (exponent_j_over_d, sin_cos_swapped)
#   dtype -> P's dtype; 64- and 16-bit X kept; d = 12 to 19999 (cast_dropped, float32_angles, float32_dtype@...)
#   device -> .to('meta') moves P (plain_attribute)
#   pass-through -> P of max_len rows for max_len = 30; dropout of p = 0.2 (ignores_max_len, dropout_default_p)
#   state -> X unchanged after forward (adds_in_place)
#   gradient -> the gradient of X is the gradient of the output (no_grad_forward)
#   type -> P a buffer, no parameter, not in state_dict(); the output a tensor (parameter_not_buffer, persistent_buffer)
#   edge -> position 0 in row 0 and position 999 in the last row (positions_from_1)
#   symmetry -> d = 8 (four pairs) and B = 3 != T = 11 (not_interleaved, rows_by_batch)
#   train-eval -> dropout in training mode only, on the sum (no_dropout, dropout_on_encoding, functional_dropout)
#   efficiency -> n/a: the contract promises no cost beyond a table computed once, which a buffer shows
import math as _math

import qkv.positional as _qp

_T = checks.trusted
_torch = _qp.torch  # torch as qkv bound it at import, before any student code
_f64 = _T.float64
_Tensor = type(_T.zeros(0))

_enc = PositionalEncoding(8, 0.2, max_len=1000)
checks.check_true(
    "P" in dict(_enc.named_buffers()) and not any(True for _ in _enc.parameters()),
    "P is a buffer, and the module has no parameters (hidden, d = 8)",
    hint="self.register_buffer('P', P); not nn.Parameter, not a plain attribute",
)
checks.check_true(
    "P" not in _enc.state_dict(),
    "P is left out of state_dict(), a non-persistent buffer (hidden, d = 8)",
    hint="self.register_buffer('P', P, persistent=False): the table follows from the sizes; checkpoints skip it",
)
checks.check_shape(_enc.P, (1, 1000, 8), "P (hidden, d = 8, max_len = 1000)")
checks.check_true(
    _enc.P.dtype == _torch.get_default_dtype(),
    f"P is stored in the default dtype, {_torch.get_default_dtype()} (hidden; got {_enc.P.dtype})",
    hint="compute the angles in float64, then store the table with .to(torch.get_default_dtype())",
)
_rows = [0, 1, 2, 7, 100, 499, 998, 999]
_expected = _T.tensor(
    [
        [
            (_math.sin if c % 2 == 0 else _math.cos)(i / 10000 ** ((c - c % 2) / 8))  # column c = 2j or 2j + 1
            for c in range(8)
        ]
        for i in _rows
    ],
    dtype=_f64,
)
_got = _enc.P[0, _rows].detach().to(_f64)  # (len(rows), d)
checks.check_close(
    _got,
    _expected,
    f"rows {_rows} of P (hidden, d = 8), against sin and cos in float64",
    atol=1e-6,
    rtol=0,
    hint="P[i, 2j] = sin(i / 10000^(2j/d)), P[i, 2j+1] = cos(...), positions from 0; compute the angles in float64",
)
_enc.eval()
_X = _T.randn(3, 11, 8, dtype=_f64)  # (B, T, d)
_kept = _X.clone()
_out = _enc(_X)
checks.check_close(
    _X,
    _kept,
    "X after forward (hidden: the input must be left as it was)",
    atol=0,
    rtol=0,
    hint="compute a new tensor, X + self.P[...]; X += ... changes the caller's X",
)
checks.check_true(
    isinstance(_out, _Tensor) and _out.dtype == _f64,
    f"a float64 input gives a float64 output (hidden; got {getattr(_out, 'dtype', type(_out).__name__)})",
    hint="add self.P[:, :T].to(X.dtype) to X",
)
checks.check_close(
    _out, _X + _expected.new_tensor(_enc.P[0, :11].detach().tolist()), "forward(X), T = 11 (hidden)", atol=1e-12
)
# half precision: the rows of P are cast to X's dtype before the sum (type promotion would give float32)
for _half in (_torch.bfloat16, _torch.float16):
    _Xh = _T.randn(2, 7, 8, dtype=_f64).to(_half)  # (B, T, d)
    _outh = _enc(_Xh)
    checks.check_true(
        isinstance(_outh, _Tensor) and _outh.dtype == _half,
        f"a {_half} input gives a {_half} output (hidden; got {getattr(_outh, 'dtype', type(_outh).__name__)})",
        hint="add self.P[:, :T].to(X.dtype): a float32 table added to a half-precision X gives float32",
    )
    checks.check_close(
        _outh.double(),
        (_Xh + _enc.P[0, :7].detach().to(_half)).double(),
        f"forward(X) for a {_half} X (hidden)",
        atol=0.01,
        rtol=0.01,
    )
# the gradient: the embeddings before the encoding are trained through it, so d(sum(out * G))/dX = G
_Xg = _T.randn(2, 5, 8, dtype=_f64).requires_grad_()
_Gout = _T.randn(2, 5, 8, dtype=_f64)
_outg = _enc(_Xg)
checks.check_true(
    isinstance(_outg, _Tensor) and _outg.requires_grad,
    "the output keeps X's gradient (hidden: X requires grad, the output should too)",
    hint="add the rows of P to X outside torch.no_grad(): the table needs no gradient, but X does",
)
(_outg * _Gout).sum().backward()
checks.check_close(_Xg.grad, _Gout, "the gradient of X (hidden, evaluation mode)", atol=0, rtol=0)
# a wider table, far out: with d = 12 the exponents 2j / d (1/6, 1/3, ...) and their powers of 10000 are not exact in
# float32 (for d = 8 they are), and by position 19999 a frequency rounded to float32 turns the angle by 3e-4
_wide = PositionalEncoding(12, 0.0, max_len=20000)
_rows_w = [1, 4999, 12345, 19999]
_expected_w = _T.tensor(
    [[(_math.sin if c % 2 == 0 else _math.cos)(i / 10000 ** ((c - c % 2) / 12)) for c in range(12)] for i in _rows_w],
    dtype=_f64,
)
checks.check_close(
    _wide.P[0, _rows_w].detach().to(_f64),
    _expected_w,
    f"rows {_rows_w} of P (hidden, d = 12, max_len = 20000), against sin and cos in float64",
    atol=1e-6,
    rtol=0,
    hint="compute the positions, the exponents 2j / d and the frequencies in float64: a frequency rounded to float32 "
    "is off by 1e-7 of itself, and position 19999 multiplies that",
)
# max_len: the table has exactly max_len rows
_short = PositionalEncoding(8, 0.0, max_len=30)
checks.check_shape(_short.P, (1, 30, 8), "P (hidden, d = 8, max_len = 30)", hint="(1, max_len, num_hiddens)")
# the device: a buffer moves with .to(); a plain attribute stays where it was made
_meta = PositionalEncoding(8, 0.0, max_len=50).to("meta")
_where = str(getattr(_meta.P, "device", "?")) if isinstance(getattr(_meta, "P", None), _Tensor) else "no tensor P"
checks.check_true(
    _where == "meta",
    f"after .to('meta') (a stand-in for a GPU), P is on 'meta' (got {_where})",
    hint="keep P with self.register_buffer('P', P) so that .to(device) moves it",
)
# dropout: in training, every entry is 0 or (X + P) / (1 - p); in evaluation mode, nothing is dropped
_enc = PositionalEncoding(8, 0.5, max_len=30)
_enc.train()
_T.manual_seed(1166)
_X = _T.randn(4, 20, 8, dtype=_f64)
_full = _X + _enc.P[:, :20].detach().to(_f64)  # (B, T, d)
_out = _enc(_X)
_kept = _out != 0
checks.check_close(
    _out[_kept],
    2 * _full.expand(4, 20, 8)[_kept],
    "forward in training mode (hidden, p = 0.5): the entries dropout kept are 2 (X + P)",
    atol=1e-12,
    rtol=0,
    hint="apply self.dropout to the sum X + P",
)
checks.check_true(
    0.3 < float((~_kept).double().mean()) < 0.7,
    "in training mode with p = 0.5, about half of the 640 entries are zeroed (hidden)",
    hint="pass the sum through self.dropout, an nn.Dropout(dropout)",
)
# the p given: with dropout = 0.2, about a fifth of the entries are zeroed and the others scaled by 1 / 0.8
_enc = PositionalEncoding(8, 0.2, max_len=30)
_enc.train()
_full = _X + _enc.P[:, :20].detach().to(_f64)  # (B, T, d)
_T.manual_seed(1168)
_out = _enc(_X)
_kept = _out != 0
checks.check_close(
    _out[_kept],
    _full.expand(4, 20, 8)[_kept] / 0.8,
    "forward in training mode (hidden, p = 0.2): the entries dropout kept are (X + P) / 0.8",
    atol=1e-12,
    rtol=0,
    hint="self.dropout = nn.Dropout(dropout): nn.Dropout() alone drops with p = 0.5, whatever dropout is",
)
checks.check_true(
    0.1 < float((~_kept).double().mean()) < 0.3,
    "in training mode with p = 0.2, about a fifth of the 640 entries are zeroed (hidden)",
    hint="pass dropout on to nn.Dropout",
)
