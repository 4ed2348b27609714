# Hidden: float64, grouped (H = 4, G = 2), multi-query (G = 1) and multi-head (G = H) shapes, no mask, lengths per
# example and per query, huge scores; references by explicit loops over examples and query heads (query head i with
# key/value head i // (H / G)); the number of matrix products independent of H and G; nothing that ties it to the
# CPU; neither the reference nor PyTorch's fused attention called.
# Contract: the page's sentences each check relies on.
#   "queries (B, H, Q, h), keys (B, G, K, h), values (B, G, K, v), with H a multiple of G:" -> grouped, MQA, MHA shapes
#   "query head i attends with key/value head i // (H / G)." -> outputs against loops over the query heads
#   "valid_lens None, lengths (B,) or (B, Q), the same for every head;" -> no mask, per example, per query
#   "mask with att.masked_softmax. Scores scaled by sqrt(h)." -> the loops' masking and scale; huge scores
#   "No Python loop over heads or groups;" -> products counted for three (H, G)
#   "no call to ref.grouped_query_attention or to F.scaled_dot_product_attention." -> both forbidden
#   "every tensor stays there (no value read out with .tolist() or .item()," -> no reads into Python
#   "no new tensor made without device=)" -> no tensor made without device=
import torch.nn.functional as _F


def _gqa_ref(q, k, v, lens):
    """(B, H, Q, v) by loops: query head i of example b attends with key/value head i // (H / G)."""
    B, H, G = q.shape[0], q.shape[1], k.shape[1]
    ql, kl, vl = q.tolist(), k.tolist(), v.tolist()
    out = [
        [_attend_ref(ql[b][i], kl[b][i // (H // G)], vl[b][i // (H // G)], lens[b])[1] for i in range(H)]
        for b in range(B)
    ]
    return _T.tensor(out, dtype=_f64)


_hint = (
    "query head i uses key/value head i // (H / G): keys.repeat_interleave(H // G, dim=1), not keys.repeat; "
    "scale by sqrt(h) and mask with att.masked_softmax"
)
_g = _T.Generator().manual_seed(1155)
_shapes = [
    ("grouped, H = 4, G = 2", 2, 4, 2, 3, 5, 3, 2),
    ("multi-query, H = 3, G = 1", 2, 3, 1, 2, 4, 2, 3),
    ("multi-head, H = G = 2", 3, 2, 2, 2, 3, 5, 1),
]
with checks.forbid_reference(
    grouped_query_attention, (_qm, "grouped_query_attention"), (_F, "scaled_dot_product_attention")
):
    for _label, _B, _H, _G, _Q, _K, _p, _v in _shapes:
        _q = _T.randn(_B, _H, _Q, _p, generator=_g, dtype=_f64)
        _k = _T.randn(_B, _G, _K, _p, generator=_g, dtype=_f64)
        _vv = _T.randn(_B, _G, _K, _v, generator=_g, dtype=_f64)
        _per_example = [1 + (3 * b) % _K for b in range(_B)]
        _per_query = [[1 + (b + 2 * i) % _K for i in range(_Q)] for b in range(_B)]
        for _name, _arg, _lens, _scale in [
            ("no mask", None, None, 1.0),
            (f"lengths per example {_per_example}", _T.tensor(_per_example), _per_example, 1.0),
            ("lengths per query", _T.tensor(_per_query), _per_query, 1.0),
            ("queries x 1000 (huge scores)", _T.tensor(_per_example), _per_example, 1000.0),
        ]:
            _out = grouped_query_attention(_q * _scale, _k, _vv, _arg)
            _what = f"output (hidden, float64, {_label}, {_name})"
            checks.check_shape(_out, (_B, _H, _Q, _v), _what, hint="(B, H, Q, v)")
            _expected = _gqa_ref(_q * _scale, _k, _vv, _lens_per_query(_lens, _B, _Q, _K))
            checks.check_close(_out, _expected, _what, atol=1e-10, rtol=0, hint=_hint)

    # No loop over heads or groups: the number of matrix products must not depend on H or G.
    _counts = {}
    for _H, _G in ((2, 1), (8, 1), (8, 4)):
        _q = _T.randn(2, _H, 3, 4, generator=_g, dtype=_f64)
        _k = _T.randn(2, _G, 5, 4, generator=_g, dtype=_f64)
        with _CountProducts() as _probe:
            grouped_query_attention(_q, _k, _k, _T.tensor([2, 5]))
        _counts[(_H, _G)] = _probe.count
    checks.check_true(
        len(set(_counts.values())) == 1,
        "the number of matrix products should not grow with the number of heads or groups; yours made "
        + ", ".join(f"{c} with H = {h}, G = {g}" for (h, g), c in _counts.items()),
        hint="give every query head its key/value head with repeat_interleave, then one product for the scores "
        "and one for the values over all heads at once (@ works on 4-dimensional tensors)",
    )

# Devices: nothing may tie the function to the CPU (see _HostProbe).
for _name, _lens in (
    ("lengths per example (B,)", _T.tensor([1, 4])),
    ("lengths per query (B, Q)", _T.tensor([[1, 2, 4], [4, 3, 2]])),
):
    _inputs = (
        _T.zeros(2, 6, 3, 5, dtype=_f64),
        _T.zeros(2, 2, 4, 5, dtype=_f64),
        _T.zeros(2, 2, 4, 7, dtype=_f64),
        _lens,
    )
    with _HostProbe() as _probe:
        grouped_query_attention(*_inputs)
    checks.check_true(
        not _probe.found,
        f"grouped_query_attention ({_name}) should keep every tensor on the inputs' device; it called "
        f"{', '.join(sorted(set(_probe.found)))}",
        hint="make every new tensor on the inputs' device and do not read lengths out into Python (.tolist(), .item())",
    )
