# Shared by the hidden tests of this section's attention exercises; the assembler puts it in front of each of them
# (autograder/assemble.py: hidden_tests), so every hidden block stays self-contained in its notebook cell.
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
