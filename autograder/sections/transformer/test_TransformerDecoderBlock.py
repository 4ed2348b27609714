# Hidden: float64 against PyTorch's nn.TransformerDecoderLayer (post-norm, ReLU, dropout 0, batch_first, a causal
# tgt_mask and the source's key padding mask) with our weights copied into both: the whole target at once in
# evaluation mode, then chunks of 2, 3 and 1 tokens with the state; the block's own cache entry only; no call to the
# reference. (Runs in the notebook, after its visible test.) No 'meta' device test: its LayerNorms would import
# torch._dynamo, seconds per grading kernel; qkv's attention moves the causal lengths to the scores' device anyway.
_g = _T.Generator().manual_seed(1176)
_N, _H, _F, _Tt, _Ts = 16, 4, 24, 6, 5
_X = _draw(_g, 3, _Tt, _N, scale=1.0)  # (B, T, N)
_E = _draw(_g, 3, _Ts, _N, scale=1.0)  # (B, T_src, N)
_elens = _T.tensor([5, 2, 4])
with checks.forbid_reference(TransformerDecoderBlock, (_qt, "TransformerDecoderBlock")):
    _blk = TransformerDecoderBlock(_N, _F, _H, 0.0, 2).double().eval()
    _w = {
        **_mha_weights(_g, "attention1", _N, False),
        **_norm_weights(_g, "addnorm1", _N),
        **_mha_weights(_g, "attention2", _N, False),
        **_norm_weights(_g, "addnorm2", _N),
        **_ffn_weights(_g, "ffn", _N, _F),
        **_norm_weights(_g, "addnorm3", _N),
    }
    _load(_blk, _w, "TransformerDecoderBlock(16, 24, 4, 0.0, i=2)")
    _want = _torch_decoder_layer(_w, _N, _H, _F)(
        _X, _E, tgt_mask=_causal_mask(_Tt), memory_mask=_padding_mask(_elens, _H, _Tt, _Ts)
    )
    _got, _state = _blk(_X, [_E, _elens, [None, None, None]])
    checks.check_close(
        _got,
        _want,
        "output, whole target (hidden, float64, evaluation mode) vs nn.TransformerDecoderLayer",
        atol=1e-8,
        rtol=0,
        hint="causal self-attention in every mode; cross-attention on (Y, enc, enc, enc_valid_lens)",
    )
    checks.check_true(
        _state[2][0] is None and _state[2][1] is None,
        "the other blocks' cache entries are left alone",
        hint="write state[2][self.i] only",
    )
    checks.check_close(
        _state[2][2],
        _X,
        "state[2][2], the block's cached inputs",
        atol=0,
        rtol=0,
        hint="store the inputs so far in state[2][self.i]",
    )
    _state, _outs = [_E, _elens, [None, None, None]], []
    for _a, _b in ((0, 2), (2, 5), (5, 6)):
        _o, _state = _blk(_X[:, _a:_b], _state)
        _outs.append(_o)
        checks.check_shape(
            _state[2][2],
            (3, _b, _N),
            f"state[2][2] after tokens 0..{_b - 1} in chunks",
            hint="concatenate the cached inputs and X along the time axis, dim=1",
        )
    checks.check_close(
        _T.cat(_outs, dim=1),
        _want,
        "outputs of chunks of 2, 3 and 1 tokens (hidden)",
        atol=1e-8,
        rtol=0,
        hint="token t of a chunk sits at position T_past + t and sees T_past + t + 1 keys",
    )
