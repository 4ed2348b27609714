# Hidden: float64 logits (B = 3, V = 11) at temperatures 0.3, 1 and 4 with top-k None, 1, 3 and 11, against the
# closed form computed per row with Python floats; logits of size 1e4 stay finite; float32 in, float32 out.
_g = _T.Generator().manual_seed(1109)
_lg = _T.randn(3, 11, generator=_g, dtype=_f64) * 2


def _ref_probs(row, tau, k):
    order = sorted(range(len(row)), key=lambda v: -row[v])
    keep = set(order if k is None else order[:k])
    m = max(row)
    w = [_math.exp((row[v] - m) / tau) if v in keep else 0.0 for v in range(len(row))]
    s = sum(w)
    return [x / s for x in w]


with checks.forbid_reference(sampling_distribution, (_ql, "next_token_distribution")):
    for _tau in (0.3, 1.0, 4.0):
        for _k in (None, 1, 3, 11):
            _want = _T.tensor([_ref_probs(r, _tau, _k) for r in _lg.tolist()], dtype=_f64)
            _got = sampling_distribution(_lg, _tau, _k)
            checks.check_close(
                _got,
                _want,
                f"probabilities (hidden, temperature {_tau}, top-k {_k})",
                atol=1e-9,
                rtol=1e-7,
                hint="softmax(logits / temperature) over exactly the k largest logits",
            )
    _big = sampling_distribution(_lg * 1e4, 0.5, 3)
    checks.check_close(
        _big.sum(dim=-1),
        _T.ones(3, dtype=_f64),
        "rows of logits of size 1e4 (hidden)",
        hint="use torch.softmax, which subtracts the maximum",
    )
    _f32 = sampling_distribution(_lg.float(), 1.0, 2)
    _is_tensor(_f32, "sampling_distribution of float32 logits (hidden)", (_T.float32,), "keep the logits' dtype")
