# Hidden: several shapes (multi-head, grouped, multi-query; 1 and 32 layers; batch 1 and 3; 2, 4 and 1 bytes a
# number); the references count the weights of bias-free nn.Linear layers and the numbers of the cached keys and
# values, made on the 'meta' device (shapes only, no memory), so that a long context costs nothing to check.
# Contract: the page's sentences each check relies on.
#   "W_q, W_o (N x N) and W_k, W_v (N to G h), no bias." -> the parameters, several shapes
#   "The cache holds the keys and the values of every layer for batch_size sequences of seq_len tokens." -> cache_bytes
#   "each number taking `bytes_per_number` bytes" -> 1, 2 and 4 bytes a number
#   "Returns (parameters, cache_bytes), two Python ints." -> the types
# Classes: each kind of mistake, and the check that catches it.
#   value -> the parameters and cache against counts of meta tensors (keys_only)
#   dtype -> n/a: no tensor goes in or comes out; the types of the two counts are the type class
#   device -> n/a: no tensor goes in or comes out (the references' 'meta' tensors are the test's own)
#   pass-through -> batch_size, num_layers and bytes_per_number all varied (fixed_bytes, ignores_batch)
#   state -> n/a: a function of its numbers alone, with nothing to keep or change
#   gradient -> n/a: counts, nothing trained through
#   type -> a tuple of two Python ints (float_head_size, returns_list)
#   edge -> n/a: the docstring names no special case; G = 1 and G = H are ordinary cases of one formula (both run)
#   symmetry -> G different from H, so that G h and N differ (kv_full_width)
#   train-eval -> n/a: no dropout, no mode
#   efficiency -> n/a: the contract promises no cost (the counts are a few multiplications)
import torch as _torch

_nn = _torch.nn
_cases = [
    # (num_hiddens, num_heads, num_kv_heads, seq_len, batch_size, num_layers, bytes_per_number)
    (64, 8, 8, 100, 1, 1, 2),
    (64, 8, 2, 1000, 3, 2, 4),
    (4096, 32, 8, 32_768, 1, 32, 2),
    (4096, 32, 1, 131_072, 2, 32, 1),
]
for _N, _H, _G, _L, _Bs, _layers, _bytes in _cases:
    _p = _N // _H
    _what = f"attention_costs({_N}, {_H}, {_G}, {_L}, {_Bs}, {_layers}, {_bytes}) (hidden)"
    _got = attention_costs(_N, _H, _G, _L, batch_size=_Bs, num_layers=_layers, bytes_per_number=_bytes)
    checks.check_true(
        type(_got) is tuple and len(_got) == 2 and all(type(x) is int for x in _got),
        f"{_what} should return a tuple of two Python ints; got {_got!r}",
        hint="use integer division (//) for the head size, and return (parameters, cache_bytes)",
    )
    _proj = [_nn.Linear(_N, _N, bias=False, device="meta"), _nn.Linear(_N, _G * _p, bias=False, device="meta")]
    _params = _layers * 2 * sum(lin.weight.numel() for lin in _proj)  # W_q and W_o, W_k and W_v
    _cached = _torch.zeros(2, _Bs, _L, _G, _p, device="meta")  # (keys and values, B, T, G, p), one layer
    _cache = _layers * _cached.numel() * _bytes
    checks.check_scalar(
        _got[1],
        _cache,
        f"cache_bytes of {_what}",
        atol=0,
        hint="keys and values: 2 * G * h numbers per token, sequence and layer, times bytes_per_number",
    )
    checks.check_scalar(
        _got[0],
        _params,
        f"parameters of {_what}",
        atol=0,
        hint="per layer: W_q and W_o have N * N weights each, W_k and W_v N * G * h each",
    )
