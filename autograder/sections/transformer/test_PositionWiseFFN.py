# Hidden: float64, four axes (the FFN acts on the last one only), other sizes, weights of our own against the closed
# form W2 relu(W1 x + b1) + b2; negative pre-activations in both layers; no call to the reference.
# (Runs in the notebook, after its visible test: checks and the answers are defined there.)
# Contract: the page's sentences each check relies on.
#   "forward(X): X (..., T, d) -> dense2(relu(dense1(X))), (..., T, ffn_num_outputs)," -> four axes; closed form
#   "self.dense1 = nn.LazyLinear(ffn_num_hiddens), self.relu = nn.ReLU()," -> our weights loaded by name
#   "self.dense2 = nn.LazyLinear(ffn_num_outputs), all with biases." -> our weights and biases loaded by name
#   "in X's dtype and on X's device." -> float64
#   "Write `PositionWiseFFN` with two `nn.LazyLinear` layers" -> no call to the reference
# Classes: each kind of mistake, and the check that catches it.
#   value -> the closed form W2 relu(W1 x + b1) + b2 with our weights (no_relu, relu_after_output, gelu, no_bias)
#   dtype -> float64 to 1e-10 (casts_to_float32)
#   device -> n/a: the answer makes no tensor of its own; nn.Linear keeps X's device and its weights follow .to()
#   pass-through -> dense2 maps to ffn_num_outputs, not ffn_num_hiddens (outputs_of_hidden_size)
#   state -> n/a: forward keeps nothing between calls and changes no input
#   gradient -> n/a: two nn.Linear and a ReLU; nothing in the stub invites cutting the graph
#   type -> the layers registered as modules, so that .double() and the weights by name reach them (layers_in_a_list)
#   edge -> four axes, (2, 4, 5, 6): any number of leading axes (three_axes_only)
#   symmetry -> n/a: d = 6, F = 7 and N = 3 differ, so no mix-up of the two layers keeps the shapes
#   train-eval -> n/a: no dropout, no mode
#   efficiency -> n/a: the contract promises no cost
from _common import (  # the section's shared helpers (the assembler inlines _common.py)
    _T,
    _draw,
    _f64,
    _load,
    _qt,
)

_g = _T.Generator().manual_seed(1171)
with checks.forbid_reference(PositionWiseFFN, (_qt, "PositionWiseFFN")):
    _ffn = PositionWiseFFN(7, 3).double()
    _X = _draw(_g, 2, 4, 5, 6, scale=1.0)  # (B, B2, T, d): d = 6, F = 7, N = 3
    _out = _ffn(_X)
    checks.check_shape(
        _out,
        (2, 4, 5, 3),
        "ffn(X) (hidden, X of shape (2, 4, 5, 6))",
        hint="act on the last axis only; dense2 maps to ffn_num_outputs",
    )
    _w = {
        "dense1.weight": _draw(_g, 7, 6),  # (F, d)
        "dense1.bias": _draw(_g, 7),
        "dense2.weight": _draw(_g, 3, 7),  # (N, F)
        "dense2.bias": _draw(_g, 3),
    }
    _load(_ffn, _w, "PositionWiseFFN(7, 3)")
    _H1 = _T.matmul(_X, _w["dense1.weight"].T) + _w["dense1.bias"]  # (..., d) @ (d, F) -> (..., F)
    _expected = _T.matmul(_T.where(_H1 > 0, _H1, _T.zeros(1, dtype=_f64)), _w["dense2.weight"].T) + _w["dense2.bias"]
    checks.check_close(
        _ffn(_X),
        _expected,
        "ffn(X) (hidden, float64, our weights)",
        atol=1e-10,
        rtol=0,
        hint="dense1, ReLU, dense2, with biases, and nothing after dense2",
    )
