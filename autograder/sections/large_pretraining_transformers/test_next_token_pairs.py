# Hidden: random corpora of L = 1001, 20 and 6 tokens with T = 7, 5 and 5 (two with L a multiple of T), against
# windows cut by a loop; corpora of 5, 3, 1 and 0 tokens with T = 5, where no window fits: empty (0, T), no error.
# Contract: the page's sentences each check relies on.
#   "Returns (X, Y), each (w, T) with w = max((len(corpus) - 1) // T, 0):" -> shapes for 3 corpora
#   "X[i] = corpus[i*T : i*T + T] (non-overlapping windows)" -> X for 3 corpora
#   "and Y[i] = corpus[i*T + 1 : i*T + T + 1], every input's next token." -> Y for the same corpora
#   "When no window fits, w = 0 and X and Y are empty, (0, T)" -> 5, 3 and 1 tokens with T = 5
#   "empty, (0, T), with no error: an empty corpus included." -> 0 tokens with T = 5: empty (0, 5)
# Classes: each kind of mistake, and the check that catches it.
#   value -> X and Y against windows cut by a loop, three random corpora
#   dtype -> n/a: slices of corpus keep its dtype; the contract names no other
#   device -> n/a: the contract names no device
#   pass-through -> n/a: corpus and num_steps both enter every window; one left out is a wrong value
#   state -> n/a: corpus is only read; nothing is kept from one call to the next
#   gradient -> n/a: token ids; nothing is trained through them
#   type -> n/a: two tensors, checked by shape
#   edge -> no window fits (5, 3, 1 and 0 tokens, T = 5): X and Y are empty, (0, T); L a multiple of T
#   symmetry -> random corpora: labels made as X + 1, which an arange corpus cannot tell from the shift, differ
#   train-eval -> n/a: a function with no training behaviour
#   efficiency -> n/a: the contract promises no time or memory
from _common import _T, _raises  # the section's shared helpers (the assembler inlines _common.py)

_g = _T.Generator().manual_seed(42)
for _L, _Tn in [(1001, 7), (20, 5), (6, 5)]:
    _c = _T.randint(0, 28, (_L,), generator=_g)
    _n = (_L - 1) // _Tn
    _cl = _c.tolist()
    _X = _T.tensor([_cl[i * _Tn : i * _Tn + _Tn] for i in range(_n)])  # (n, T)
    _Y = _T.tensor([_cl[i * _Tn + 1 : i * _Tn + _Tn + 1] for i in range(_n)])  # (n, T)
    _gx, _gy = next_token_pairs(_c, _Tn)
    _what = f"(hidden, {_L} tokens, T = {_Tn})"
    checks.check_shape(_gx, (_n, _Tn), f"X {_what}", hint="w = (len(corpus) - 1) // T windows")
    checks.check_close(_gx, _X, f"X {_what}", atol=0, rtol=0, hint="non-overlapping windows")
    checks.check_close(_gy, _Y, f"Y {_what}", atol=0, rtol=0, hint="Y[i] = corpus[i*T + 1 : i*T + T + 1]")
for _L in (5, 3, 1, 0):  # no window fits: w = 0 (for L = 0 too, not (0 - 1) // 5 = -1)
    _c = _T.randint(0, 28, (_L,), generator=_g)
    _r = _raises(lambda _c=_c: next_token_pairs(_c, 5))
    checks.check_true(
        _r == "no error",
        f"next_token_pairs of {_L} tokens with T = 5 (no window fits) runs (hidden; got {_r})",
        hint="with w = 0 windows return empty (0, T) tensors: corpus[:0].reshape(0, T) works, torch.stack([]) fails",
    )
    _gx, _gy = next_token_pairs(_c, 5)
    checks.check_shape(_gx, (0, 5), f"X (hidden, {_L} tokens, T = 5: no window)", hint="w = 0: an empty (0, T)")
    checks.check_shape(_gy, (0, 5), f"Y (hidden, {_L} tokens, T = 5: no window)", hint="w = 0: an empty (0, T)")
