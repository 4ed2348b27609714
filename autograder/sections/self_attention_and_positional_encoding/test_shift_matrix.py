# Hidden: d = 4, 10 and 16; delta = -7, 1, 5, 123 and 1000; the matrix against one built from Python's math in
# float64, and W p_i = p_(i + delta) for 60 positions i of a table computed with math.sin and math.cos; W is
# orthogonal, and W(a) W(b) = W(a + b). The function must be the student's own.
# (Runs in the notebook, after its visible test: checks and the answers are defined there.)
# Contract: the page's sentences each check relies on.
#   "The matrix W of shape (d, d), float64," -> shape and dtype
#   "with W @ p_i = p_(i + delta) for every row p_i of the sinusoidal table" -> 60 positions of a math table
#   "delta: the offset, an int (negative too)." -> delta = -7, 1, 5, 123, 1000
#   "num_hiddens: d, even." -> d = 4, 10, 16
#   "W, zero except for the 2 x 2 blocks of eq-shift-rotation on rows and columns 2j, 2j + 1" -> the blocks, orthogonal
#   "of the angles delta / 10000^(2j/d)." -> against math.cos, math.sin; W(a) W(b) = W(a + b)
# Classes: each kind of mistake, and the check that catches it.
#   value -> the blocks against math.cos and math.sin, W p_i = p_(i + delta) (exponent_j_over_d, pairs_split_in_halves)
#   dtype -> W in float64 (float32)
#   device -> n/a: no tensor goes in; W is made where new tensors are made, as the docstring allows
#   pass-through -> n/a: delta and num_hiddens decide every entry, and every case varies both
#   state -> n/a: Python numbers in, a new matrix out; nothing to keep or change
#   gradient -> n/a: a constant matrix of Python numbers, nothing trained through it
#   type -> W a torch.Tensor of shape (d, d) (returns_numpy)
#   edge -> negative offsets, delta = -7 (abs_delta)
#   symmetry -> offsets of both signs tell W from W^T, the rotation back (rotates_backwards)
#   train-eval -> n/a: no dropout, no mode
#   efficiency -> n/a: the contract promises no cost
import math as _math

_T = checks.trusted
_f64 = _T.float64


def _table(n, d):
    return _T.tensor(
        [
            [(_math.sin if c % 2 == 0 else _math.cos)(i / 10000 ** ((c - c % 2) / d)) for c in range(d)]
            for i in range(n)
        ],
        dtype=_f64,
    )


def _blocks(delta, d):
    W = [[0.0] * d for _ in range(d)]
    for j in range(d // 2):
        w = 1 / 10000 ** (2 * j / d)
        c, s = _math.cos(delta * w), _math.sin(delta * w)
        W[2 * j][2 * j], W[2 * j][2 * j + 1], W[2 * j + 1][2 * j], W[2 * j + 1][2 * j + 1] = c, s, -s, c
    return _T.tensor(W, dtype=_f64)


for _d in (4, 10, 16):
    _P = _table(1200, _d)  # (T, d)
    for _delta in (-7, 1, 5, 123, 1000):
        _W = shift_matrix(_delta, _d)
        checks.check_shape(_W, (_d, _d), f"shift_matrix({_delta}, {_d}) (hidden)")
        checks.check_true(
            _W.dtype == _f64, f"shift_matrix({_delta}, {_d}) is float64 (hidden)", hint="dtype=torch.float64"
        )
        checks.check_close(
            _W,
            _blocks(_delta, _d),
            f"shift_matrix({_delta}, {_d}) (hidden), against 2 x 2 blocks built with math.cos and math.sin",
            atol=1e-12,
            rtol=0,
            hint="block j on rows and columns 2j, 2j + 1: [[cos, sin], [-sin, cos]] of delta / 10000^(2j/d)",
        )
        _i = [i for i in range(0, 1200, 19) if 0 <= i + _delta < 1200][:60]
        _shifted = [i + _delta for i in _i]
        checks.check_close(
            _P[_i] @ _W.T,
            _P[_shifted],
            f"W p_i = p_(i + {_delta}) for {len(_i)} positions i from {_i[0]} to {_i[-1]}, d = {_d} (hidden)",
            atol=1e-9,
            rtol=0,
        )
_Wa, _Wb = shift_matrix(4, 10), shift_matrix(9, 10)
checks.check_close(
    _Wa @ _Wb, _blocks(13, 10), "shift_matrix(4, 10) @ shift_matrix(9, 10) = shift_matrix(13, 10) (hidden)", atol=1e-12
)
checks.check_close(_Wa.T @ _Wa, _T.eye(10, dtype=_f64), "W^T W = I: W is a rotation (hidden)", atol=1e-12)
