# Hidden: 40 random noise patterns (any spans, at either end, long and short) over T = 1 to 30 with arbitrary
# sentinel ids, against a reference that walks the tokens; one more sentinel given than needed.
# Contract: the page's sentences each check relies on.
#   "noise: bool (T,), True at the tokens to cut (runs of True are the spans);" -> 40 random patterns, T = 1 to 30
#   "sentinel_ids: a list of at least m + 1 ids, m the number of spans." -> one more sentinel given than needed
#   "Returns (inputs, targets), long tensors:" -> long dtypes
#   "inputs the tokens with span k replaced by sentinel_ids[k] (T - n + m,);" -> inputs against the walk
#   "targets sentinel_ids[k] followed by span k's tokens for each k, then" -> targets against the walk
#   "sentinel_ids[m] (n + m + 1,), n = noise.sum()." -> targets against the walk
#   "The arguments are left unchanged." -> sentinel_ids compared with a copy after each call
#   "the grader refuses an answer that calls the course's own version of it" -> corrupt_spans not called
# Classes: each kind of mistake, and the check that catches it.
#   value -> inputs and targets against a walk over the tokens, 40 random patterns
#   dtype -> both are long tensors (int32 ids are not)
#   device -> n/a: the contract names no device (a list of ids and CPU tensors)
#   pass-through -> sentinel_ids: arbitrary ids, one more than needed; span k gets sentinel_ids[k]
#   state -> sentinel_ids, a list, is unchanged after the call (no pop)
#   gradient -> n/a: token ids; nothing is trained through them
#   type -> inputs and targets are tensors, not lists
#   edge -> spans at either end, T from 1 to 30, patterns without any span
#   symmetry -> n/a: the sentinels differ from every token id, and no two roles have the same size to confuse
#   train-eval -> n/a: a function with no training behaviour
#   efficiency -> n/a: the contract promises no time or memory
from _common import _T, _is_tensor, _qc, _runs  # the section's shared helpers (the assembler inlines _common.py)

_g = _T.Generator().manual_seed(911)


def _ref_example(tokens, noise, sentinels):
    inp, tgt, k = [], [], 0
    for t, (x, z) in enumerate(zip(tokens, noise)):
        if z and (t == 0 or not noise[t - 1]):
            inp.append(sentinels[k])
            tgt.append(sentinels[k])
            k += 1
        (tgt if z else inp).append(x)
    return inp, tgt + [sentinels[k]]


with checks.forbid_reference(spans_to_example, (_qc, "corrupt_spans")):
    for _case in range(40):
        _Tn = int(_T.randint(1, 31, (1,), generator=_g))
        _tok = _T.randint(0, 500, (_Tn,), generator=_g)
        _noise = _T.rand(_Tn, generator=_g) < float(_T.rand(1, generator=_g)) * 0.8
        _S = _runs(_noise.tolist())
        _sent = (_T.rand(50, generator=_g).argsort()[: _S + 2] + 1000).tolist()
        _wi, _wt = _ref_example(_tok.tolist(), _noise.tolist(), _sent)
        _kept = list(_sent)
        _gi, _gt = spans_to_example(_tok, _noise, _sent)
        checks.check_true(
            _sent == _kept,
            f"sentinel_ids is unchanged after the call (hidden; it became {_sent[:6]}, was {_kept[:6]})",
            hint="read sentinel_ids[k] with a counter k; do not pop or remove from the list",
        )
        _is_tensor(_gi, "inputs (hidden)", (_T.long,), "long tensors")
        _is_tensor(_gt, "targets (hidden)", (_T.long,), "long tensors")
        _what = f"(hidden, T = {_Tn}, {_S} spans, noise at {_noise.nonzero().flatten().tolist()})"
        checks.check_close(
            _gi,
            _T.tensor(_wi),
            f"inputs {_what}",
            atol=0,
            rtol=0,
            hint="one sentinel per span, sentinel_ids[k] for span k",
        )
        checks.check_close(
            _gt,
            _T.tensor(_wt),
            f"targets {_what}",
            atol=0,
            rtol=0,
            hint="sentinel k then span k's tokens, for each k; then sentinel m",
        )
