# Hidden: float64 and other sizes; lengths per example and per query (1 and K included, and Q = 1); inf, NaN and huge
# scores past the lengths, which must not matter; None; the caller's scores left unchanged; no call to the reference.
# References by explicit loops over rows.
# (Runs in the notebook, after its visible test: checks and the answers are defined there.)
# Contract: the page's sentences each check relies on.
#   "Write `masked_softmax` yourself, with torch operations only." -> qkv's masked_softmax and masks forbidden
#   "one length per example shared by all its queries;" -> lengths per example [1, 5, 3]
#   "or of shape (B, Q), one length per query." -> lengths per query; one query with lengths (B, 1)
#   "Every length is between 1 and K." -> lengths 1 and K among them
#   "The entries past l are exactly 0 whatever X holds there" -> masked weights exactly 0
#   "(even inf or NaN)" -> inf, NaN and 1e30 past the lengths
#   "length, finite for scores of any size." -> valid scores of size 1e3, against torch's softmax
#   "weights of shape (B, Q, K), of the dtype of X." -> float64 weights at 1e-12; on meta, X's dtype
#   "None, meaning no mask (a plain softmax over the keys)" -> valid_lens = None
#   "and X itself is left unchanged." -> the scores X after the call
#   "make every new tensor on X's device, and read no values out of a tensor" -> X and lengths on the meta device
#   "Softmax over the last axis, zero past each valid length" -> its gradient, against autograd of torch's softmax
# Classes: each kind of mistake, and the check that catches it.
#   value -> weights against loops (masked scores filled with 0, off by one, zeroed after the softmax)
#   dtype -> float64 weights at 1e-12, X's dtype on 'meta' (a float32 softmax); float16: n/a, -1e6 overflows it
#   device -> X and lengths on the 'meta' device (a mask's arange made on the CPU; lengths read with .tolist())
#   pass-through -> lengths per example and per query must both mask (lengths ignored: a plain softmax)
#   state -> the scores X after the call (masked in place, X[~keep] = -1e6)
#   gradient -> the gradient of the weights with respect to X, against autograd of torch's softmax (a detached copy)
#   type -> n/a: one tensor comes back, which check_close accepts only as exactly torch.Tensor
#   edge -> lengths 1 and K, one query per example, valid_lens=None; valid scores of 1e3 (exp over a sum overflows)
#   symmetry -> lengths per example [1, 5, 3] over 4 queries: repeat() for repeat_interleave() mixes the examples
#   train-eval -> n/a: a function without a module, dropout or mode
#   efficiency -> n/a: the contract promises no time or memory bound beyond reading no values (the device class)
import math as _math

from _common import (  # the section's shared helpers (the assembler inlines _common.py)
    _check_gradients,
    _keep_of,
    _masked_torch,
)

import qkv.attention as _qa

_T = checks.trusted
_f64 = _T.float64


def _masked_ref(scores, lens):
    """Masked softmax of nested lists scores[b][i][j], with lens[b][i] valid keys per row, by explicit loops."""
    out = []
    for s_b, l_b in zip(scores, lens):
        rows = []
        for row, n in zip(s_b, l_b):
            top = max(row[:n])
            e = [_math.exp(x - top) for x in row[:n]]
            rows.append([x / sum(e) for x in e] + [0.0] * (len(row) - n))
        out.append(rows)
    return out


def _scores(seed, B, Q, K):
    return _T.randn(B, Q, K, generator=_T.Generator().manual_seed(seed), dtype=_f64).tolist()


def _poisoned(scores, lens):
    """The same scores with inf, NaN or 1e30 past each row's valid length."""
    junk = [float("inf"), float("nan"), 1e30]
    return [
        [row[:n] + [junk[(j + i) % 3] for j in range(len(row) - n)] for i, (row, n) in enumerate(zip(s_b, l_b))]
        for s_b, l_b in zip(scores, lens)
    ]


_per_query = [[1, 2, 3, 4], [5, 5, 1, 2], [3, 1, 4, 5]]
_cases = [
    ("lengths per example (B,) = [1, 5, 3]", [1, 5, 3], [[1] * 4, [5] * 4, [3] * 4]),
    ("lengths per query (B, Q)", _per_query, _per_query),
]
_S = _scores(1131, 3, 4, 5)
with checks.forbid_reference(masked_softmax, (_qa, "masked_softmax"), (_qa, "valid_mask"), (_qa, "sequence_mask")):
    for _name, _arg, _lens in _cases:
        _W = masked_softmax(_T.tensor(_poisoned(_S, _lens), dtype=_f64), _T.tensor(_arg))
        checks.check_close(
            _W,
            _T.tensor(_masked_ref(_S, _lens), dtype=_f64),
            f"weights (hidden, float64, {_name}, inf/NaN/1e30 past the lengths)",
            atol=1e-12,
            rtol=0,
            hint="replace the masked scores before the softmax (masked_fill), so what was there "
            "cannot matter; keep the dtype of X",
        )
        _keep = _T.tensor([[[j < n for j in range(5)] for n in _l] for _l in _lens])
        checks.check_close(
            _T.where(_keep, _T.zeros(3, 4, 5, dtype=_f64), _W),
            _T.zeros(3, 4, 5, dtype=_f64),
            f"weights past the valid lengths ({_name})",
            atol=0,
            rtol=0,
            hint="masked weights must be exactly 0: fill with a very large negative number",
        )
    # One query per example, lengths given as (B, 1).
    _S1 = _scores(1132, 2, 1, 4)
    _W = masked_softmax(_T.tensor(_S1, dtype=_f64), _T.tensor([[2], [4]]))
    checks.check_close(
        _W,
        _T.tensor(_masked_ref(_S1, [[2], [4]]), dtype=_f64),
        "weights (hidden, one query per example, lengths of shape (B, 1))",
        atol=1e-12,
        rtol=0,
    )
    # No mask.
    _W = masked_softmax(_T.tensor(_S, dtype=_f64), None)
    checks.check_close(
        _W,
        _T.tensor(_masked_ref(_S, [[5] * 4] * 3), dtype=_f64),
        "weights with valid_lens = None (hidden, float64)",
        atol=1e-12,
        rtol=0,
    )
    # The caller's scores must be left as they were.
    _X = _T.tensor(_S, dtype=_f64)
    masked_softmax(_X, _T.tensor([2, 1, 4]))
    checks.check_close(
        _X,
        _T.tensor(_S, dtype=_f64),
        "the scores X after the call",
        atol=0,
        rtol=0,
        hint="do not modify X in place (X[...] = ...); masked_fill returns a new tensor",
    )

# Devices: every tensor the answer makes must live on X's device. Tensors on the 'meta' device hold shapes and no data,
# and a 'meta' tensor cannot meet a CPU one, so a mask made on the CPU (torch.arange(K) without device=) fails here as
# it fails on a GPU, while a correct answer returns a 'meta' tensor of X's shape and dtype.
for _name, _lens in (
    ("lengths per example (B,)", _T.tensor([1, 5], device="meta")),
    ("lengths per query (B, Q)", _T.tensor([[1, 2, 5], [5, 3, 4]], device="meta")),
):
    try:
        _Wm, _err = masked_softmax(_T.zeros(2, 3, 5, dtype=_f64, device="meta"), _lens), None
    except Exception as _e:  # report what the student's code raised, in one line
        _Wm, _err = None, f"{type(_e).__name__}: {str(_e).splitlines()[0] if str(_e) else ''}"
    # The docstring's contract: every new tensor on X's device, no value read out of a tensor (a GPU would have to
    # synchronise). A read fails on 'meta' with "no data" or "cannot be called on meta tensors": say so.
    _read = _err is not None and ("meta tensor" in _err or "no data" in _err)
    _hint_m = (
        "read no values out of tensors (no .item(), .tolist(), int(t) or if on a tensor): on a GPU each read waits "
        "for the device; build the mask with tensor operations, as torch.arange(K, device=X.device) < lengths"
        if _read
        else "make every new tensor on the scores' device, as in torch.arange(K, device=X.device)"
    )
    checks.check_true(
        _err is None,
        f"masked_softmax with X and {_name} on another device than the CPU ('meta') should work; it raised {_err}",
        hint=_hint_m,
    )
    checks.check_shape(_Wm, (2, 3, 5), f"weights on the 'meta' device ({_name})")
    checks.check_true(
        str(_Wm.device) == "meta" and _Wm.dtype == _f64,
        f"the weights should be on X's device ('meta') with X's dtype ({_name}); got {_Wm.device}, {_Wm.dtype}",
        hint=_hint_m,
    )

# Gradients: attention layers learn their scores through the weights, so the weights must carry the gradient of a
# softmax over the valid keys (and none to the masked scores).
_lens_g = [[1, 2, 3, 4], [5, 5, 1, 2], [3, 1, 4, 5]]
_keep_g = _keep_of(_lens_g, 5)
_check_gradients(
    "masked_softmax",
    lambda X: (masked_softmax(X, _T.tensor(_lens_g)),),
    [_T.tensor(_S, dtype=_f64)],
    ["scores X"],
    lambda X: (_masked_torch(X, _keep_g),),
    hint="mask with tensor operations that keep the graph (masked_fill on X itself, not on a .detach() or .data "
    "copy), then torch.softmax",
)

# Scores of any size: a softmax written as exp over its sum overflows (inf / inf) where torch.softmax, which
# subtracts each row's maximum, stays finite.
_big = _T.tensor(_S, dtype=_f64) * 1e3
for _lens_b in ([1, 5, 3], None):
    _got_b = masked_softmax(_big, None if _lens_b is None else _T.tensor(_lens_b))
    _keep_b = _keep_of([[n] * 4 for n in (_lens_b or [5, 5, 5])], 5)
    checks.check_close(
        _got_b,
        _masked_torch(_big, _keep_b),
        f"weights of scores of size 1e3 (hidden, lengths {_lens_b})",
        atol=1e-12,
        rtol=0,
        hint="torch.softmax subtracts each row's maximum before exp; exp(X) / exp(X).sum() overflows",
    )
