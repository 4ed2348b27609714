# Hidden: float64 (within 1e-6: the rotary tables hold float32 values) against a block built from PyTorch's pieces
# (torch.nn.RMSNorm, rotary positions by complex multiplication, scaled_dot_product_attention with enable_gqa and a
# causal mask after the cache) with drawn weights loaded by name into both, for (H, G) = (4, 4), (4, 2) and (6, 1),
# rope_base 10000 and 50, eps 1e-6 and 0.01, and a SwiGLU of the width given; a whole sequence, then the same tokens
# in chunks of 3, 2, 1 and 1 through the cache; the caches' shapes; X and the cache passed in unchanged; max_len 1100
# decodes positions 1096 .. 1099 (past the default's 1024); the gradient of X in a plain call, and of both chunks'
# inputs when the second chunk follows the first's cache, against autograd of the reference; no call to the reference.
# Contract: the page's sentences each check relies on.
#   "self.attn_norm = modern.RMSNorm(num_hiddens, eps);" -> the answer's weights loaded by name
#   "self.W_q, self.W_k, self.W_v: nn.Linear from num_hiddens to H * h," -> shapes by load_exact
#   "G * h and G * h features, no bias;" -> no bias among the names; G = 4, 2, 1
#   "self.rotary = RotaryPositionalEmbedding(h, rope_base, max_len);" -> rope_base 50
#   "self.ffn = modern.SwiGLU(num_hiddens, ffn_num_hiddens)." -> a SwiGLU of width 20
#   "A = attn_norm(X); queries W_q(A) as H heads (B, H, T, h), keys W_k(A)" -> against the reference block
#   "by self.rotary as positions P .. P + T - 1 (its offset); keys and" -> chunks after a cache
#   "grouped_query_attention, each token seeing the cached tokens and the tokens of X up to itself;" -> causal mask
#   "new_cache = LayerCache(keys, values), the rotated keys and the values" -> cache against the reference's keys
#   "of all P + T tokens, (B, G, P + T, h) each; the cache passed in is not" -> shapes; old cache unchanged
#   "Y is (B, T, num_hiddens), in X's dtype and on its device." -> float64 in, float64 out
#   "Any P + T up to max_len is allowed." -> max_len 1100: positions 1096 .. 1099 after a cache of 1096 tokens
#   "Gradients flow from Y to X, to the weights," -> the gradient of X in a plain call, against autograd
#   "and through new_cache to the inputs of the calls that filled it." -> chunk 1's gradient through chunk 2
# Classes: each kind of mistake, and the check that catches it.
#   value -> against the reference block (no_causal_mask, ffn_without_norm)
#   dtype -> n/a: the block's modules follow .double(); float64 throughout is checked with the values
#   device -> n/a: grouped_query_attention moves the lengths to the scores' device; modules follow .to(device)
#   pass-through -> rope_base 50, eps 0.01 and max_len 1100 reach the parts (rope_base_ignored, ignore_argument)
#   state -> X and the cache passed in unchanged after a call (residual_in_place)
#   gradient -> X's gradient, and chunk 1's through the cache, as the whole sequence's (detach_input)
#   type -> the norms are the course's RMSNorm, one weight each, loaded by name (layernorm_for_rmsnorm)
#   edge -> a cache of P tokens rotates the new ones as P onwards (rotated_from_zero_after_the_cache)
#   symmetry -> (B, T, G, h) split into heads by a transpose, T != G (heads_reshaped_without_transpose)
#   train-eval -> n/a: no dropout, the same in both modes
#   efficiency -> the cache keeps the G shared heads, (B, G, P + T, h) (cache_repeated_to_all_heads)
from _common import (  # the section's shared helpers
    _T,
    _block_weights,
    _draw,
    _load,
    _md,
    _reference_block,
    _torch,
)

_g = _T.Generator().manual_seed(2603)

with checks.forbid_reference(ModernDecoderBlock, (_md, "ModernDecoderBlock")):
    for _H, _G, _base, _eps in ((4, 4, 10000.0, 1e-6), (4, 2, 50.0, 0.01), (6, 1, 10000.0, 1e-6)):
        _N = 4 * _H
        if _eps == 1e-6:
            _blk = ModernDecoderBlock(_N, _H, _G, ffn_num_hiddens=20, max_len=32, rope_base=_base).double()
        else:
            _blk = ModernDecoderBlock(_N, _H, _G, 20, 32, _base, _eps).double()
        _w = _block_weights(_g, _N, _H, _G, 20)
        _what = f"ModernDecoderBlock({_N}, {_H}, {_G}, 20)"
        _load(_blk, _w, f"{_what}: the docstring's parts, by name, without biases (hidden)")
        _X = _draw(_g, 2, 7, _N, scale=1.0)
        _kept = _X.clone()
        _Y, _cache = _blk(_X)
        _want, _k, _v = _reference_block(_w, _X, _H, _G, _base, _eps)
        checks.check_close(_X, _kept, f"X after {_what}(X) (hidden): not changed", atol=0, rtol=0,
                           hint="X = X + ... makes a new tensor; X += changes the caller's")  # fmt: skip
        checks.check_close(_Y, _want, f"{_what}(X), rope_base {_base}, eps {_eps} (hidden)", atol=1e-6, rtol=1e-5,
                           hint="attn_norm, W_q/W_k/W_v as heads, rotate queries and keys, causal grouped-query "
                                "attention, W_o, add; ffn_norm, SwiGLU, add")  # fmt: skip
        checks.check_true(isinstance(_cache, tuple) and len(_cache) == 2, "the block returns (Y, LayerCache) (hidden)")
        checks.check_true(
            tuple(_cache.keys.shape) == tuple(_cache.values.shape) == (2, _G, 7, 4),
            f"the cache holds the G = {_G} shared heads, (B, G, P + T, h) = (2, {_G}, 7, 4) (hidden), "
            f"got {tuple(_cache.keys.shape)}",
            hint="cache the keys and values before any repeat for the query heads",
        )
        checks.check_close(_cache.keys, _k, "the cached keys, rotated (hidden)", atol=1e-6, rtol=1e-5)
        checks.check_close(_cache.values, _v, "the cached values (hidden)", atol=1e-9, rtol=1e-7)
        # the same tokens in chunks of 3, 2, 1 and 1 through the cache
        _pieces, _c, _start = [], None, 0
        for _size in (3, 2, 1, 1):
            _old = None if _c is None else (_c.keys.clone(), _c.values.clone())
            _step, _new = _blk(_X[:, _start : _start + _size], _c)
            if _old is not None:
                checks.check_true(
                    _torch.equal(_c.keys, _old[0]) and _torch.equal(_c.values, _old[1]),
                    "the cache passed in is not changed (hidden)",
                )
            _pieces.append(_step)
            _c, _start = _new, _start + _size
        checks.check_close(_T.cat(_pieces, dim=1), _want, f"{_what} decoded in chunks of 3, 2, 1, 1 (hidden)",
                           atol=1e-6, rtol=1e-5,
                           hint="the new tokens are positions P .. P + T - 1: rotate with offset=P, and let each "
                                "see the P cached tokens and the new ones up to itself")  # fmt: skip
    # max_len reaches the rotary table: positions up to max_len - 1 = 1099, past the default's 1024
    _w = _block_weights(_g, 8, 2, 1, 12)
    _blk = ModernDecoderBlock(8, 2, 1, 12, max_len=1100).double()
    _load(_blk, _w, "ModernDecoderBlock(8, 2, 1, 12, max_len=1100) (hidden)")
    _past = (_draw(_g, 1, 1, 1096, 4), _draw(_g, 1, 1, 1096, 4))  # (B, G, P, h): a cache of 1096 tokens
    _X = _draw(_g, 1, 4, 8, scale=1.0)
    try:
        _Y = _blk(_X, _md.LayerCache(*_past))[0]
    except (ValueError, IndexError, RuntimeError) as _e:
        _Y = None
        checks.check_true(False, f"max_len=1100 decodes positions 1096 .. 1099 (hidden): {str(_e).splitlines()[0]}",
                          hint="pass max_len to RotaryPositionalEmbedding: its table has max_len rows")  # fmt: skip
    if _Y is not None:
        checks.check_close(_Y, _reference_block(_w, _X, 2, 1, 10000.0, 1e-6, past=_past)[0],
                           "max_len=1100: positions 1096 .. 1099 after a cache of 1096 tokens (hidden)", atol=1e-6,
                           rtol=1e-5, hint="pass max_len to RotaryPositionalEmbedding")  # fmt: skip
    # gradients: of X in a plain call, and of both chunks' inputs when chunk 2 follows chunk 1's cache, against
    # autograd of the reference on the whole sequence
    _w = _block_weights(_g, 16, 4, 2, 20)
    _blk = ModernDecoderBlock(16, 4, 2, 20, 32, 50.0, 0.01).double()
    _load(_blk, _w, "ModernDecoderBlock(16, 4, 2, 20) (hidden)")
    _X = _draw(_g, 2, 7, 16, scale=1.0)
    _R = _draw(_g, 2, 7, 16, scale=1.0)  # a random direction: the loss is (Y * R).sum()
    _hint_g = "keep the queries, keys, values and the cached tensors in the graph (no .detach())"
    for _cut in (0, 4):  # 0: a plain call; 4: tokens 0 .. 3, then tokens 4 .. 6 after their cache
        _Xr = _X.clone().requires_grad_()
        _want = _torch.autograd.grad((_reference_block(_w, _Xr, 4, 2, 50.0, 0.01)[0][:, _cut:] * _R[:, _cut:]).sum(),
                                     _Xr)[0]  # fmt: skip
        _leaves = [_X[:, :_cut].clone().requires_grad_(), _X[:, _cut:].clone().requires_grad_()]
        _what = "a plain call" if _cut == 0 else "chunk 1 (through the cache) and chunk 2"
        try:
            _c = _blk(_leaves[0])[1] if _cut else None
            _Yg = _blk(_leaves[1], _c)[0]
            _got = _torch.autograd.grad((_Yg * _R[:, _cut:]).sum(), _leaves[1 - bool(_cut) :], allow_unused=True)
        except RuntimeError as _e:  # e.g. nothing in the output requires grad
            _got = None
            checks.check_true(False, f"backpropagating through {_what} failed (hidden): {str(_e).splitlines()[0]}",
                              hint=_hint_g)  # fmt: skip
        if _got is not None:
            _got = [_T.zeros_like(_l) if _a is None else _a for _a, _l in zip(_got, _leaves[1 - bool(_cut) :])]
            checks.check_close(_T.cat(_got, dim=1), _want, f"the gradient of the inputs of {_what} (hidden, float64)",
                               atol=1e-6, rtol=1e-5, hint=_hint_g)  # fmt: skip
