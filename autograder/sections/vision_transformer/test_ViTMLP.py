# Hidden: float64, weights of our own; exact (erf) GELU between the layers; in training mode dropout after each
# layer, with the same random masks as the reference draws.
# Contract: the page's sentences each check relies on.
#   "self.dense1 = nn.LazyLinear(mlp_num_hiddens), self.gelu = nn.GELU()," -> weights copied in; exact GELU
#   "self.dense2 = nn.LazyLinear(mlp_num_outputs)" -> the output size
#   "with dropout1 on the GELU's output and dropout2 on dense2's (eq-vit-mlp)." -> the masks, in training mode
#   "Your own code: no call to ref.ViTMLP." -> the reference is forbidden
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
