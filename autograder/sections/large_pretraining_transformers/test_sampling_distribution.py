# Hidden: float64 logits (B = 3, V = 11) at temperatures 0.3, 1 and 4 with top-k None, 1, 3 and 11, against the
# closed form computed per row with Python floats; rows with ties at the k-th largest logit, which keep every tied
# token; logits of size 1e4 stay finite; float32 in, float32 out.
# Contract: the page's sentences each check relies on.
#   "Returns probabilities (B, V) in logits' dtype: softmax(logits / temperature)" -> closed form; float32 stays
#   "over the logits of each row that are at least its top_k-th largest (all if" -> top-k None, 1, 3, 11
#   "Ties with the top_k-th largest are all kept, so a row may keep more than top_k tokens." -> the rows with ties
#   "Finite for logits of any size." -> logits of size 1e4
#   "the grader refuses an answer that calls the course's own version of it" -> next_token_distribution not called
_g = _T.Generator().manual_seed(1109)
_lg = _T.randn(3, 11, generator=_g, dtype=_f64) * 2


def _ref_probs(row, tau, k):
    kth = sorted(row, reverse=True)[len(row) - 1 if k is None else k - 1]  # the k-th largest logit
    keep = {v for v in range(len(row)) if row[v] >= kth}  # ties with the k-th largest are all kept
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
                hint="softmax(logits / temperature) over the logits at least the k-th largest",
            )
    # ties at the k-th largest: top-2 of [1, 3, 2, 2, 0] keeps 3 tokens, top-2 of [0.5, 0.5, 0.5, -1, 2] keeps 4
    _ties = _T.tensor([[1.0, 3.0, 2.0, 2.0, 0.0], [0.5, 0.5, 0.5, -1.0, 2.0]], dtype=_f64)
    _got = sampling_distribution(_ties, 0.7, 2)
    checks.check_close(
        (_got > 0).sum(dim=-1),
        _T.tensor([3, 4]),
        "tokens kept by top-2 when logits tie with the 2nd largest (hidden)",
        hint="keep every logit >= the k-th largest: a tie is kept whole (masked_fill where scaled < kth)",
    )
    checks.check_close(
        _got,
        _T.tensor([_ref_probs(r, 0.7, 2) for r in _ties.tolist()], dtype=_f64),
        "probabilities with ties at the 2nd largest logit (hidden)",
        atol=1e-9,
        rtol=1e-7,
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
