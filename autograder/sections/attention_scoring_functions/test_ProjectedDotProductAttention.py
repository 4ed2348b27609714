# Hidden: float64, query size 3 and key size 5 (so scaling by the wrong size shows), our projection copied in, no
# mask, lengths per example and per query, references by explicit loops; in training mode dropout acts on the weights.
# (Runs in the notebook, after its visible test: checks and the answers are defined there.)
# Contract: the page's sentences each check relies on.
#   "self.W_q = nn.Linear(query_size, key_size, bias=False)" -> W_q.weight (5, 3) and no bias
#   "The scores are W_q(q) . k / sqrt(d_k)." -> query size 3, key size 5, our projection copied in, against loops
#   "valid_lens as in masked_softmax; mask with ref.masked_softmax." -> no mask, lengths per example and per query
#   "after .double(), in float64, to float64 precision." -> compared at 1e-12
#   "weights (B, Q, K), before dropout, in self.attention_weights;" -> training mode: weights 1/3, 3 equal keys
#   "apply self.dropout to the weights and multiply by the values." -> training mode: outputs of dropped-out weights
#   "forward(queries, keys, values, valid_lens=None):" -> a call without valid_lens
#   "The scores are W_q(q) . k / sqrt(d_k)." -> gradients of the inputs and W_q against autograd
# Classes: each kind of mistake, and the check that catches it.
#   value -> weights and output against loops with our projection (a bias kept)
#   dtype -> after .double(), float64 output and weights at 1e-12 (sqrt(d_k) taken from a float32 tensor)
#   device -> n/a: the contract names no device, and forward needs no tensor of its own (ref.masked_softmax masks)
#   pass-through -> lengths per query reach the mask (valid_lens not passed on); dropout at 0.3, not the visible 0.5
#   state -> n/a: forward only reads its inputs (the projection makes a new tensor before any in-place step)
#   gradient -> gradients reach queries, keys, values and W_q as autograd's (weights stored .detach()ed)
#   type -> n/a: forward returns one tensor and stores one, which check_close accepts only as exactly torch.Tensor
#   edge -> no mask, and a call without valid_lens (its default None)
#   symmetry -> query size 3, key size 5: scaling by sqrt(query_size) shows
#   train-eval -> eval mode: no dropout; training mode: dropout on the weights, not on the output
#   efficiency -> n/a: the contract promises no time or memory bound
import torch as _torch
from _common import (  # the section's shared helpers (the assembler inlines _common.py)
    _T,
    _attend_ref,
    _check_dropout_on_weights,
    _check_gradients,
    _f64,
    _keep_of,
    _masked_torch,
    _math,
)

_g = _T.Generator().manual_seed(1136)
_q = _T.randn(2, 3, 3, generator=_g, dtype=_f64)
_k = _T.randn(2, 4, 5, generator=_g, dtype=_f64)
_v = _T.randn(2, 4, 2, generator=_g, dtype=_f64)
_P = _T.randn(5, 3, generator=_g, dtype=_f64)
_P_l = _P.tolist()


def _projected(qi, kj):
    projected = [sum(w * x for w, x in zip(row, qi)) for row in _P_l]
    return sum(a * b for a, b in zip(projected, kj)) / _math.sqrt(5)


_cases = [
    ("no mask", None, [[4] * 3] * 2),
    ("lengths per example [2, 4]", _T.tensor([2, 4]), [[2] * 3, [4] * 3]),
    ("lengths per query", _T.tensor([[1, 4, 3], [4, 2, 1]]), [[1, 4, 3], [4, 2, 1]]),
]
_layer = ProjectedDotProductAttention(query_size=3, key_size=5, dropout=0.3)
_layer.double()
_layer.eval()
checks.check_shape(
    _layer.W_q.weight.detach(),
    (5, 3),
    "W_q.weight (hidden, query_size = 3, key_size = 5)",
    hint="nn.Linear(query_size, key_size, bias=False)",
)
checks.check_true(_layer.W_q.bias is None, "W_q has no bias", hint="pass bias=False to nn.Linear")
with _torch.no_grad():
    _layer.W_q.weight.copy_(_P)
for _name, _arg, _lens in _cases:
    _out = _layer(_q, _k, _v, _arg)
    checks.check_true(
        getattr(_out, "dtype", None) == _f64 and getattr(_layer.attention_weights, "dtype", None) == _f64,
        f"after .double(), float64 inputs give float64 output and attention_weights (hidden, {_name})",
        hint="compute in the inputs' dtype: math.sqrt(d_k) or d_k ** 0.5, not torch.sqrt of a float32 tensor",
    )
    _W, _O = _attend_ref(_q.tolist(), _k.tolist(), _v.tolist(), _lens, _projected)
    checks.check_close(
        _layer.attention_weights,
        _T.tensor(_W, dtype=_f64),
        f"attention_weights (hidden, float64, d_q = 3, d_k = 5, {_name})",
        atol=1e-12,
        rtol=0,
        hint="project the queries with W_q, scale by sqrt(key_size), mask with ref.masked_softmax",
    )
    checks.check_close(_out, _T.tensor(_O, dtype=_f64), f"output (hidden, float64, {_name})", atol=1e-12, rtol=0)
# valid_lens defaults to None: no mask.
_W, _O = _attend_ref(_q.tolist(), _k.tolist(), _v.tolist(), [[4] * 3] * 2, _projected)
checks.check_close(
    _layer(_q, _k, _v),
    _T.tensor(_O, dtype=_f64),
    "output of a call without valid_lens (hidden)",
    atol=1e-12,
    rtol=0,
    hint="keep the default valid_lens=None of the signature",
)
# Gradients: the inputs and the projection must receive the gradients of the same attention written with torch.
_lens_g = [[1, 4, 3], [4, 2, 1]]
_keep_g = _keep_of(_lens_g, 4)


def _projected_ref(q, k, v, P):
    w = _masked_torch(_T.bmm(_T.matmul(q, P.T), k.transpose(1, 2)) / _math.sqrt(5), _keep_g)
    return _T.bmm(w, v), w


def _projected_call(q, k, v):
    out = _layer(q, k, v, _T.tensor(_lens_g))
    return out, _layer.attention_weights


_check_gradients(
    "ProjectedDotProductAttention",
    _projected_call,
    [_q, _k, _v],
    ["queries", "keys", "values"],
    _projected_ref,
    params=[("W_q.weight", _layer.W_q.weight)],
)
_dropper = ProjectedDotProductAttention(query_size=2, key_size=2, dropout=0.3)
_dropper.double()
_check_dropout_on_weights(_dropper, _T.randn(1, 64, 2, generator=_g, dtype=_f64), _T.zeros(1, 3, 2, dtype=_f64), 0.3)
