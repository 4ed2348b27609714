# Hidden: T = 7, B = 4 with a zero and a full length, against masks built by loops; bool dtype; no call to qkv's
# masks; the masks follow valid_lens to its device ('meta': nothing is computed, no value is read).
# Contract: the page's sentences each check relies on.
#   "Returns a bool tensor, True where query i (row) may attend to key j (column):" -> the bool dtype, rows queries
#   "(T, T) all True without valid_lens; else (B, T, T) with" -> bidirectional_mask(7), with lengths [0, 7, 3, 5]
#   "mask[b, i, j] = j < valid_lens[b], on valid_lens' device." -> its entries; the 'meta' device check
#   "(T, T) with mask[i, j] = j <= i, or (B, T, T) with" -> causal_mask(7), with lengths
#   "mask[b, i, j] = j <= i and j < valid_lens[b], on valid_lens' device." -> its entries; the 'meta' device check
#   "the grader refuses an answer that calls the course's own version of it" -> qkv.pretraining's masks not called
# Classes: each kind of mistake, and the check that catches it.
#   value -> every entry of both masks against masks built by loops (T = 7)
#   dtype -> both masks are bool tensors (not 0/1 floats, which ~mask and masked_fill misread)
#   device -> lengths on 'meta': both masks follow valid_lens to its device
#   pass-through -> valid_lens: with lengths [0, 7, 3, 5] causal_mask hides the padding keys too
#   state -> n/a: the masks are new tensors made from T and valid_lens; there is nothing to keep or change
#   gradient -> n/a: boolean masks; nothing is trained through them
#   type -> n/a: the outputs are tensors; their dtype is the dtype class
#   edge -> a length of 0 (no key seen) and a length of T (every key)
#   symmetry -> rows are queries, columns keys: a transposed causal mask, or padding on the queries, differs
#   train-eval -> n/a: functions with no training behaviour
#   efficiency -> n/a: the contract promises no time or memory beyond the (B, T, T) masks
from _common import _T, _is_tensor, _loop_mask, _qp  # the section's shared helpers (the assembler inlines _common.py)

_Tn, _lens = 7, [0, 7, 3, 5]
_L = _T.tensor(_lens)  # (B,)
with checks.forbid_reference(bidirectional_mask, (_qp, "bidirectional_mask"), (_qp, "causal_mask")):
    with checks.forbid_reference(causal_mask, (_qp, "bidirectional_mask"), (_qp, "causal_mask")):
        _bi, _ca = bidirectional_mask(_Tn), causal_mask(_Tn)
        _bi_l, _ca_l = bidirectional_mask(_Tn, _L), causal_mask(_Tn, _L)
for _name, _x in [
    ("bidirectional_mask(7)", _bi),
    ("causal_mask(7)", _ca),
    ("bidirectional_mask(7, valid_lens)", _bi_l),
    ("causal_mask(7, valid_lens)", _ca_l),
]:
    _is_tensor(_x, f"{_name} (hidden)", (_T.bool,), "return the comparison itself, a bool tensor")
checks.check_close(
    _ca,
    _loop_mask(_Tn, _Tn, lambda i, j: j <= i),
    "causal_mask(7) (hidden)",
    hint="mask[i, j] = j <= i: rows are queries, the diagonal included",
)
checks.check_close(_bi, _loop_mask(_Tn, _Tn, lambda i, j: True), "bidirectional_mask(7) (hidden)")
_want_bi = _T.stack([_loop_mask(_Tn, _Tn, lambda i, j, L=L: j < L) for L in _lens])  # (B, T, T)
_want_ca = _T.stack([_loop_mask(_Tn, _Tn, lambda i, j, L=L: j <= i and j < L) for L in _lens])  # (B, T, T)
checks.check_close(
    _bi_l,
    _want_bi,
    "bidirectional_mask(7, [0, 7, 3, 5]) (hidden)",
    hint="keys (columns) at or past the length are masked for every query",
)
checks.check_close(_ca_l, _want_ca, "causal_mask(7, [0, 7, 3, 5]) (hidden)", hint="j <= i and j < valid_lens[b]")
_meta = _T.tensor(_lens).to("meta")
for _name, _fn in [("bidirectional_mask", bidirectional_mask), ("causal_mask", causal_mask)]:
    _dev = _fn(_Tn, _meta).device.type
    checks.check_true(
        _dev == "meta",
        f"{_name}(T, valid_lens on 'meta') is on 'meta' (got {_dev!r}; hidden)",
        hint="make every tensor on valid_lens.device",
    )
