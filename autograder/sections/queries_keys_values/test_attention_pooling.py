# Hidden: other sizes, float64, a non-symmetric similarity, one query; references from explicit loops.
# Contract: the page's sentences each check relies on.
#   "a function called as similarity(queries, keys), in that order" -> the similarity that is not symmetric
#   "maps queries (Q, d) and keys (K, d) to scores (Q, K)" -> 4 queries x 6 keys, a single query
#   "the softmax of each query's scores (each row sums to 1)" -> weights against explicit loops
#   "output of shape (Q, v), the weighted sums of the values" -> output against loops; one query's output shape
#   "Both in the dtype of the inputs" -> float64 weights and output compared at 1e-9
#   "right for scores of any size" -> scores between 100 and 300 in float32
#   "scores of several hundred overflow exp() in float32, which torch.softmax avoids" -> the same check
import math as _math

_T = checks.trusted
_g = _T.Generator().manual_seed(1101)
_q = _T.randn(4, 3, generator=_g, dtype=_T.float64)
_k = _T.randn(6, 3, generator=_g, dtype=_T.float64)
_v = _T.randn(6, 5, generator=_g, dtype=_T.float64)
_W = _T.randn(3, 3, generator=_g, dtype=_T.float64)


def _sim(a, b):
    return a @ _W @ b.T  # a similarity that is not symmetric in queries and keys


_scores = _sim(_q, _k).tolist()
_w_ref, _o_ref = [], []
for _row in _scores:
    _m = max(_row)
    _e = [_math.exp(s - _m) for s in _row]
    _w_ref.append([e / sum(_e) for e in _e])
_vals = _v.tolist()
_o_ref = [[sum(w * _vals[j][c] for j, w in enumerate(_wr)) for c in range(5)] for _wr in _w_ref]
_out, _w = attention_pooling(_q, _k, _v, _sim)
checks.check_close(_w, _T.tensor(_w_ref, dtype=_T.float64), "weights (hidden, 4 queries x 6 keys)", atol=1e-9)
checks.check_close(_out, _T.tensor(_o_ref, dtype=_T.float64), "output (hidden, values of size 5)", atol=1e-9)
_out1, _w1 = attention_pooling(_q[:1], _k, _v, _sim)
checks.check_shape(_out1, (1, 5), "output for a single query")
checks.check_close(_w1, _T.tensor(_w_ref[:1], dtype=_T.float64), "weights for a single query", atol=1e-9)
# Large scores, float32: a similarity whose scores lie between 100 and 300 (exp overflows float32 past about 88), so a
# softmax written as exp(scores) / sum(exp(scores)) gives inf / inf = NaN; torch's softmax subtracts each row's maximum.
_big = 100 + 200 * _T.rand(3, 6, generator=_g, dtype=_T.float32)  # (Q, K) scores in [100, 300]


def _big_sim(a, b):
    return _big  # the same large scores whatever the queries and keys


_vb = _v.to(_T.float32)
_out_b, _w_b = attention_pooling(_q[:3].to(_T.float32), _k.to(_T.float32), _vb, _big_sim)
_w_b_ref = _T.softmax(_big, dim=-1)
_hint_b = "scores above 88 overflow exp in float32: use torch.softmax, which subtracts each row's maximum first"
checks.check_close(_w_b, _w_b_ref, "weights for scores between 100 and 300 (float32)", atol=1e-6, hint=_hint_b)
checks.check_close(_out_b, _T.matmul(_w_b_ref, _vb), "output for scores between 100 and 300", atol=1e-5, hint=_hint_b)
