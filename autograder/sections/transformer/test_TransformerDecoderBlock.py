# Hidden: float64 against PyTorch's nn.TransformerDecoderLayer (post-norm, ReLU, dropout 0, batch_first, a causal
# tgt_mask and the source's key padding mask) with our weights copied into both: the whole target at once in
# evaluation mode, then chunks of 2, 3 and 1 tokens with the state; the block's own cache entry only; the state given
# left unchanged (a new state returned); no call to the reference. (Runs in the notebook, after its visible test.)
# No 'meta' device test: its LayerNorms would import torch._dynamo, seconds per grading kernel; qkv's attention moves
# the causal lengths to the scores' device anyway.
# Contract: the page's sentences each check relies on.
#   "self.attention1 (masked self-attention) and self.attention2 (encoder-decoder attention)" -> weights by name
#   "Self-attention is causal in every mode." -> whole target in eval mode vs nn.TransformerDecoderLayer
#   "its keys and values are `enc_outputs`, masked with `enc_valid_lens`" -> the source's padding mask
#   "whose entry self.i holds the inputs so far, (B, T_past + T, N)," -> state[2][2], its shape after each chunk
#   "the other entries as given." -> the other blocks' cache entries left None
#   "Does not modify the state given." -> the state given unchanged after each chunk
#   "X (B, T, N), the inputs at positions T_past .. T_past + T - 1" -> chunks of 2, 3 and 1 tokens
#   "The output is in X's dtype." -> float64
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
        _outer, _inner = list(_state), list(_state[2])
        _o, _new = _blk(_X[:, _a:_b], _state)
        checks.check_true(
            len(_state) == 3
            and all(_x is _y for _x, _y in zip(_state, _outer))
            and len(_state[2]) == 3
            and all(_x is _y for _x, _y in zip(_state[2], _inner)),
            f"the state given with tokens {_a}..{_b - 1} is left unchanged (hidden)",
            hint="return a new state: caches = list(state[2]); caches[self.i] = ...",
        )
        _state = _new
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
