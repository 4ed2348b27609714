# Hidden: float64 with a large common offset (the statistics must be subtracted, not ignored), a learned scale and
# shift of our own, norm_shape over the last two axes, dropout on Y only in training mode (the same random masks as
# the reference's, with p = 0.5 and 0.2), a clear ValueError for mismatched shapes; X and Y left as they were; no call
# to the reference. (No 'meta' device test: a
# LayerNorm on 'meta' imports torch._dynamo, seconds per grading kernel, and the answer makes no tensor of its own.)
# (Runs in the notebook, after its visible test: checks and the answers are defined there.)
# Contract: the page's sentences each check relies on.
#   "self.dropout = nn.Dropout(dropout), self.ln = nn.LayerNorm(norm_shape)." -> our scale, shift; norm_shape of 2 axes
#   "shape -> self.ln(self.dropout(Y) + X), (..., N), in X's dtype." -> float64 near 1000; dropout on Y only, once
#   "Raise a ValueError if the shapes differ." -> the ValueError
#   "Write `AddNorm` with PyTorch's `nn.LayerNorm` and `nn.Dropout`." -> no call to the reference
#   "Neither X nor Y is changed." -> X and Y unchanged after a call
# Classes: each kind of mistake, and the check that catches it.
#   value -> LN(X + Y) with our scale and shift, values near 1000 (no_residual, residual_after_norm, unbiased_variance)
#   dtype -> float64 to 1e-8 (returns_float32)
#   device -> n/a: the answer makes no tensor of its own (a LayerNorm on 'meta' costs seconds, see above)
#   pass-through -> norm_shape of two axes; dropout of p = 0.2 in training mode (dropout_default_p)
#   state -> X and Y unchanged after a call (adds_in_place)
#   gradient -> n/a: nn.LayerNorm and nn.Dropout of PyTorch; nothing in the stub invites cutting the graph
#   type -> a ValueError, not another exception, for shapes that differ (assert_not_value_error)
#   edge -> Y of another shape raises (no_shape_check)
#   symmetry -> (3, 4, 6) inputs: the features are not the positions (norm_over_positions)
#   train-eval -> dropout on Y only, in training mode only (dropout_on_sum, functional_dropout)
#   efficiency -> n/a: the contract promises no cost
from _common import (  # the section's shared helpers (the assembler inlines _common.py)
    _T,
    _draw,
    _f64,
    _load,
    _norm_weights,
    _qt,
    _tnn,
)

_g = _T.Generator().manual_seed(1172)


def _ln_ref(Z, gamma, beta, axes):
    mean = Z.mean(dim=axes, keepdim=True)
    var = ((Z - mean) ** 2).mean(dim=axes, keepdim=True)
    return (Z - mean) / _T.sqrt(var + 1e-5) * gamma + beta


with checks.forbid_reference(AddNorm, (_qt, "AddNorm")):
    _an = AddNorm(6, 0.5).double().eval()
    _X, _Y = 1e3 + _draw(_g, 3, 4, 6, scale=2.0), _draw(_g, 3, 4, 6, scale=2.0)
    _w = _norm_weights(_g, "", 6)
    _w = {k[1:]: v for k, v in _w.items()}
    _load(_an, _w, "AddNorm(6, 0.5)")
    _kept = (_X.clone(), _Y.clone())
    _an(_X, _Y)
    for _name, _given, _copy in (("X", _X, _kept[0]), ("Y", _Y, _kept[1])):
        checks.check_close(
            _given,
            _copy,
            f"{_name} after add_norm(X, Y) (hidden: the inputs must be left as they were)",
            atol=0,
            rtol=0,
            hint="compute a new sum, self.dropout(Y) + X; X += ... or Y += ... changes the caller's tensor",
        )
    checks.check_close(
        _an(_X, _Y),
        _ln_ref(_X + _Y, _w["ln.weight"], _w["ln.bias"], (-1,)),
        "AddNorm (hidden, float64, values near 1000, our scale and shift)",
        atol=1e-8,
        rtol=0,
        hint="LayerNorm(dropout(Y) + X) over the last axis, with self.ln's scale and shift",
    )
    _an2 = AddNorm((4, 6), 0.0).double().eval()
    checks.check_close(
        _an2(_X, _Y),
        _ln_ref(_X + _Y, 1.0, 0.0, (-2, -1)),
        "AddNorm((4, 6), 0) (hidden: norm_shape of two axes)",
        atol=1e-8,
        rtol=0,
        hint="pass norm_shape to nn.LayerNorm as it is",
    )
    _an.train()
    _ones = _T.ones(3, 4, 6, dtype=_f64)
    _T.manual_seed(1173)
    _got = _an(_X, _Y)
    _T.manual_seed(1173)
    _kept = _tnn.functional.dropout(_ones, 0.5, True)  # the mask the answer's one dropout call draws
    checks.check_close(
        _got,
        _ln_ref(_X + _Y * _kept, _w["ln.weight"], _w["ln.bias"], (-1,)),
        "AddNorm in training mode (hidden, dropout 0.5)",
        atol=1e-8,
        rtol=0,
        hint="apply self.dropout once, to Y only: LN(dropout(Y) + X)",
    )
    _an3 = AddNorm(6, 0.2).double().train()
    _load(_an3, _w, "AddNorm(6, 0.2)")
    _T.manual_seed(1174)
    _got = _an3(_X, _Y)
    _T.manual_seed(1174)
    _kept = _tnn.functional.dropout(_ones, 0.2, True)  # dropout's mask with p = 0.2: entries 0 or 1 / 0.8
    checks.check_close(
        _got,
        _ln_ref(_X + _Y * _kept, _w["ln.weight"], _w["ln.bias"], (-1,)),
        "AddNorm in training mode (hidden, dropout 0.2)",
        atol=1e-8,
        rtol=0,
        hint="self.dropout = nn.Dropout(dropout): nn.Dropout() alone drops with p = 0.5, whatever dropout is",
    )
    _an.eval()
    _raised = "no error"
    try:
        _an(_X, _Y[:, :1])
    except ValueError:
        _raised = "ValueError"
    except Exception as _err:  # noqa: BLE001
        _raised = type(_err).__name__
    checks.check_true(
        _raised == "ValueError",
        "AddNorm(X, Y) with Y of another shape raises a ValueError",
        hint="compare X.shape and Y.shape first and raise ValueError with both shapes",
    )
