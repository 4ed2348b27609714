# Hidden: float64 (the lazy layers are sized by a first call, then converted), other sizes (N = 7, d_q = 4, d_k = 3),
# our own weights copied in, lengths per example and per query, references by explicit loops; no biases; in training
# mode dropout acts on the weights; the class is the student's own, not (a subclass of) the reference.
# (Runs in the notebook, after its visible test: checks and the answers are defined there.)
# Contract: the page's sentences each check relies on.
#   "Write the class yourself, not qkv's class or a subclass of it." -> the class's MRO; qkv's classes forbidden
#   "three linear layers without bias" -> no bias on W_q, W_k, w_v
#   "The tests call the module once so that the lazy layers get their sizes" -> a first call, then .double()
#   "W_q.weight (N, d_q), W_k.weight (N, d_k) and w_v.weight (1, N)" -> weight shapes for N = 7, d_q = 4, d_k = 3
#   "Additive attention, scores w_v^T tanh(W_q q + W_k k)" -> weights and output against loops
#   "valid_lens as in masked_softmax; mask with ref.masked_softmax." -> no mask, lengths per example and per query
#   "after .double(), in float64." -> float64 compared at 1e-12
#   "weights (B, Q, K), before dropout, in self.attention_weights;" -> training mode: weights 1/3, 3 equal keys
#   "apply self.dropout to the weights and multiply by the values." -> training mode: outputs of dropped-out weights
#   "forward(queries, keys, values, valid_lens=None):" -> a call without valid_lens
#   "Additive attention, scores w_v^T tanh(W_q q + W_k k)" -> gradients of inputs and weights against autograd
# Classes: each kind of mistake, and the check that catches it.
#   value -> weights and output against loops (no tanh; biases kept)
#   dtype -> after .double(), float64 output and weights at 1e-12 (scores filled into a float32 buffer)
#   device -> n/a: the contract names no device, and forward needs no tensor of its own (ref.masked_softmax masks)
#   pass-through -> lengths per example and per query reach the mask (valid_lens not passed on)
#   state -> n/a: forward only reads its inputs (the projections make new tensors before any in-place step)
#   gradient -> gradients reach queries, keys, values, W_q, W_k and w_v as autograd's (weights stored .detach()ed)
#   type -> n/a: forward returns one tensor and stores one, which check_close accepts only as exactly torch.Tensor
#   edge -> no mask, and a call without valid_lens (its default None)
#   symmetry -> d_q = 4 and d_k = 3 differ: W_q applied to the keys gets the wrong input size
#   train-eval -> eval mode: no dropout; training mode: dropout on the weights, not on the output
#   efficiency -> n/a: the (B, Q, K, N) sums are the method; the contract promises no bound
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

import qkv.attention as _qa

checks.check_true(
    not any(c is _qa.DotProductAttention or c is _qa.AdditiveAttention for c in AdditiveAttention.__mro__),
    "AdditiveAttention is a class of your own",
    hint="write the module; do not reuse qkv's class",
)
_g = _T.Generator().manual_seed(1134)
_q = _T.randn(2, 3, 4, generator=_g, dtype=_f64)
_k = _T.randn(2, 5, 3, generator=_g, dtype=_f64)
_v = _T.randn(2, 5, 2, generator=_g, dtype=_f64)
_Wq = _T.randn(7, 4, generator=_g, dtype=_f64)
_Wk = _T.randn(7, 3, generator=_g, dtype=_f64)
_wv = _T.randn(1, 7, generator=_g, dtype=_f64)
_Wq_l, _Wk_l, _wv_l = _Wq.tolist(), _Wk.tolist(), _wv.tolist()[0]


def _additive(qi, kj):
    hidden = [sum(w * x for w, x in zip(_Wq_l[h], qi)) + sum(w * x for w, x in zip(_Wk_l[h], kj)) for h in range(7)]
    return sum(w * _math.tanh(x) for w, x in zip(_wv_l, hidden))


_cases = [
    ("no mask", None, [[5] * 3] * 2),
    ("lengths per example [2, 5]", _T.tensor([2, 5]), [[2] * 3, [5] * 3]),
    ("lengths per query", _T.tensor([[1, 5, 3], [4, 2, 5]]), [[1, 5, 3], [4, 2, 5]]),
]
with checks.forbid_reference(AdditiveAttention, (_qa, "DotProductAttention"), (_qa, "AdditiveAttention")):
    _layer = AdditiveAttention(num_hiddens=7, dropout=0.2)
    _layer.eval()
    _layer(_T.zeros(1, 1, 4), _T.zeros(1, 2, 3), _T.zeros(1, 2, 2))  # gives the lazy layers their input sizes
    _layer.double()
    with _torch.no_grad():
        for _lin, _w, _nm in [(_layer.W_q, _Wq, "W_q"), (_layer.W_k, _Wk, "W_k"), (_layer.w_v, _wv, "w_v")]:
            checks.check_shape(
                _lin.weight.detach(),
                tuple(_w.shape),
                f"{_nm}.weight (hidden, N = 7, d_q = 4, d_k = 3)",
                hint="W_q: d_q -> num_hiddens, W_k: d_k -> num_hiddens, w_v: num_hiddens -> 1",
            )
            checks.check_true(_lin.bias is None, f"{_nm} has no bias", hint="pass bias=False to nn.LazyLinear")
            _lin.weight.copy_(_w)
    for _name, _arg, _lens in _cases:
        _out = _layer(_q, _k, _v, _arg)
        checks.check_true(
            getattr(_out, "dtype", None) == _f64 and getattr(_layer.attention_weights, "dtype", None) == _f64,
            f"after .double(), float64 inputs give float64 output and attention_weights (hidden, {_name})",
            hint="compute from the inputs and layers as they are; a buffer made by torch.zeros needs dtype=",
        )
        _W, _O = _attend_ref(_q.tolist(), _k.tolist(), _v.tolist(), _lens, _additive)
        checks.check_close(
            _layer.attention_weights,
            _T.tensor(_W, dtype=_f64),
            f"attention_weights (hidden, float64, {_name})",
            atol=1e-12,
            rtol=0,
            hint="score with w_v(tanh(W_q(q) + W_k(k))) for every query-key pair, then mask",
        )
        checks.check_close(_out, _T.tensor(_O, dtype=_f64), f"output (hidden, float64, {_name})", atol=1e-12, rtol=0)
    # valid_lens defaults to None: no mask.
    _W, _O = _attend_ref(_q.tolist(), _k.tolist(), _v.tolist(), [[5] * 3] * 2, _additive)
    checks.check_close(
        _layer(_q, _k, _v),
        _T.tensor(_O, dtype=_f64),
        "output of a call without valid_lens (hidden)",
        atol=1e-12,
        rtol=0,
        hint="keep the default valid_lens=None of the signature",
    )
    # Gradients: the layer is trained through; the inputs and the three weight matrices must receive the gradients of
    # the same attention written with torch.
    _lens_g = [[1, 5, 3], [4, 2, 5]]
    _keep_g = _keep_of(_lens_g, 5)

    def _additive_ref(q, k, v, Wq, Wk, wv):
        feats = _T.tanh(_T.matmul(q, Wq.T)[:, :, None, :] + _T.matmul(k, Wk.T)[:, None, :, :])  # (B, Q, K, N)
        w = _masked_torch(_T.matmul(feats, wv[0]), _keep_g)  # (B, Q, K, N) @ (N,) -> (B, Q, K)
        return _T.bmm(w, v), w

    def _additive_call(q, k, v):
        out = _layer(q, k, v, _T.tensor(_lens_g))
        return out, _layer.attention_weights

    _check_gradients(
        "AdditiveAttention",
        _additive_call,
        [_q, _k, _v],
        ["queries", "keys", "values"],
        _additive_ref,
        params=[(_nm + ".weight", getattr(_layer, _nm).weight) for _nm in ("W_q", "W_k", "w_v")],
    )
    _check_dropout_on_weights(_layer, _T.randn(1, 64, 4, generator=_g, dtype=_f64), _T.zeros(1, 3, 3, dtype=_f64), 0.2)
