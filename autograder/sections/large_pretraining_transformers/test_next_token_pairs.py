# Hidden: random corpora of L = 1001, 20 and 6 tokens with T = 7, 5 and 5 (two with L a multiple of T), against
# windows cut by a loop.
# Contract: the page's sentences each check relies on.
#   "Returns (X, Y), each (w, T) with w = (len(corpus) - 1) // T:" -> shapes for 3 corpora
#   "X[i] = corpus[i*T : i*T + T] (non-overlapping windows)" -> X for 3 corpora
#   "and Y[i] = corpus[i*T + 1 : i*T + T + 1], every input's next token." -> Y for the same corpora
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
