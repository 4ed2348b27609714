# Hidden: d = 8, max_len = 1000; the table against sin/cos computed with Python's math in float64 (positions from 0,
# interleaved, frequency 1 / 10000^(2j/d)) to 1e-6 at every position up to 999 (angles in float32 are off by 1e-5 and
# more there); P is a buffer and no parameter, and .to('meta') moves it (cheap: no operation runs on 'meta'); a float64
# input gives a float64 output; T < max_len uses the first T rows; dropout acts on X + P in training only.
# (Runs in the notebook, after its visible test: checks and the answers are defined there.)
import math as _math

_T = checks.trusted
_f64 = _T.float64
_Tensor = type(_T.zeros(0))

_enc = PositionalEncoding(8, 0.2, max_len=1000)
checks.check_true(
    "P" in dict(_enc.named_buffers()) and not any(True for _ in _enc.parameters()),
    "P is a buffer, and the module has no parameters (hidden, d = 8)",
    hint="self.register_buffer('P', P); not nn.Parameter, not a plain attribute",
)
checks.check_shape(_enc.P, (1, 1000, 8), "P (hidden, d = 8, max_len = 1000)")
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
_out = _enc(_X)
checks.check_true(
    isinstance(_out, _Tensor) and _out.dtype == _f64,
    f"a float64 input gives a float64 output (hidden; got {getattr(_out, 'dtype', type(_out).__name__)})",
    hint="add self.P[:, :T].to(X.dtype) to X",
)
checks.check_close(
    _out, _X + _expected.new_tensor(_enc.P[0, :11].detach().tolist()), "forward(X), T = 11 (hidden)", atol=1e-12
)
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
