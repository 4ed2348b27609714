# Hidden: float64, other sizes, chunks of 1, 2, 1 and 3 tokens against a reference built here: embeddings times
# sqrt(N) plus the sinusoids of the positions (closed form), two nn.TransformerDecoderLayer with the decoder's
# weights, the output layer; the state counts every token; in training mode, the dropout masks of the decoder's own
# forward under the same seed; the decoder's own forward is not called.
# (Runs in the notebook, after its visible test: checks and the answers are defined there.)
# Contract: the page's sentences each check relies on.
#   "Token t of X gets the positional encoding of position T_past + t." -> chunks of 1, 2, 1 and 3 tokens
#   "multiply by `math.sqrt(decoder.num_hiddens)`" -> the logits of token 0
#   "Returns (logits (B, T, V), the new state)." -> shapes; every block's cache holds every token
#   "Call the parts, not `decoder(X, state)` itself." -> the decoder's own forward is not called
#   "In the decoder's dtype." -> float64
#   "of the table (and applies its dropout)." -> training mode: the decoder's own dropout masks under one seed
# Classes: each kind of mistake, and the check that catches it.
#   value -> chunks of 1, 2, 1 and 3 tokens against PyTorch's layers (no_sqrt_scaling, scaled_after_positions)
#   dtype -> n/a: the answer makes no tensor of its own; sqrt(N) is a Python float, which keeps the dtype
#   device -> n/a: the answer makes no tensor of its own; the decoder's parts keep X's device
#   pass-through -> n/a: the decoder, X and the state are all read; a state not passed on is the state class
#   state -> every block's cache holds every token: the state passed through each block (state_not_passed_on)
#   gradient -> n/a: decoding with a cache is inference; the contract promises no gradient
#   type -> (logits, state) (returns_logits_only)
#   edge -> the first call, with nothing cached (keys_on_first_call)
#   symmetry -> B * H = 8 differs from every T_past, so a count read from the wrong axis shows (past_from_wrong_axis)
#   train-eval -> in training mode the encoding's dropout, as the decoder's own forward draws it (undropped_positions)
#   efficiency -> n/a: the contract promises no cost beyond the cache, which the blocks keep
from _common import (  # the section's shared helpers (the assembler inlines _common.py)
    _T,
    _causal_mask,
    _draw,
    _f64,
    _math,
    _padding_mask,
    _qt,
    _torch,
    _torch_decoder_layer,
)

_g = _T.Generator().manual_seed(1178)
_V, _N, _F, _H, _Tt, _Ts = 13, 16, 24, 4, 7, 5
_T.manual_seed(1179)
_dec = _qt.TransformerDecoder(_V, _N, _F, _H, 2, 0.0).double().eval()
_E, _elens = _draw(_g, 2, _Ts, _N, scale=1.0), _T.tensor([5, 3])
_Y = _T.randint(0, _V, (2, _Tt), generator=_g)  # (B, T)

_pos = _T.arange(_Tt, dtype=_f64)[:, None]  # (T, 1)
_freq = _T.exp(-_T.arange(0, _N, 2, dtype=_f64) / _N * _math.log(10000.0))  # (N / 2,): 10000^(-2j/N)
_P = _T.stack([_torch.sin(_pos * _freq), _torch.cos(_pos * _freq)], dim=-1).reshape(_Tt, _N)  # sin, cos interleaved
_Z = _dec.embedding.weight.detach()[_Y] * _math.sqrt(_N) + _P  # (B, T, N)
for _blk in _dec.blks:
    _layer = _torch_decoder_layer({k: v.detach() for k, v in _blk.state_dict().items()}, _N, _H, _F)
    _Z = _layer(_Z, _E, tgt_mask=_causal_mask(_Tt), memory_mask=_padding_mask(_elens, _H, _Tt, _Ts))
_want = _T.matmul(_Z, _dec.dense.weight.detach().T) + _dec.dense.bias.detach()  # (B, T, V)


def _no_forward(*args, **kwargs):
    raise checks.CheckFailed("decoder_forward calls decoder(X, state); call its parts instead")


_dec.forward = _no_forward
_state, _outs = _dec.init_state(_E, _elens), []
for _a, _b in ((0, 1), (1, 3), (3, 4), (4, 7)):
    _o, _state = decoder_forward(_dec, _Y[:, _a:_b], _state)
    checks.check_shape(_o, (2, _b - _a, _V), f"logits of tokens {_a}..{_b - 1} (hidden)", hint="(B, T, V)")
    _outs.append(_o)
checks.check_true(
    _state[2][0].num_cached == _Tt and _state[2][1].num_cached == _Tt,
    "after 7 tokens, every block's cache holds 7 tokens",
    hint="pass the state through every block",
)
checks.check_close(
    _outs[0],
    _want[:, :1],
    "logits of token 0 (hidden, float64)",
    atol=1e-5,
    rtol=0,
    hint="embedding times math.sqrt(decoder.num_hiddens), then the positional encoding",
)
checks.check_close(
    _T.cat(_outs, dim=1),
    _want,
    "logits of chunks of 1, 2, 1 and 3 tokens (hidden, float64)",
    atol=1e-5,
    rtol=0,
    hint="the first token of X sits at position T_past = state[2][0].num_cached",
)
# Training mode: the positional encoding's dropout (and the blocks') as the decoder's own forward draws it, under one
# seed, for the whole target at once. (Its own forward is called here, by the test, then forbidden again.)
_T.manual_seed(1181)
_dtr = _qt.TransformerDecoder(_V, _N, _F, _H, 2, 0.3).double().train()
_state = _dtr.init_state(_E, _elens)
_T.manual_seed(1182)
_want, _ = _dtr(_Y, _state)
_dtr.forward = _no_forward
_T.manual_seed(1182)
_got, _ = decoder_forward(_dtr, _Y, _dtr.init_state(_E, _elens))
checks.check_close(
    _got,
    _want,
    "logits in training mode (hidden, dropout 0.3, same seed) vs the decoder's own forward",
    atol=1e-8,
    rtol=0,
    hint="add the positions with decoder.pos_encoding(X, T_past), which applies the encoding's dropout; do not add "
    "rows of its table P by hand",
)
