# Hidden: float64, weights of our own; exact (erf) GELU between the layers; in training mode dropout after each
# layer, with the same random masks as the reference draws.
# Contract: the page's sentences each check relies on.
#   "self.dense1 = nn.LazyLinear(mlp_num_hiddens), self.gelu = nn.GELU()," -> weights copied in; exact GELU
#   "self.dense2 = nn.LazyLinear(mlp_num_outputs)" -> the output size
#   "with dropout1 on the GELU's output and dropout2 on dense2's (eq-vit-mlp)." -> the masks, in training mode
#   "Your own code: no call to ref.ViTMLP." -> the reference is forbidden
#   "Nothing is detached." -> the gradients of X and of dense1's weight
#   "nn.Dropout(dropout), self.dense2 = nn.LazyLinear(mlp_num_outputs)," -> dropout=0.3 in training mode
# Classes: each kind of mistake, and the check that catches it.
#   value -> evaluation mode against dense1, the exact GELU, dense2 (ReLU, or a GELU at the end, differ)
#   dtype -> n/a: the lazy layers compute in their parameters' dtype (float64 here); forward makes no tensor
#   device -> n/a: forward makes no tensor; the layers and X carry the device
#   pass-through -> dropout=0.3 in training mode, not the default 0.5; the sizes 7 and 3 load by name and shape
#   state -> n/a: forward keeps nothing from one call to the next
#   gradient -> backward: the gradients of X and of dense1's weight against the closed form
#   type -> n/a: one tensor out (check_close refuses anything else)
#   edge -> n/a: the docstring names no special case
#   symmetry -> input, hidden and output sizes 5, 7 and 3 all differ: the two layers' sizes swapped cannot load
#   train-eval -> training mode: one dropout after each layer, with the reference's masks; none in evaluation mode
#   efficiency -> n/a: the contract promises no time or memory beyond the two layers'
from _common import (  # the section's shared helpers (the assembler inlines _common.py)
    _T,
    _draw,
    _f64,
    _load,
    _qv,
    _tF,
    _torch,
)

_g = _T.Generator().manual_seed(1182)
with checks.forbid_reference(ViTMLP, (_qv, "ViTMLP")):
    _mlp = ViTMLP(7, 3, dropout=0.5)
    _X = _draw(_g, 2, 4, 5, scale=2.0)  # (B, T, d)
    _mlp.eval()
    _mlp(_X.float())  # the lazy layers take their input size
    _mlp.double()
    _w = {
        "dense1.weight": _draw(_g, 7, 5),
        "dense1.bias": _draw(_g, 7),
        "dense2.weight": _draw(_g, 3, 7),
        "dense2.bias": _draw(_g, 3),
    }
    _load(_mlp, _w, "ViTMLP(7, 3)")
    _H = _X @ _w["dense1.weight"].T + _w["dense1.bias"]  # (B, T, d) @ (d, M) -> (B, T, M)
    _H = 0.5 * _H * (1 + _torch.erf(_H / 2**0.5))  # GELU
    checks.check_close(
        _mlp(_X),
        _H @ _w["dense2.weight"].T + _w["dense2.bias"],  # (B, T, M) @ (M, O)
        "ViTMLP in evaluation mode (hidden, float64)",
        atol=1e-10,
        rtol=0,
        hint="dense1, GELU (not ReLU), dense2; no activation after dense2",
    )
    _mlp.train()
    _T.manual_seed(1183)
    _got = _mlp(_X)
    _T.manual_seed(1183)
    _m1 = _tF.dropout(_T.ones(2, 4, 7, dtype=_f64), 0.5, True)  # the masks the answer's two dropout calls draw
    _m2 = _tF.dropout(_T.ones(2, 4, 3, dtype=_f64), 0.5, True)
    checks.check_close(
        _got,
        ((_H * _m1) @ _w["dense2.weight"].T + _w["dense2.bias"]) * _m2,
        "ViTMLP in training mode (hidden, dropout 0.5)",
        atol=1e-10,
        rtol=0,
        hint="dropout after the GELU and again after dense2, each once: dropout2(dense2(dropout1(gelu(dense1(X)))))",
    )
    # another dropout than the default, then the gradients (evaluation mode)
    _mlp = ViTMLP(7, 3, dropout=0.3)
    _mlp.eval()
    _mlp(_X.float())  # the lazy layers take their input size
    _mlp.double()
    _load(_mlp, _w, "ViTMLP(7, 3, dropout=0.3)")
    _mlp.train()
    _T.manual_seed(1188)
    _got = _mlp(_X)
    _T.manual_seed(1188)
    _m1 = _tF.dropout(_T.ones(2, 4, 7, dtype=_f64), 0.3, True)
    _m2 = _tF.dropout(_T.ones(2, 4, 3, dtype=_f64), 0.3, True)
    checks.check_close(
        _got,
        ((_H * _m1) @ _w["dense2.weight"].T + _w["dense2.bias"]) * _m2,
        "ViTMLP(7, 3, dropout=0.3) in training mode (hidden)",
        atol=1e-10,
        rtol=0,
        hint="self.dropout1 = nn.Dropout(dropout) and self.dropout2 = nn.Dropout(dropout): the dropout given",
    )
    _mlp.eval()
    _Xg = _X.clone().requires_grad_()
    _W1 = _w["dense1.weight"].clone().requires_grad_()
    _G = _draw(_g, 2, 4, 3, scale=1.0)  # the gradient of some loss with respect to the output
    _Hg = _Xg @ _W1.T + _w["dense1.bias"]  # (B, T, d) @ (d, M)
    _Hg = 0.5 * _Hg * (1 + _torch.erf(_Hg / 2**0.5))  # GELU
    (_Hg @ _w["dense2.weight"].T).backward(_G)  # (B, T, M) @ (M, O)
    _Xs = _X.clone().requires_grad_()
    _out = _mlp(_Xs)
    _out.backward(_G)
checks.check_true(
    _Xs.grad is not None and _mlp.dense1.weight.grad is not None,
    "a gradient reaches ViTMLP's input and dense1 (hidden; none came back)",
    hint="nothing detached: no .detach(), .data or torch.no_grad() in forward",
)
checks.check_close(
    _Xs.grad,
    _Xg.grad,
    "the gradient of ViTMLP's input (hidden, float64)",
    atol=1e-10,
    rtol=0,
    hint="nothing detached: no .detach(), .data or torch.no_grad() in forward",
)
checks.check_close(
    _mlp.dense1.weight.grad,
    _W1.grad,
    "the gradient of dense1's weight (hidden, float64)",
    atol=1e-10,
    rtol=0,
    hint="nothing detached: no .detach(), .data or torch.no_grad() in forward",
)
