# Hidden: T = 2, 7, 13, 33 and 100 (n = 1, 1, 2, 5, 15 noise tokens; S = 1, 1, 1, 2, 5 spans), 200 draws each:
# exactly n noise tokens in exactly S separate spans every time; for T = 100 every position is noise in some draw,
# the span lengths vary, and the mean span length is n / S; the generator alone decides the result.
for _Tn, _n, _S in [(2, 1, 1), (7, 1, 1), (13, 2, 1), (33, 5, 2), (100, 15, 5)]:
    _g = _T.Generator().manual_seed(_Tn)
    _hits = [0] * _Tn
    _lengths = set()
    with checks.forbid_reference(span_noise, (_qc, "corrupt_spans"), (_qc, "_composition")):
        _draws = [span_noise(_Tn, generator=_g) for _ in range(200)]
    for _d in _draws:
        _is_tensor(_d, f"span_noise({_Tn}) (hidden)", (_T.bool,), "a bool tensor")
        checks.check_shape(_d, (_Tn,), f"span_noise({_Tn}) (hidden)")
        _f = _d.tolist()
        checks.check_true(
            sum(_f) == _n,
            f"span_noise({_Tn}) has {_n} noise tokens (got {sum(_f)}; hidden)",
            hint="n = min(max(round(0.15 * T), 1), T - 1)",
        )
        checks.check_true(
            _runs(_f) == _S,
            f"span_noise({_Tn}) has {_S} separate spans (got {_runs(_f)}; hidden)",
            hint="S = max(round(n / 3), 1) spans that neither overlap nor touch",
        )
        for _t, _x in enumerate(_f):
            _hits[_t] += _x
        _run = 0
        for _x in _f + [False]:
            if _x:
                _run += 1
            elif _run:
                _lengths.add(_run)
                _run = 0
    if _Tn == 100:
        checks.check_true(
            min(_hits) > 0,
            "every position of T = 100 is noise in some of 200 draws (hidden)",
            hint="place the spans at random over the whole sequence, ends included",
        )
        checks.check_true(
            len(_lengths) >= 3,
            f"span lengths vary (got {sorted(_lengths)}; hidden)",
            hint="split n into S random positive lengths",
        )
_a = span_noise(100, generator=_T.Generator().manual_seed(5))
_b = span_noise(100, generator=_T.Generator().manual_seed(5))
checks.check_true(
    bool((_a == _b).all()),
    "the same generator state gives the same spans (hidden)",
    hint="draw with generator=generator",
)
