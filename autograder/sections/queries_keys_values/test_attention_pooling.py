# Hidden: other sizes, float64, a non-symmetric similarity, one query; references from explicit loops. The pair
# returned; gradients against autograd of torch's own pooling; the inputs and the similarity's scores unchanged; CPU
# inputs with 'meta' as PyTorch's default device.
# Contract: the page's sentences each check relies on.
#   "a function called as similarity(queries, keys), in that order" -> the similarity that is not symmetric
#   "maps queries (Q, d) and keys (K, d) to scores (Q, K)" -> 4 queries x 6 keys, a single query
#   "Returns: (output, weights):" -> the result is a pair
#   "the softmax of each query's scores (each row sums to 1)" -> weights against explicit loops
#   "output of shape (Q, v), the weighted sums of the values" -> output against loops; one query's output shape
#   "Both in the dtype of the inputs" -> float64 output and weights, compared at 1e-9
#   "on their device" -> CPU results with 'meta' as the default device
#   "and right for scores of any size" -> scores between 100 and 300 in float32
#   "scores of several hundred overflow exp() in float32, which torch.softmax avoids" -> the same check
#   "Gradients reach the queries, keys and values through both" -> gradients against autograd of torch's pooling
#   "the scores that similarity returns, are left unchanged." -> the inputs and the large scores after the calls
# Classes: each kind of mistake, and the check that catches it.
#   value -> weights and output against explicit loops (no softmax, a softmax over the queries)
#   dtype -> float64 output and weights, to 1e-9 (a softmax taken in float32)
#   device -> CPU inputs with 'meta' as the default device: a tensor made without device= lands on 'meta'
#   pass-through -> a similarity that is not the dot product (an answer that always takes queries @ keys.T)
#   state -> the large scores that similarity returns, and the inputs, unchanged (a softmax shifted in place)
#   gradient -> gradients of both results reach queries, keys and values as torch's pooling's do (.detach())
#   type -> the result is a pair of tensors (an answer that returns the output alone)
#   edge -> scores between 100 and 300 in float32 (exp overflows); a single query
#   symmetry -> a similarity that is not symmetric: similarity(keys, queries).T is not the same scores
#   train-eval -> n/a: a function without a module, dropout or mode
#   efficiency -> n/a: the contract promises no time or memory bound; the (Q, K) scores are the whole computation
import math as _math

import torch as _torch
from _shared import _device_probe  # the course's shared probes (the assembler inlines _shared.py)

_T = checks.trusted
_g = _T.Generator().manual_seed(1101)
_q = _T.randn(4, 3, generator=_g, dtype=_T.float64)
_k = _T.randn(6, 3, generator=_g, dtype=_T.float64)
_v = _T.randn(6, 5, generator=_g, dtype=_T.float64)
_W = _T.randn(3, 3, generator=_g, dtype=_T.float64)


def _sim(a, b):
    return a @ _W @ b.T  # a similarity that is not symmetric in queries and keys


_scores = _sim(_q, _k).tolist()
_w_ref, _o_ref = [], []
for _row in _scores:
    _m = max(_row)
    _e = [_math.exp(s - _m) for s in _row]
    _w_ref.append([e / sum(_e) for e in _e])
_vals = _v.tolist()
_o_ref = [[sum(w * _vals[j][c] for j, w in enumerate(_wr)) for c in range(5)] for _wr in _w_ref]
_inputs = [_t.tolist() for _t in (_q, _k, _v)]
_res = attention_pooling(_q, _k, _v, _sim)
checks.check_true(
    isinstance(_res, (tuple, list)) and len(_res) == 2,
    f"attention_pooling returns the pair (output, weights) (hidden); it returned a {type(_res).__name__}",
    hint="return both: weights @ values, weights",
)
_out, _w = _res
checks.check_true(
    getattr(_out, "dtype", None) == _T.float64 and getattr(_w, "dtype", None) == _T.float64,
    f"float64 inputs give float64 output and weights (hidden); got {getattr(_out, 'dtype', _out)} and "
    f"{getattr(_w, 'dtype', _w)}",
    hint="compute in the inputs' dtype: no .float(), no dtype=torch.float32 in the softmax",
)
checks.check_close(_w, _T.tensor(_w_ref, dtype=_T.float64), "weights (hidden, 4 queries x 6 keys)", atol=1e-9, rtol=0)
checks.check_close(_out, _T.tensor(_o_ref, dtype=_T.float64), "output (hidden, values of size 5)", atol=1e-9, rtol=0)
_out1, _w1 = attention_pooling(_q[:1], _k, _v, _sim)
checks.check_shape(_out1, (1, 5), "output for a single query")
checks.check_close(_w1, _T.tensor(_w_ref[:1], dtype=_T.float64), "weights for a single query", atol=1e-9, rtol=0)
# Large scores, float32: a similarity whose scores lie between 100 and 300 (exp overflows float32 past about 88), so a
# softmax written as exp(scores) / sum(exp(scores)) gives inf / inf = NaN; torch's softmax subtracts each row's maximum.
_big = 100 + 200 * _T.rand(3, 6, generator=_g, dtype=_T.float32)  # (Q, K) scores in [100, 300]
_big_before = _big.tolist()


def _big_sim(a, b):
    return _big  # the same large scores whatever the queries and keys


_vb = _v.to(_T.float32)
_out_b, _w_b = attention_pooling(_q[:3].to(_T.float32), _k.to(_T.float32), _vb, _big_sim)
_w_b_ref = _T.softmax(_big, dim=-1)
_hint_b = "scores above 88 overflow exp in float32: use torch.softmax, which subtracts each row's maximum first"
checks.check_close(_w_b, _w_b_ref, "weights for scores between 100 and 300 (float32)", atol=1e-6, hint=_hint_b)
checks.check_close(_out_b, _T.matmul(_w_b_ref, _vb), "output for scores between 100 and 300", atol=1e-5, hint=_hint_b)
checks.check_true(
    _big.tolist() == _big_before and [_t.tolist() for _t in (_q, _k, _v)] == _inputs,
    "the scores that similarity returned, and the queries, keys and values, are unchanged after the calls (hidden)",
    hint="do not shift the scores in place (scores -= ...): write shifted = scores - scores.max(...), or use "
    "torch.softmax",
)

# Devices: every tensor the answer makes must be on the inputs' device (_common.py: _device_probe).
_Wm = _W.to("meta")
_err = _device_probe(
    lambda: attention_pooling(_q, _k, _v, _sim),
    lambda: attention_pooling(*(_t.to("meta") for _t in (_q, _k, _v)), lambda a, b: a @ _Wm @ b.T),
    "attention_pooling",
)
checks.check_true(
    _err is None,
    f"the output and weights are made on the inputs' device (hidden): {_err}",
    hint="make every new tensor on the inputs' device (torch.zeros(..., device=values.device), or values.new_zeros)",
)

# Gradients: the weights are differentiable in the queries and keys, the output in all three; both must carry the
# same gradients as torch's own pooling of the same scores.
_R_out = _T.randn(4, 5, generator=_g, dtype=_T.float64)
_R_w = _T.randn(4, 6, generator=_g, dtype=_T.float64)


def _grads(pool):
    leaves = [_t.clone().requires_grad_() for _t in (_q, _k, _v)]
    out, w = pool(*leaves)
    if not (out.requires_grad and w.requires_grad):
        return None
    loss = (out * _R_out).sum() + (w * _R_w).sum()
    try:
        return _torch.autograd.grad(loss, leaves, allow_unused=True)
    except RuntimeError as err:  # e.g. a tensor autograd needs was modified in place
        checks.check_true(
            False,
            f"backpropagating through attention_pooling failed (hidden): {str(err).splitlines()[0]}",
            hint="no in-place operation (x /= ..., x -= ..., exp_()) on a tensor the gradient needs: write y = x / ...",
        )


def _torch_pool(q, k, v):
    w = _T.softmax(_sim(q, k), dim=-1)
    return _T.matmul(w, v), w


_got = _grads(lambda q, k, v: attention_pooling(q, k, v, _sim))
_hint_g = "compute with torch operations on the inputs, without .detach(), torch.no_grad() or .tolist()"
checks.check_true(
    _got is not None,
    "the output and the weights of inputs that require grad carry a gradient (hidden)",
    hint=_hint_g,
)
for _name, _gr, _ref in zip(("queries", "keys", "values"), _got, _grads(_torch_pool)):
    checks.check_true(_gr is not None, f"the gradient reaches the {_name} (hidden)", hint=_hint_g)
    checks.check_close(_gr, _ref, f"the gradient of the {_name} (hidden, float64)", atol=1e-9, hint=_hint_g)
