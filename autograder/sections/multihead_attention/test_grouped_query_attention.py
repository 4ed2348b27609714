# Hidden: float64, grouped (H = 4, G = 2), multi-query (G = 1) and multi-head (G = H) shapes, no mask, lengths per
# example and per query, huge scores; references by explicit loops over examples and query heads (query head i with
# key/value head i // (H / G)); the number of matrix products independent of H and G; nothing that ties it to the
# CPU; the inputs left as they were, and the gradients of all three against autograd through a reference built of
# trusted torch functions; neither the reference nor PyTorch's fused attention called.
# Contract: the page's sentences each check relies on.
#   "queries (B, H, Q, h), keys (B, G, K, h), values (B, G, K, v), with H a multiple of G:" -> grouped, MQA, MHA shapes
#   "query head i attends with key/value head i // (H / G)." -> outputs against loops over the query heads
#   "valid_lens None, lengths (B,) or (B, Q), the same for every head;" -> no mask, per example, per query
#   "mask with att.masked_softmax. Scores scaled by sqrt(h)." -> the loops' masking and scale; huge scores
#   "No Python loop over heads or groups;" -> products counted for three (H, G)
#   "no call to ref.grouped_query_attention or to F.scaled_dot_product_attention." -> both forbidden
#   "every tensor stays there (no value read out with .tolist() or .item()," -> no reads into Python
#   "no new tensor made without device=)" -> no tensor made without device=
#   "(gradients reach queries, keys and values)" -> the gradients against autograd through a reference
#   "changes none of its inputs." -> the queries, keys, values and lengths unchanged after a call
# Classes: each kind of mistake, and the check that catches it.
#   value -> outputs against loops over the query heads (no_scaling, lengths_interleaved)
#   dtype -> float64 outputs to 1e-10 (float32_softmax)
#   device -> nothing read into Python, no tensor made without device= (lengths_via_python)
#   pass-through -> the lengths reach the softmax: lengths per example and per query (ignores_valid_lens)
#   state -> the caller's queries, keys, values and lengths unchanged after a call (scales_queries_in_place)
#   gradient -> the gradients of the queries, keys and values against autograd through a reference (repeat_without_grad)
#   type -> the output must be one (B, H, Q, v) tensor (returns_weights_too)
#   edge -> valid_lens None, (B,) and (B, Q); G = 1 (multi-query) and G = H (multi-head) (no_mask_crashes)
#   symmetry -> H / G > 1 and G > 1, so that head i // (H / G) and head i mod G differ (tiled_kv_heads)
#   train-eval -> n/a: no dropout, no mode
#   efficiency -> the number of matrix products independent of H and G (loop_over_heads)
import torch.nn.functional as _F
from _common import (  # the section's shared helpers (the assembler inlines _common.py)
    _T,
    _attend_ref,
    _CountProducts,
    _f64,
    _HostProbe,
    _lens_per_query,
    _math,
    _qm,
)


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
    # The inputs are the caller's: none may change (an in-place scaling of the queries changes the caller's
    # tensor). Then the gradients, since the function is trained through: autograd through a reference of trusted
    # torch functions (key/value head i // r picked by indexing, the padding masked with -inf).
    _q = _T.randn(2, 4, 3, 5, generator=_g, dtype=_f64)  # (B, H, Q, h)
    _k = _T.randn(2, 2, 4, 5, generator=_g, dtype=_f64)  # (B, G, K, h)
    _vv = _T.randn(2, 2, 4, 3, generator=_g, dtype=_f64)  # (B, G, K, v)
    _lens = _T.tensor([[1, 4, 2], [3, 3, 4]])  # (B, Q)
    _inputs = {"queries": _q, "keys": _k, "values": _vv, "valid_lens": _lens}
    _kept = {_name: _x.clone() for _name, _x in _inputs.items()}
    grouped_query_attention(_q, _k, _vv, _lens)
    for _name, _x in _inputs.items():
        checks.check_close(
            _x,
            _kept[_name],
            f"the caller's {_name} after a call (hidden: they must be left as they were)",
            atol=0,
            rtol=0,
            hint="make new tensors (scores = queries @ ... / math.sqrt(h)); an in-place operation such as "
            "queries /= ... changes the caller's tensor",
        )
    _leaves = [_x.clone().requires_grad_() for _x in (_q, _k, _vv)]
    _Gout = _T.randn(2, 4, 3, 3, generator=_g, dtype=_f64)  # (B, H, Q, v)
    _out = grouped_query_attention(*_leaves, _lens)
    checks.check_shape(_out, (2, 4, 3, 3), "output (hidden, H = 4, G = 2, lengths per query)", hint="(B, H, Q, v)")
    (_out * _Gout).sum().backward()
    _ref_leaves = [_x.clone().requires_grad_() for _x in (_q, _k, _vv)]
    _rq, _rk, _rv = _ref_leaves
    _pick = [i // 2 for i in range(4)]  # key/value head of each query head
    _s = _T.matmul(_rq, _rk[:, _pick].transpose(-1, -2)) / _math.sqrt(5)  # (B, H, Q, K)
    _keep = _T.tensor([[[j < n for j in range(4)] for n in row] for row in _lens.tolist()])  # (B, Q, K)
    _s = _T.where(_keep[:, None], _s, _T.tensor(float("-inf"), dtype=_f64))
    (_T.matmul(_T.softmax(_s, dim=-1), _rv[:, _pick]) * _Gout).sum().backward()
    for _name, _mine, _theirs in zip(("queries", "keys", "values"), _leaves, _ref_leaves):
        checks.check_true(
            _mine.grad is not None,
            f"a gradient reaches the {_name} (hidden: the function is trained through; none came back)",
            hint="compute everything from the inputs with differentiable torch operations; no torch.no_grad(), "
            ".detach() or .data on the way",
        )
        checks.check_close(
            _mine.grad,
            _theirs.grad,
            f"the gradient of the {_name} (hidden, float64, H = 4, G = 2)",
            atol=1e-10,
            rtol=0,
            hint="each key/value head gets the gradients of all the query heads of its group: repeat_interleave "
            "passes them back",
        )

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
