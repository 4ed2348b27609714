# Hidden: float64, d = 3 and v = 2, keys of very different norms, no mask, lengths per example and per query;
# references from explicit squared distances, softmax(-||q - k||^2 / (2 sqrt(d))); in training mode dropout acts on the
# weights.
# (Runs in the notebook, after its visible test: checks and the answers are defined there.)
import math as _math

_T = checks.trusted
_f64 = _T.float64


def _attend_ref(q, k, v, lens, score):
    """Weights and output of masked attention by explicit loops over nested lists q[b][i], k[b][j], v[b][j];
    query i of example b sees the first lens[b][i] keys."""
    weights, output = [], []
    for b in range(len(q)):
        w_b, o_b = [], []
        for i, qi in enumerate(q[b]):
            n, m = lens[b][i], len(k[b])
            s = [score(qi, kj) for kj in k[b][:n]]
            top = max(s)
            e = [_math.exp(x - top) for x in s]
            w = [x / sum(e) for x in e] + [0.0] * (m - n)
            w_b.append(w)
            o_b.append([sum(w[j] * v[b][j][c] for j in range(m)) for c in range(len(v[b][0]))])
        weights.append(w_b)
        output.append(o_b)
    return weights, output


def _check_dropout_on_weights(layer, queries, equal_keys, p):
    """Dropout must act on the weights. Equal keys give every query the weights 1/3, 1/3, 1/3, and the values 1, 10
    and 100 make each output tell which weights survived: (a + 10 b + 100 c) / (3 (1 - p)) with a, b, c in {0, 1}.
    Dropout on the output instead gives only 0 or 111 / (3 (1 - p)); no dropout gives 37."""
    values = _T.tensor([[[1.0], [10.0], [100.0]]], dtype=_f64)  # (1, K, 1)
    layer.train()
    _T.manual_seed(1139)
    out = layer(queries, equal_keys, values)
    checks.check_shape(out, (1, 64, 1), "output in training mode (hidden, 64 queries, 3 equal keys)")
    checks.check_close(
        layer.attention_weights,
        _T.ones(1, 64, 3, dtype=_f64) / 3,
        "attention_weights in training mode, with 3 equal keys",
        atol=1e-12,
        rtol=0,
        hint="store the weights as they are before dropout",
    )
    allowed = [(a + 10 * b + 100 * c) / (3 * (1 - p)) for a in (0, 1) for b in (0, 1) for c in (0, 1)]
    got = [row[0] for row in out[0].tolist()]
    checks.check_true(
        all(min(abs(g - x) for x in allowed) < 1e-9 for g in got),
        "in training mode, each output is the values weighted by dropped-out weights (w / (1 - p) or 0)",
        hint="apply self.dropout (nn.Dropout) to the attention weights, then multiply by the values",
    )
    checks.check_true(
        len({round(g, 6) for g in got}) > 2,
        "in training mode, dropout zeroes single weights, not whole outputs",
        hint="apply self.dropout to the attention weights, not to the output",
    )
    layer.eval()


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
