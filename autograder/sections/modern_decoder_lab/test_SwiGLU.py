# Hidden: swiglu_hiddens for widths 1 to 200 and multiples 1, 8, 16 and 64 against the closed form in whole numbers,
# a Python int each time; SwiGLU's three layers by name and shape, without bias, at the width given and at the
# default; float64 outputs against the formula with drawn weights; no call to the reference.
# Contract: the page's sentences each check relies on.
#   "8/3 of num_hiddens, rounded up to a" -> widths 1 to 200 against ceil(8N / 3m) * m
#   "multiple of multiple_of; an int." -> multiples 1, 8, 16, 64; type int
#   "swiglu_hiddens(48) == 128 (8/3 of 48 is already a multiple of 16)." -> exact multiples are kept
#   "self.W_gate and self.W_up from num_hiddens to F features and" -> names and shapes by load_exact
#   "self.W_down from F back to num_hiddens, where F is ffn_num_hiddens," -> SwiGLU(12, 20), SwiGLU(7, 9)
#   "or swiglu_hiddens(num_hiddens) when it is None." -> SwiGLU(48) is 128 wide
#   "three bias-free linear layers," -> no bias among the parameters
#   "forward(X): X (..., num_hiddens) -> W_down(silu(W_gate(X)) * W_up(X))," -> float64 against the formula
# Classes: each kind of mistake, and the check that catches it.
#   value -> the formula with drawn weights (relu_gate)
#   dtype -> n/a: forward makes no tensor of its own; the layers follow .double() and keep X's dtype
#   device -> n/a: forward makes no tensor of its own; the layers follow .to(device)
#   pass-through -> ffn_num_hiddens given is the width (width_given_ignored)
#   state -> n/a: forward keeps nothing and changes no input
#   gradient -> n/a: three linear layers and an activation; nothing in the stub invites cutting the graph
#   type -> swiglu_hiddens returns a Python int (float_width)
#   edge -> widths whose 8/3 is already a multiple keep it (always_one_more_multiple)
#   symmetry -> the gate and the up projection by name: silu of the other one differs (gate_and_up_swapped)
#   train-eval -> n/a: no dropout, the same in both modes
#   efficiency -> n/a: the contract promises no time or memory
from _common import _F, _T, _draw, _load, _md  # the section's shared helpers (the assembler inlines _common.py)

_g = _T.Generator().manual_seed(2602)

with checks.forbid_reference(swiglu_hiddens, (_md, "swiglu_hiddens")):
    for _m in (1, 8, 16, 64):
        _wrong = []
        for _n in range(1, 201):
            _got = swiglu_hiddens(_n, _m)
            _want = -(-8 * _n // (3 * _m)) * _m
            if type(_got) is not int or _got != _want:
                _wrong.append((_n, _got, _want))
        checks.check_true(
            not _wrong,
            f"swiglu_hiddens(N, {_m}) is 8N/3 rounded up to a multiple of {_m}, an int (hidden)",
            hint=f"(N, got, expected): {_wrong[:3]}; an exact multiple stays as it is; return an int",
        )
    checks.check_true(swiglu_hiddens(48) == 128 and swiglu_hiddens(64) == 176, "the default multiple is 16 (hidden)")

with checks.forbid_reference(SwiGLU, (_md, "SwiGLU")):
    for _N, _Fw in ((12, 20), (7, 9)):
        _ffn = SwiGLU(_N, _Fw).double()
        _w = {
            "W_gate.weight": _draw(_g, _Fw, _N),
            "W_up.weight": _draw(_g, _Fw, _N),
            "W_down.weight": _draw(_g, _N, _Fw),
        }
        _load(_ffn, _w, f"SwiGLU({_N}, {_Fw}), three bias-free layers W_gate, W_up, W_down (hidden)")
        _X = _draw(_g, 2, 5, _N, scale=1.5)
        _want = (_F.silu(_X @ _w["W_gate.weight"].T) * (_X @ _w["W_up.weight"].T)) @ _w["W_down.weight"].T
        checks.check_close(_ffn(_X), _want, f"SwiGLU({_N}, {_Fw})(X) in float64 (hidden)", atol=1e-10, rtol=1e-8,
                           hint="W_down(silu(W_gate(X)) * W_up(X)): the SiLU gates the up projection")  # fmt: skip
    _default = SwiGLU(48)
    checks.check_true(
        _default.W_gate.out_features == _default.W_up.out_features == _default.W_down.in_features == 128,
        "SwiGLU(48) is swiglu_hiddens(48) = 128 wide (hidden)",
    )
    checks.check_true(
        all(not n.endswith("bias") for n, _ in _default.named_parameters()),
        "SwiGLU's layers have no bias (hidden)",
    )
