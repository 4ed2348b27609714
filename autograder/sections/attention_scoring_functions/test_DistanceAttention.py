# Hidden: float64, d = 3 and v = 2, keys of very different norms, no mask, lengths per example and per query;
# references from explicit squared distances, softmax(-||q - k||^2 / (2 sqrt(d))); in training mode dropout acts on the
# weights; and no tensor of the size of the (B, Q, K, d) differences q - k is ever made.
# (Runs in the notebook, after its visible test: checks and the answers are defined there.)
# Contract: the page's sentences each check relies on.
#   "The weights are softmax(-||q - k||^2 / (2 sqrt(d))) over the valid keys." -> against loops; d = 3, long keys
#   "valid_lens as in masked_softmax; mask with ref.masked_softmax." -> no mask, lengths per example and per query
#   "float64 inputs give float64 weights and output, to float64 precision" -> compared at 1e-6, then 1e-12
#   "weights (B, Q, K), before dropout, in self.attention_weights;" -> training mode: weights 1/3, 3 equal keys
#   "apply self.dropout to the weights and multiply by the values." -> training mode: outputs of dropped-out weights
#   "It never forms the (B, Q, K, d) differences q - k" -> the memory probe, 40 queries, 48 keys, d = 128
#   "no tensor it makes is more than 4 times the size of the largest of" -> the probe's bound, with:
#   "the queries, the keys and the (B, Q, K) scores." -> the same probe
#   "forward(queries, keys, values, valid_lens=None):" -> a call without valid_lens
#   "Compute the scores (q.k - ||k||^2 / 2) / sqrt(d) with one bmm and the keys' squared" -> gradients against autograd
# Classes: each kind of mistake, and the check that catches it.
#   value -> weights and output against explicit squared distances (no half, no scaling, + ||k||^2 / 2)
#   dtype -> float64 output and weights at 1e-12 (sqrt(d) taken from a float32 tensor)
#   device -> n/a: the contract names no device, and forward needs no tensor of its own (ref.masked_softmax masks)
#   pass-through -> lengths per query reach the mask (valid_lens not passed on); dropout at 0.3, not the visible 0.5
#   state -> n/a: forward only reads its inputs (the key norms and dot products are new tensors)
#   gradient -> gradients of output and weights reach queries, keys and values (weights stored .detach()ed)
#   type -> n/a: forward returns one tensor and stores one, which check_close accepts only as exactly torch.Tensor
#   edge -> no mask, and a call without valid_lens (its default None)
#   symmetry -> keys of very different norms: the queries' norms in place of the keys' cancel in the softmax
#   train-eval -> eval mode: no dropout; training mode: dropout on the weights, not on the output
#   efficiency -> the memory probe: no tensor of the (B, Q, K, d) differences (q - k formed for every pair)
import torch.overrides as _ov
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


def _distance(qi, kj):
    return -sum((a - b) ** 2 for a, b in zip(qi, kj)) / (2 * _math.sqrt(len(qi)))


_g = _T.Generator().manual_seed(1135)
_q = _T.randn(2, 4, 3, generator=_g, dtype=_f64)
_k = _T.randn(2, 5, 3, generator=_g, dtype=_f64) * _T.tensor([0.2, 1.0, 3.0, 0.5, 2.0], dtype=_f64)[:, None]
_v = _T.randn(2, 5, 2, generator=_g, dtype=_f64)
_cases = [
    ("no mask", None, [[5] * 4] * 2),
    ("lengths per example [3, 5]", _T.tensor([3, 5]), [[3] * 4, [5] * 4]),
    ("lengths per query", _T.tensor([[1, 5, 2, 4], [3, 3, 5, 1]]), [[1, 5, 2, 4], [3, 3, 5, 1]]),
]
_layer = DistanceAttention(0.3)
_layer.eval()
for _name, _arg, _lens in _cases:
    _out = _layer(_q, _k, _v, _arg)
    checks.check_true(
        getattr(_out, "dtype", None) == _f64 and getattr(_layer.attention_weights, "dtype", None) == _f64,
        f"float64 inputs give float64 output and attention_weights (hidden, {_name})",
        hint="compute in the inputs' dtype: math.sqrt(d) or d ** 0.5, not torch.sqrt of a float32 tensor",
    )
    _W, _O = _attend_ref(_q.tolist(), _k.tolist(), _v.tolist(), _lens, _distance)
    checks.check_close(
        _layer.attention_weights,
        _T.tensor(_W, dtype=_f64),
        f"attention_weights (hidden, float64, d = 3, {_name})",
        atol=1e-6,
        rtol=0,
        hint="scores (q.k - ||k||^2 / 2) / sqrt(d) with d = queries.shape[-1], masked with ref.masked_softmax",
    )
    checks.check_close(
        _layer.attention_weights,
        _T.tensor(_W, dtype=_f64),
        f"attention_weights to float64 precision (hidden, d = 3, {_name})",
        atol=1e-12,
        rtol=0,
        hint="keep float64 inputs in float64: take sqrt(d) with math.sqrt or d ** 0.5, not from a float32 tensor",
    )
    checks.check_close(_out, _T.tensor(_O, dtype=_f64), f"output (hidden, float64, {_name})", atol=1e-12, rtol=0)
# valid_lens defaults to None: no mask.
_W, _O = _attend_ref(_q.tolist(), _k.tolist(), _v.tolist(), [[5] * 4] * 2, _distance)
checks.check_close(
    _layer(_q, _k, _v),
    _T.tensor(_O, dtype=_f64),
    "output of a call without valid_lens (hidden)",
    atol=1e-12,
    rtol=0,
    hint="keep the default valid_lens=None of the signature",
)
# Gradients: output and weights must carry the gradients of the same attention written with torch.
_lens_g = [[1, 5, 2, 4], [3, 3, 5, 1]]
_keep_g = _keep_of(_lens_g, 5)


def _distance_ref(q, k, v):
    scores = (_T.bmm(q, k.transpose(1, 2)) - 0.5 * (k * k).sum(dim=-1)[:, None, :]) / _math.sqrt(3)  # (B, Q, K)
    w = _masked_torch(scores, _keep_g)
    return _T.bmm(w, v), w


def _distance_call(q, k, v):
    out = _layer(q, k, v, _T.tensor(_lens_g))
    return out, _layer.attention_weights


_check_gradients("DistanceAttention", _distance_call, [_q, _k, _v], ["queries", "keys", "values"], _distance_ref)
_check_dropout_on_weights(
    DistanceAttention(0.3), _T.randn(1, 64, 2, generator=_g, dtype=_f64), _T.zeros(1, 3, 2, dtype=_f64), 0.3
)


# Memory: the exercise's point is one bmm plus the keys' squared norms, never the (B, Q, K, d) tensor of all the
# differences q - k. The probe records the storage of every tensor a torch function returns during one call (a
# TorchFunctionMode: deterministic and fast, where the profiler's first start alone takes seconds) and compares the
# largest with the inputs and the (B, Q, K) scores; with d = 128 the differences are 12 times the allowance.
_Tensor = type(_T.zeros(0))


class _LargestStorage(_ov.TorchFunctionMode):
    """While on, records the largest storage, in bytes, of any tensor a torch function returns."""

    def __init__(self):
        super().__init__()
        self.largest = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, tuple | list) else (out,):
            if isinstance(t, _Tensor):
                try:
                    self.largest = max(self.largest, t.untyped_storage().nbytes())
                except (RuntimeError, NotImplementedError):  # a tensor without storage (meta, sparse) allocates none
                    pass
        return out


_B, _Q, _K, _d = 2, 40, 48, 128
_qm = _T.randn(_B, _Q, _d, generator=_g, dtype=_f64)
_km = _T.randn(_B, _K, _d, generator=_g, dtype=_f64)
_vm = _T.randn(_B, _K, 3, generator=_g, dtype=_f64)
_allowed = 4 * 8 * max(_B * _Q * _K, _B * _Q * _d, _B * _K * _d)  # bytes: 4 x the largest input or (B, Q, K)
_layer = DistanceAttention(0.0)
_layer.eval()
with _LargestStorage() as _probe:
    _out = _layer(_qm, _km, _vm, _T.tensor([7, 48]))
checks.check_shape(_out, (_B, _Q, 3), "output (hidden, memory probe, 40 queries, 48 keys, d = 128)")
checks.check_true(
    _probe.largest <= _allowed,
    f"DistanceAttention with 40 queries, 48 keys and d = 128 made a tensor of {_probe.largest} bytes; one bmm and "
    f"the keys' squared norms need no tensor above {_allowed} bytes (the (B, Q, K, d) differences take "
    f"{8 * _B * _Q * _K * _d})",
    hint="do not form q - k for every pair of query and key: compute q.k with one torch.bmm and subtract half "
    "of each key's squared norm, (keys**2).sum(dim=-1)",
)
