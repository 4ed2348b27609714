# Hidden: float64 logits (B = 3, V = 11) at temperatures 0.3, 1 and 4 with top-k None, 1, 3 and 11, against the
# closed form computed per row with Python floats; rows with ties at the k-th largest logit, which keep every tied
# token; logits of size 1e4 stay finite; float32 in, float32 out.
# Contract: the page's sentences each check relies on.
#   "Returns probabilities (B, V) in logits' dtype and on its device:" -> float32, float64, float16; 'meta' default
#   "softmax(logits / temperature) over the logits of each row" -> closed form
#   "The logits are left unchanged." -> logits compared with a copy after a call
#   "over the logits of each row that are at least its top_k-th largest (all if" -> top-k None, 1, 3, 11
#   "Ties with the top_k-th largest are all kept, so a row may keep more than top_k tokens." -> the rows with ties
#   "Finite for logits of any size." -> logits of size 1e4
#   "the grader refuses an answer that calls the course's own version of it" -> next_token_distribution not called
# Classes: each kind of mistake, and the check that catches it.
#   value -> closed forms per row at three temperatures and four values of top-k
#   dtype -> float32 in, float32 out; float64 stays float64; float16 in, float16 out
#   device -> 'meta' as the default device around CPU logits: a fill or mask tensor made without device= fails
#   pass-through -> temperature together with top-k (tau 0.3 and 4 with k = 3): both must act
#   state -> the logits are unchanged after a call (no in-place division)
#   gradient -> n/a: the distribution is sampled from; nothing is trained through it
#   type -> n/a: one tensor, checked by shape and dtype
#   edge -> top-k 1 and V; ties at the k-th largest logit; logits of size 1e4; 0, -200, -210 at temperature 100
#   symmetry -> B = 3 rows and V = 11 tokens, all different: a softmax over the batch axis differs
#   train-eval -> n/a: a function with no training behaviour
#   efficiency -> n/a: the contract promises no time or memory
from _common import _T, _f64, _is_tensor, _math, _ql  # the section's shared helpers (the assembler inlines _common.py)

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
    _kept = _lg.clone()
    sampling_distribution(_lg, 0.5, 3)
    checks.check_close(
        _lg,
        _kept,
        "the logits after a call (hidden): they are left unchanged",
        atol=0,
        rtol=0,
        hint="scaled = logits / temperature makes a new tensor; logits /= temperature or div_ changes the caller's",
    )
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
    # A high temperature brings far-apart logits close: float32 logits 0, -200, -210 at temperature 100 are the
    # logits 0, -2, -2.1. Raising probabilities to the power 1 / temperature is the same in exact arithmetic, but
    # exp(-200) is 0 in float32, and so is its power: the division must come before the softmax.
    _far = sampling_distribution(_T.tensor([[0.0, -200.0, -210.0]]), 100.0, None)
    checks.check_close(
        _far.double(),
        _T.tensor([_ref_probs([0.0, -2.0, -2.1], 1.0, None)], dtype=_f64),
        "float32 logits 0, -200, -210 at temperature 100 (hidden)",
        atol=1e-6,
        rtol=1e-5,
        hint="divide the logits by the temperature, then take the softmax; softmax(logits) ** (1 / temperature) "
        "loses every probability that underflowed",
    )
    _f32 = sampling_distribution(_lg.float(), 1.0, 2)
    _is_tensor(_f32, "sampling_distribution of float32 logits (hidden)", (_T.float32,), "keep the logits' dtype")
    _got = sampling_distribution(_lg, 1.0, None)
    _is_tensor(_got, "sampling_distribution of float64 logits (hidden)", (_f64,), "keep the logits' dtype: no .float()")
    try:
        _h, _err = sampling_distribution(_lg.half(), 0.7, 3), None
    except Exception as _e:  # report what the student's code raised, in one line
        _h, _err = None, f"{type(_e).__name__}: {str(_e).splitlines()[0][:100] if str(_e) else ''}"
    checks.check_true(
        _err is None,
        f"sampling_distribution of float16 logits runs (hidden; got {_err})",
        hint="fill the cut logits with float('-inf'), which every floating dtype holds (-1e9 does not fit in float16)",
    )
    _is_tensor(_h, "sampling_distribution of float16 logits (hidden)", (torch.float16,), "keep the logits' dtype")
    checks.check_close(
        _h,
        _T.tensor([_ref_probs(r, 0.7, 3) for r in _lg.half().double().tolist()], dtype=_f64),
        "probabilities of float16 logits (hidden, temperature 0.7, top-k 3)",
        atol=5e-3,
        rtol=0,
    )
    with torch.device("meta"):  # new tensors default to 'meta' around CPU logits
        try:
            _dev = str(sampling_distribution(_lg, 0.7, 3).device)
        except Exception as _e:  # report what the student's code raised, in one line
            _dev = f"an error ({type(_e).__name__})"
    checks.check_true(
        _dev == "cpu",
        f"with 'meta' as the default device, CPU logits give CPU probabilities (hidden; got {_dev})",
        hint="make no new tensor without device=: masked_fill(scaled < kth, float('-inf')) needs none",
    )
