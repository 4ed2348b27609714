# Hidden: float64 against PyTorch's nn.TransformerDecoderLayer (post-norm, ReLU, dropout 0, batch_first, a causal
# tgt_mask and the source's key padding mask) with our weights copied into both: the whole target at once in
# evaluation mode, then chunks of 2, 3 and 1 tokens with the state; the block's own cache entry only; the state given
# left unchanged (a new state returned); in training mode, the dropout masks of a reference built here of qkv's own
# parts (the same seed); the gradients of X and enc_outputs against PyTorch's layer, on the whole target and through
# the state (chunk 1's inputs reach chunk 2's output only through the cache); no call to the reference. (Runs in the
# notebook, after its visible test.)
# No 'meta' device test: its LayerNorms would import torch._dynamo, seconds per grading kernel; qkv's attention moves
# the causal lengths to the scores' device anyway.
# Contract: the page's sentences each check relies on.
#   "self.attention1 (masked self-attention) and self.attention2 (encoder-decoder attention)" -> weights by name
#   "Self-attention is causal in every mode." -> whole target in eval mode vs nn.TransformerDecoderLayer
#   "its keys and values are `enc_outputs`, masked with `enc_valid_lens`" -> the source's padding mask
#   "whose entry self.i holds the inputs so far, (B, T_past + T, N)," -> state[2][2], its shape after each chunk
#   "the other entries as given" -> the other blocks' cache entries left None
#   "(new_state and its caches may be tuples instead of lists)." -> list or tuple, 3 items, caches one per block
#   "Does not modify the state given." -> the state given unchanged after each chunk
#   "X (B, T, N), the inputs at positions T_past .. T_past + T - 1" -> chunks of 2, 3 and 1 tokens
#   "The output is in X's dtype." -> float64
#   "each ref.AddNorm(num_hiddens, dropout);" -> training mode: the dropout masks of a reference built of qkv's parts
#   "gradients reach X through the queries and through the cached keys and values alike," -> X's, whole and chunked
#   "enc_outputs through self.attention2's keys and values." -> enc_outputs' gradient vs PyTorch's
# Classes: each kind of mistake, and the check that catches it.
#   value -> float64 against nn.TransformerDecoderLayer (mask_off_by_one, mask_sees_next, cross_attention_on_input)
#   dtype -> n/a: the block makes only integer lengths; its modules follow .double() and keep X's dtype
#   device -> n/a: the causal lengths go to the course's MultiHeadAttention, which moves them to the scores' device
#   pass-through -> enc_valid_lens reaches the cross-attention; entry self.i of i = 2 (ignores_enc_valid_lens)
#   state -> a new state, the given one unchanged; nothing kept on the block (modifies_given_state, cache_on_module)
#   gradient -> X's and enc_outputs' gradients vs PyTorch's, whole and through the state (detached_cache, detach_input)
#   type -> (output, new_state), the state a list or a tuple of three (returns_output_only)
#   edge -> the first call, with no cache (None), and chunks of one token (concat_with_none, mask_ignores_cache)
#   symmetry -> B = 3, T = 6, T_src = 5 all different, so a wrong axis shows (cache_wrong_axis)
#   train-eval -> causal in eval mode; dropout in every part in training (causal_only_in_training, addnorms_undropped)
#   efficiency -> n/a: D2L's state recomputes the keys of the cached inputs by design; no cost is promised
from _common import (  # the section's shared helpers (the assembler inlines _common.py)
    _T,
    _causal_mask,
    _draw,
    _ffn_weights,
    _grad,
    _load,
    _mha_weights,
    _norm_weights,
    _padding_mask,
    _qt,
    _torch_decoder_layer,
)

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
        checks.check_true(
            isinstance(_new, (list, tuple))
            and len(_new) == 3
            and isinstance(_new[2], (list, tuple))
            and len(_new[2]) == 3,
            f"the new state after tokens {_a}..{_b - 1} is [enc_outputs, enc_valid_lens, caches], a list or a tuple, "
            "with one cache entry per block (hidden)",
            hint="return [enc_outputs, enc_valid_lens, caches] with caches = list(state[2]), entry self.i replaced",
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

    # The gradients: the block is trained, and X reaches the output through the queries, the keys and the values of
    # the self-attention (and the residual), enc_outputs through the keys and values of the cross-attention. Against
    # autograd through PyTorch's layer with the same weights.
    _Gout = _draw(_g, 3, _Tt, _N, scale=1.0)
    _Xg, _Eg = _X.clone().requires_grad_(), _E.clone().requires_grad_()
    _og, _ = _blk(_Xg, [_Eg, _elens, [None, None, None]])
    checks.check_true(
        type(_og) is type(_X) and _og.requires_grad,
        "the output keeps X's gradient (hidden: X requires grad, the output should too)",
        hint="keep X in the graph: no .detach(), .data or torch.no_grad() on X or on the cached inputs",
    )
    (_og * _Gout).sum().backward()
    _layer = _torch_decoder_layer(_w, _N, _H, _F)
    _mmask = _padding_mask(_elens, _H, _Tt, _Ts)
    _Xr, _Er = _X.clone().requires_grad_(), _E.clone().requires_grad_()
    (_layer(_Xr, _Er, tgt_mask=_causal_mask(_Tt), memory_mask=_mmask) * _Gout).sum().backward()
    checks.check_close(
        _grad(_Xg),
        _Xr.grad,
        "the gradient of X, whole target (hidden, float64) vs nn.TransformerDecoderLayer",
        atol=1e-8,
        rtol=0,
        hint="X is the queries and, with the cache, the keys and values of attention1: do not detach the cached "
        "inputs you attend to",
    )
    checks.check_close(
        _grad(_Eg),
        _Er.grad,
        "the gradient of enc_outputs, whole target (hidden, float64) vs nn.TransformerDecoderLayer",
        atol=1e-8,
        rtol=0,
        hint="the encoder is trained through the cross-attention: attention2(Y, enc_outputs, enc_outputs, "
        "enc_valid_lens), with no .detach() or .data on enc_outputs",
    )
    # Through the state: chunk 1 (tokens 0..2) requires grad and is fed first; chunk 2 (tokens 3..5) is fed with the
    # state it returned, and only chunk 2's output is backpropagated. Chunk 1's inputs reach it only as the cached
    # keys and values, so their gradient is that of the whole target with no gradient on positions 0..2.
    _G2 = _Gout.clone()
    _G2[:, :3] = 0
    _X1, _X2 = _X[:, :3].clone().requires_grad_(), _X[:, 3:].clone().requires_grad_()
    _, _st = _blk(_X1, [_E, _elens, [None, None, None]])
    _o2, _ = _blk(_X2, _st)
    (_o2 * _G2[:, 3:]).sum().backward()
    _Xr = _X.clone().requires_grad_()
    (_layer(_Xr, _E, tgt_mask=_causal_mask(_Tt), memory_mask=_mmask) * _G2).sum().backward()
    checks.check_close(
        _grad(_X1),
        _Xr.grad[:, :3],
        "the gradient of chunk 1's inputs through the state, from chunk 2's output (hidden, float64) vs "
        "nn.TransformerDecoderLayer on the whole target",
        atol=1e-8,
        rtol=0,
        hint="the cached inputs are the keys and values of later chunks: torch.cat((past, X), dim=1) with no "
        ".detach() or .data on either",
    )
    checks.check_close(
        _grad(_X2),
        _Xr.grad[:, 3:],
        "the gradient of chunk 2's inputs, fed with the state (hidden, float64) vs nn.TransformerDecoderLayer",
        atol=1e-8,
        rtol=0,
        hint="X is the queries and, after the cached inputs, the keys and values: do not detach it in torch.cat",
    )

    # Training mode: dropout in every part (both attentions' weights, the three add & norms), as a reference built
    # here of qkv's own parts with the same weights draws it under the same seed.
    _p = 0.3
    _blk = TransformerDecoderBlock(_N, _F, _H, _p, 0).double().train()
    _load(_blk, _w, f"TransformerDecoderBlock(16, 24, 4, {_p}, i=0)")
    _parts = {}
    for _name, _part in (
        ("attention1", _qt.MultiHeadAttention(_N, _H, _p, query_size=_N, key_size=_N, value_size=_N)),
        ("addnorm1", _qt.AddNorm(_N, _p)),
        ("attention2", _qt.MultiHeadAttention(_N, _H, _p, query_size=_N, key_size=_N, value_size=_N)),
        ("addnorm2", _qt.AddNorm(_N, _p)),
        ("ffn", _qt.PositionWiseFFN(_F, _N, in_features=_N)),
        ("addnorm3", _qt.AddNorm(_N, _p)),
    ):
        _part = _part.double().train()
        _part.load_state_dict({k[len(_name) + 1 :]: v for k, v in _w.items() if k.startswith(_name + ".")})
        _parts[_name] = _part
    _causal = _T.arange(1, _Tt + 1)[None, :].expand(3, _Tt)  # (B, T): query t sees t + 1 keys
    _T.manual_seed(1180)
    _Yr = _parts["addnorm1"](_X, _parts["attention1"](_X, _X, _X, _causal))
    _Zr = _parts["addnorm2"](_Yr, _parts["attention2"](_Yr, _E, _E, _elens))
    _want = _parts["addnorm3"](_Zr, _parts["ffn"](_Zr))
    _T.manual_seed(1180)
    _got, _ = _blk(_X, [_E, _elens, [None, None, None]])
    checks.check_close(
        _got,
        _want,
        f"output in training mode (hidden, dropout {_p}, same seed) vs the same parts of qkv",
        atol=1e-8,
        rtol=0,
        hint="pass dropout to both attentions and to every AddNorm; attention1, addnorm1, attention2, addnorm2, "
        "ffn, addnorm3, in that order",
    )
