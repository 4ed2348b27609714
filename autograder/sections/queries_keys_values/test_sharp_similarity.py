# Hidden: other sizes and betas, float64; references from explicit loops over pairs; one query; CPU inputs with
# 'meta' as PyTorch's default device.
# Contract: the page's sentences each check relies on.
#   "where scores[i, j] = -beta * ||queries[i] - keys[j]||^2." -> scores for beta 0.5 and 3, 5 queries x 7 keys
#   "beta: the sharpness, a positive number (10 by default)." -> scores with the default beta
#   "scores of shape (Q, K), in the dtype and on the device of the inputs," -> float64 at 1e-9; CPU with 'meta' default
#   "queries: tensor of shape (Q, d)." -> a single query, Q = 1
# Classes: each kind of mistake, and the check that catches it.
#   value -> scores against loops over pairs (the distance not squared, the sign lost)
#   dtype -> float64 scores, compared at 1e-9 (a float32 buffer filled in a loop)
#   device -> CPU inputs with 'meta' as the default device: a buffer made without device= lands on 'meta'
#   pass-through -> beta 0.5 and 3 given, and the default 10 (a default of 1)
#   state -> n/a: the inputs are only read; every in-place step of an answer acts on a tensor it made itself
#   gradient -> n/a: the scores are not trained through in this section (Exercise 3 differentiates the dot product)
#   type -> n/a: one tensor comes back, and check_close accepts exactly a torch.Tensor; beta is a Python number
#   edge -> a single query: scores of shape (1, K) (a .squeeze() that drops the query axis)
#   symmetry -> 5 queries and 7 keys: scores built keys by queries, (K, Q), have the wrong shape
#   train-eval -> n/a: a function without a module, dropout or mode
#   efficiency -> n/a: the contract promises no time or memory bound (the (Q, K, d) differences are allowed)
from _shared import _device_probe  # the course's shared probes (the assembler inlines _shared.py)

_T = checks.trusted
_g = _T.Generator().manual_seed(1102)
_q = _T.randn(5, 4, generator=_g, dtype=_T.float64)
_k = _T.randn(7, 4, generator=_g, dtype=_T.float64)
for _beta in (0.5, 3.0):
    _ref = [[-_beta * sum((a - b) ** 2 for a, b in zip(qi, kj)) for kj in _k.tolist()] for qi in _q.tolist()]
    _s = sharp_similarity(_q, _k, beta=_beta)
    checks.check_true(
        getattr(_s, "dtype", None) == _T.float64,
        f"the scores of float64 inputs are float64 (hidden); they are {getattr(_s, 'dtype', type(_s).__name__)}",
        hint="compute from the inputs themselves; a buffer made by torch.zeros needs dtype=queries.dtype",
    )
    checks.check_close(
        _s,
        _T.tensor(_ref, dtype=_T.float64),
        f"scores with beta={_beta} (hidden, 5 queries x 7 keys)",
        atol=1e-9,
    )
_ref = [[-10.0 * sum((a - b) ** 2 for a, b in zip(qi, kj)) for kj in _k.tolist()] for qi in _q.tolist()]
checks.check_close(
    sharp_similarity(_q, _k), _T.tensor(_ref, dtype=_T.float64), "scores with the default beta", atol=1e-9
)
checks.check_close(
    sharp_similarity(_q[2:3], _k, beta=0.5),
    _T.tensor([[-0.5 * sum((a - b) ** 2 for a, b in zip(_q[2].tolist(), kj)) for kj in _k.tolist()]], dtype=_T.float64),
    "scores of a single query, of shape (1, K) (hidden)",
    atol=1e-9,
    hint="keep the query axis: no .squeeze(), which turns (1, K) into (K,)",
)
# Devices: every tensor the answer makes must be on the inputs' device (_common.py: _device_probe).
_err = _device_probe(
    lambda: sharp_similarity(_q, _k, beta=0.5),
    lambda: sharp_similarity(_q.to("meta"), _k.to("meta"), beta=0.5),
    "sharp_similarity",
)
checks.check_true(
    _err is None,
    f"the scores are made on the inputs' device (hidden): {_err}",
    hint="make every new tensor on the inputs' device: torch.zeros(..., device=queries.device), or from the inputs",
)
