# Hidden: float64, d = 3 and v = 2, keys of very different norms, no mask, lengths per example and per query;
# references from explicit squared distances, softmax(-||q - k||^2 / (2 sqrt(d))); in training mode dropout acts on the
# weights.
# (Runs in the notebook, after its visible test: checks and the answers are defined there.)
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
    _W, _O = _attend_ref(_q.tolist(), _k.tolist(), _v.tolist(), _lens, _distance)
    checks.check_close(
        _layer.attention_weights,
        _T.tensor(_W, dtype=_f64),
        f"attention_weights (hidden, float64, d = 3, {_name})",
        atol=1e-12,
        rtol=0,
        hint="scores (q.k - ||k||^2 / 2) / sqrt(d) with d = queries.shape[-1], masked with ref.masked_softmax",
    )
    checks.check_close(_out, _T.tensor(_O, dtype=_f64), f"output (hidden, float64, {_name})", atol=1e-12, rtol=0)
_check_dropout_on_weights(
    DistanceAttention(0.5), _T.randn(1, 64, 2, generator=_g, dtype=_f64), _T.zeros(1, 3, 2, dtype=_f64), 0.5
)
