# Hidden: float64, other sizes, chunks of 3, 1, 2 and 1 tokens against a closed-form causal multi-head attention
# computed here with our weights; the cached keys and values in the heads' layout (B * H, T, h); the cache given is
# not modified, and one cache continued twice gives one result; the gradients of both chunks' tokens, through the
# cache too, against autograd through the closed form; no call to the reference. (Runs in the notebook, after its
# visible test.) No 'meta' device test: a masked_fill on 'meta' imports torch._dynamo, seconds per
# grading kernel; qkv's attention moves lengths anyway.
# Contract: the page's sentences each check relies on.
#   "token t of X attends to keys 0 .. T_past + t." -> chunks of 3, 1, 2 and 1 tokens vs the closed form
#   "(keys, values)) with keys and values (B * H, T_past + T, h):" -> shape of the cached keys
#   "the cache followed by X's own" -> cached keys and values, in order
#   "(the new cache may be a tuple or a list)." -> each new cache is a pair, a tuple or a list (variant list_cache)
#   "(a tuple, or a list [keys, values])." -> the kept cache given once as a tuple and once as a list
#   "Does not modify the cache given" -> the cached keys passed in, after the call
#   "Written with mha's own layers (not with ref.attend_projected), in X's dtype." -> no reference; float64
#   "(the same cache given twice gives the same result)." -> two continuations of one kept cache
#   "gradients reach X through the queries, keys and values," -> chunk 2's gradient vs the closed form's
#   "and reach the cache given through its keys and values." -> chunk 1's gradient through the cache, from chunk 2
# Classes: each kind of mistake, and the check that catches it.
#   value -> chunks against a closed-form causal attention (cache_head_axis, position_taken_as_zero, mask_off_by_one)
#   dtype -> n/a: the answer makes only integer lengths; every other tensor comes from mha's layers, in X's dtype
#   device -> n/a: the lengths go to mha.attention, whose masked softmax moves them to the scores' device
#   pass-through -> n/a: mha, X and cache are all the answer has; a cache ignored is the state class (cache_on_module)
#   state -> the cache given unchanged and kept by nobody: one cache continued twice gives one result (cache_on_module)
#   gradient -> both chunks' gradients vs the closed form's, chunk 1's through the cache (detach_input@...)
#   type -> (output, (keys, values)), the cache a tuple or a list of two; integer lengths (returns_flat, float_lengths)
#   edge -> the first chunk (cache None) and chunks of several tokens, whose own future is masked (no_causal_mask)
#   symmetry -> B * H = 12, T = 7 and h = 4 differ, so a wrong axis of the cache shows (cache_wrong_axis)
#   train-eval -> n/a: mha.attention applies its own dropout in its own mode; the answer adds none
#   efficiency -> n/a: the answer has only X to project (the cache holds projected keys and values)
from _common import (  # the section's shared helpers (the assembler inlines _common.py)
    _T,
    _causal_mask,
    _draw,
    _f64,
    _grad,
    _math,
    _mha_weights,
    _qt,
)

_g = _T.Generator().manual_seed(1177)
_N, _H, _B, _Tt = 16, 4, 3, 7
_h = _N // _H
_w = _mha_weights(_g, "m", _N, False)
_X = _draw(_g, _B, _Tt, _N, scale=1.0)  # (B, T, N)


def _heads(Z):
    """(B, T, N) -> (B * H, T, h), head j of example b at row b * H + j."""
    return Z.reshape(_B, Z.shape[1], _H, _h).permute(0, 2, 1, 3).reshape(_B * _H, Z.shape[1], _h)


def _closed_form(X):
    """Causal multi-head self-attention of the whole sequence X (B, T, N) with our weights: (B, T, N)."""
    Q, K, V = (_heads(_T.matmul(X, _w[f"m.W_{n}.weight"].T)) for n in "qkv")  # (B * H, T, h)
    scores = _T.matmul(Q, K.transpose(1, 2)) / _math.sqrt(_h)  # (B * H, T, T)
    future = _causal_mask(_Tt)  # (T, T): True above the diagonal
    A = _T.softmax(_T.where(future, _T.tensor(float("-inf"), dtype=_f64), scores), dim=-1)  # (B * H, T, T)
    O = _T.matmul(A, V).reshape(_B, _H, _Tt, _h).permute(0, 2, 1, 3).reshape(_B, _Tt, _N)  # (B, T, N)
    return _T.matmul(O, _w["m.W_o.weight"].T), K, V  # (B, T, N), and the keys and values (B * H, T, h)


_want, _K, _V = _closed_form(_X)

_mha = _qt.MultiHeadAttention(_N, _H, 0.0, query_size=_N, key_size=_N, value_size=_N).double().eval()
_mha.load_state_dict({k[2:]: v for k, v in _w.items()})
with checks.forbid_reference(cached_self_attention, (_qt, "attend_projected"), (_qt, "TransformerDecoderBlock")):
    _cache, _outs = None, []
    for _a, _b in ((0, 3), (3, 4), (4, 6), (6, 7)):
        _kept = None if _cache is None else (_cache[0].clone(), _cache[1].clone())
        _o, _new = cached_self_attention(_mha, _X[:, _a:_b], _cache)
        if _kept is not None:
            checks.check_close(
                _cache[0],
                _kept[0],
                "the cached keys passed in, after the call",
                atol=0,
                rtol=0,
                hint="build new tensors (torch.cat); do not write into the cache you are given",
            )
        checks.check_shape(_o, (_B, _b - _a, _N), f"output of tokens {_a}..{_b - 1} (hidden)", hint="(B, T, N)")
        checks.check_true(
            isinstance(_new, (tuple, list)) and len(_new) == 2,
            f"the cache returned with tokens {_a}..{_b - 1} is a pair (keys, values), a tuple or a list (hidden; got "
            f"{type(_new).__name__})",
            hint="return (output, (keys, values))",
        )
        checks.check_shape(
            _new[0],
            (_B * _H, _b, _h),
            f"cached keys after tokens 0..{_b - 1} (hidden, B = 3, H = 4)",
            hint="(B * H, T_past + T, h): concatenate along the time axis, dim=1",
        )
        _outs.append(_o)
        _cache = _new
    checks.check_close(
        _cache[0],
        _K,
        "cached keys (hidden, float64)",
        atol=1e-10,
        rtol=0,
        hint="the cache holds W_k X split into heads with transpose_qkv, oldest first",
    )
    checks.check_close(
        _cache[1],
        _V,
        "cached values (hidden, float64)",
        atol=1e-10,
        rtol=0,
        hint="the cache holds W_v X split into heads with transpose_qkv, oldest first",
    )
    checks.check_close(
        _T.cat(_outs, dim=1),
        _want,
        "outputs of chunks of 3, 1, 2 and 1 tokens (hidden, float64)",
        atol=1e-10,
        rtol=0,
        hint="token t of a chunk sees keys 0 .. T_past + t; then W_o",
    )
    # A kept cache, continued twice (two continuations of one prefix, as a beam search does): the second call must
    # see the cache given, not what the first one appended. The second time it is given as a list [keys, values],
    # which the contract accepts as well as a tuple.
    _o1, _kept = cached_self_attention(_mha, _X[:, :3], None)
    _o2, _c2 = cached_self_attention(_mha, _X[:, 3:5], tuple(_kept))
    _o3, _c3 = cached_self_attention(_mha, _X[:, 3:5], list(_kept))
    checks.check_shape(_c3[0], (_B * _H, 5, _h), "cached keys of the second continuation of a kept cache (hidden)")
    checks.check_close(
        _o3,
        _want[:, 3:5],
        "the second continuation of a kept cache (hidden: the same cache given twice gives the same result)",
        atol=1e-10,
        rtol=0,
        hint="read the past from the cache given, and keep nothing of it elsewhere (not on mha, not in a global)",
    )
    # The gradients, through the cache: chunk 1 (tokens 0..3) requires grad and is attended with no cache; chunk 2
    # (tokens 4..6) with the cache it returned, and only chunk 2's output is backpropagated. Chunk 1's tokens reach it
    # only through the cached keys and values, so their gradient is that of the whole sequence with no gradient on
    # positions 0..3; chunk 2's tokens reach it through the queries, keys and values.
    _G = _draw(_g, _B, _Tt, _N, scale=1.0)
    _G[:, :4] = 0
    _X1, _X2 = _X[:, :4].clone().requires_grad_(), _X[:, 4:].clone().requires_grad_()
    _, _c1 = cached_self_attention(_mha, _X1, None)
    _o2, _ = cached_self_attention(_mha, _X2, _c1)
    (_o2 * _G[:, 4:]).sum().backward()
    _Xr = _X.clone().requires_grad_()
    (_closed_form(_Xr)[0] * _G).sum().backward()
    checks.check_close(
        _grad(_X1),
        _Xr.grad[:, :4],
        "the gradient of chunk 1's tokens through the cache, from chunk 2's output (hidden, float64)",
        atol=1e-10,
        rtol=0,
        hint="keep the cache in the graph: torch.cat((cache[0], keys), dim=1) and the values alike, with no "
        ".detach() or .data, and attend with them as they are",
    )
    checks.check_close(
        _grad(_X2),
        _Xr.grad[:, 4:],
        "the gradient of chunk 2's tokens, attended with the cache (hidden, float64)",
        atol=1e-10,
        rtol=0,
        hint="X reaches the output through its queries and through its keys and values after the cache: detach "
        "none of them",
    )
