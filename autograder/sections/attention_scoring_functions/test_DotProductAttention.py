# Hidden: float64, d = 5 and v = 3, no mask, lengths per example and per query, references by explicit loops; in
# training mode dropout acts on the weights; the class is the student's own, not (a subclass of) the reference.
# (Runs in the notebook, after its visible test: checks and the answers are defined there.)
# Contract: the page's sentences each check relies on.
#   "Write the class yourself, not qkv's class or a subclass of it." -> the class's MRO; qkv's classes forbidden
#   "Scaled dot-product attention, softmax(Q K^T / sqrt(d)) V" -> weights and output against loops, d = 5, v = 3
#   "valid_lens as in masked_softmax (None, (B,) or (B, Q))" -> no mask, lengths per example and per query
#   "float64 inputs give float64 weights and output, to float64 precision" -> compared at 1e-12
#   "self.attention_weights as they are before dropout;" -> training mode: weights 1/3 with 3 equal keys
#   "apply self.dropout to the weights (not to the output)" -> training mode: outputs of dropped-out weights
#   "forward(queries, keys, values, valid_lens=None):" -> a call without valid_lens; the inputs after the calls
#   "Scaled dot-product attention, softmax(Q K^T / sqrt(d)) V" -> gradients against autograd of torch's attention
# Classes: each kind of mistake, and the check that catches it.
#   value -> weights and output against loops, d = 5 (no scaling, scaled by d)
#   dtype -> float64 weights and output at 1e-12 (sqrt(d) taken from a float32 tensor)
#   device -> n/a: the contract names no device, and forward needs no tensor of its own (ref.masked_softmax masks)
#   pass-through -> lengths per query reach the mask (valid_lens not passed on); dropout at 0.3, not the visible 0.5
#   state -> the queries, keys and values after the calls (the queries scaled in place)
#   gradient -> gradients of output and weights reach queries, keys and values (weights stored .detach()ed)
#   type -> n/a: forward returns one tensor and stores one, which check_close accepts only as exactly torch.Tensor
#   edge -> no mask, and a call without valid_lens (its default None)
#   symmetry -> d = 5 and K = 6 differ: the scale taken from the number of keys shows
#   train-eval -> eval mode: no dropout; training mode: dropout on the weights (always on; on the output)
#   efficiency -> n/a: the contract promises no time or memory bound
from _common import (  # the section's shared helpers (the assembler inlines _common.py)
    _T,
    _attend_ref,
    _check_dropout_on_weights,
    _check_gradients,
    _check_inputs_unchanged,
    _f64,
    _keep_of,
    _masked_torch,
    _math,
)

import qkv.attention as _qa


def _scaled_dot(qi, kj):
    return sum(a * b for a, b in zip(qi, kj)) / _math.sqrt(len(qi))


checks.check_true(
    not any(c is _qa.DotProductAttention or c is _qa.AdditiveAttention for c in DotProductAttention.__mro__),
    "DotProductAttention is a class of your own",
    hint="write the module; do not reuse qkv's class",
)
_g = _T.Generator().manual_seed(1133)
_q = _T.randn(2, 3, 5, generator=_g, dtype=_f64)
_k = _T.randn(2, 6, 5, generator=_g, dtype=_f64)
_v = _T.randn(2, 6, 3, generator=_g, dtype=_f64)
_cases = [
    ("no mask", None, [[6] * 3] * 2),
    ("lengths per example [4, 6]", _T.tensor([4, 6]), [[4] * 3, [6] * 3]),
    ("lengths per query", _T.tensor([[1, 6, 3], [2, 5, 6]]), [[1, 6, 3], [2, 5, 6]]),
]
with checks.forbid_reference(DotProductAttention, (_qa, "DotProductAttention"), (_qa, "AdditiveAttention")):
    _layer = DotProductAttention(0.3)
    _layer.eval()
    _before = [_t.tolist() for _t in (_q, _k, _v)]
    for _name, _arg, _lens in _cases:
        _out = _layer(_q, _k, _v, _arg)
        _check_inputs_unchanged("DotProductAttention", (_q, _k, _v), _before)
        checks.check_true(
            getattr(_out, "dtype", None) == _f64 and getattr(_layer.attention_weights, "dtype", None) == _f64,
            f"float64 inputs give float64 output and attention_weights (hidden, {_name})",
            hint="compute in the inputs' dtype: math.sqrt(d) or d ** 0.5, not torch.sqrt of a float32 tensor",
        )
        _W, _O = _attend_ref(_q.tolist(), _k.tolist(), _v.tolist(), _lens, _scaled_dot)
        checks.check_close(
            _layer.attention_weights,
            _T.tensor(_W, dtype=_f64),
            f"attention_weights (hidden, float64, d = 5, {_name})",
            atol=1e-12,
            rtol=0,
            hint="scale by sqrt(d), d = queries.shape[-1], and mask with ref.masked_softmax",
        )
        checks.check_close(
            _out, _T.tensor(_O, dtype=_f64), f"output (hidden, float64, v = 3, {_name})", atol=1e-12, rtol=0
        )
    # valid_lens defaults to None: no mask.
    _out = _layer(_q, _k, _v)
    _W, _O = _attend_ref(_q.tolist(), _k.tolist(), _v.tolist(), [[6] * 3] * 2, _scaled_dot)
    checks.check_close(
        _out,
        _T.tensor(_O, dtype=_f64),
        "output of a call without valid_lens (hidden)",
        atol=1e-12,
        rtol=0,
        hint="keep the default valid_lens=None of the signature",
    )
    # Gradients: the layer is trained through; output and weights must carry the gradients of the same attention
    # written with torch.
    _lens_g = [[1, 6, 3], [2, 5, 6]]
    _keep_g = _keep_of(_lens_g, 6)

    def _dot_ref(q, k, v):
        w = _masked_torch(_T.bmm(q, k.transpose(1, 2)) / _math.sqrt(5), _keep_g)
        return _T.bmm(w, v), w

    def _dot_call(q, k, v):
        out = _layer(q, k, v, _T.tensor(_lens_g))
        return out, _layer.attention_weights

    _check_gradients("DotProductAttention", _dot_call, [_q, _k, _v], ["queries", "keys", "values"], _dot_ref)
    _check_dropout_on_weights(
        DotProductAttention(0.3), _T.randn(1, 64, 2, generator=_g, dtype=_f64), _T.zeros(1, 3, 2, dtype=_f64), 0.3
    )
