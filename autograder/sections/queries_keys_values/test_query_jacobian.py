# Hidden: other sizes (Q = 4, K = 6, d = 3, and one query), float64, three betas and the default; weights from
# queries and weights given directly (any rows that sum to 1, one-hot rows among them). References: the closed form
# of eq-query-gradient by explicit loops over nested lists, and torch.autograd's derivative of attention pooling.
# Contract: the page's sentences each check relies on.
#   "tensor of shape (Q, d, d), in the dtype and on the device of the keys," -> shape (4, 3, 3); float64 to 1e-10;
#     CPU result with 'meta' as the default device
#   "beta * (sum_j weights[i, j] k_j k_j^T - m_i m_i^T)" -> the closed form by loops, beta 1, 0.3 and 4
#   "with m_i = sum_j weights[i, j] k_j the output of query i." -> the same checks
#   "The derivative of attention pooling's output with respect to each query" -> against torch.autograd
#   "def query_jacobian(weights, keys, beta=1.0):" -> the default beta
#   "row i holds query i's weights (each row sums to 1)" -> weights given directly: one-hot, uniform, one query
# Classes: each kind of mistake, and the check that catches it.
#   value -> the closed form by loops and autograd (the mean's outer product added, or of the unweighted mean)
#   dtype -> float64 to 1e-10 (second moments accumulated in float32)
#   device -> CPU inputs with 'meta' as the default device: a buffer made without device= lands on 'meta'
#   pass-through -> beta 0.3 and 4 given, and the default 1 (the factor beta forgotten)
#   state -> n/a: the weights and keys are only read; every in-place step of an answer acts on a tensor it made
#   gradient -> n/a: the result is itself a derivative, compared with autograd's; nothing is trained through it
#   type -> n/a: one tensor comes back, and check_close accepts exactly a torch.Tensor; beta is a Python number
#   edge -> one-hot rows (derivative exactly 0), a uniform row, and a single query, (1, d, d) (a .squeeze())
#   symmetry -> n/a: each (d, d) entry is symmetric by construction; Q = 4, K = 6, d = 3 differ: a transpose fails
#   train-eval -> n/a: a function without a module, dropout or mode
#   efficiency -> n/a: the contract promises no time or memory bound (the (Q, d, d) result is the largest tensor)
from _shared import _device_probe  # the course's shared probes (the assembler inlines _shared.py)

_T = checks.trusted
_g = _T.Generator().manual_seed(1104)
_k = _T.randn(6, 3, generator=_g, dtype=_T.float64)  # (K, d)
_q = _T.randn(4, 3, generator=_g, dtype=_T.float64)  # (Q, d)


def _closed_form(weights, keys, beta):
    """beta * (sum_j p_j k_j k_j^T - m m^T) for every row p of weights, by explicit loops over nested lists."""
    out = []
    for p in weights:
        m = [sum(p[j] * keys[j][a] for j in range(len(keys))) for a in range(len(keys[0]))]
        out.append(
            [
                [beta * (sum(p[j] * keys[j][a] * keys[j][b] for j in range(len(keys))) - m[a] * m[b]) for b in range(3)]
                for a in range(3)
            ]
        )
    return _T.tensor(out, dtype=_T.float64)


def _autograd(queries, keys, beta):
    """torch.autograd's derivative of attention pooling (scores beta q.k, values = keys), one (d, d) per query."""
    rows = []
    for _qi in queries:
        rows.append(
            torch.autograd.functional.jacobian(lambda x: _T.matmul(_T.softmax(beta * _T.matmul(keys, x), 0), keys), _qi)
        )
    return _T.stack(rows)  # (Q, d, d)


_hint = "beta * (sum_j p_ij k_j k_j^T - m_i m_i^T) with m_i = weights[i] @ keys, the weighted mean"
for _beta in (1.0, 0.3, 4.0):
    _w = _T.softmax(_beta * _T.matmul(_q, _k.T), dim=1)  # (Q, K)
    _J = query_jacobian(_w, _k, beta=_beta)
    checks.check_shape(_J, (4, 3, 3), f"derivatives (hidden, 4 queries, d = 3, beta = {_beta})")
    checks.check_true(
        _J.dtype == _T.float64,
        f"the derivatives of float64 keys are float64 (hidden); they are {_J.dtype}",
        hint="compute with the keys and weights as given, without float32 buffers",
    )
    _ref = _closed_form(_w.tolist(), _k.tolist(), _beta)
    checks.check_close(_J, _ref, f"derivatives (hidden, beta = {_beta})", atol=1e-6, rtol=0, hint=_hint)
    checks.check_close(
        _J,
        _ref,
        f"derivatives to float64 precision (hidden, beta = {_beta})",
        atol=1e-10,
        rtol=0,
        hint="float64 weights and keys: keep float64 throughout, no float32 buffer (torch.zeros without dtype=)",
    )
    checks.check_close(
        _J,
        _autograd(_q, _k, _beta),
        f"derivatives against autograd (hidden, beta = {_beta})",
        atol=1e-10,
        rtol=0,
        hint=_hint,
    )
# The default beta is 1.
_w = _T.softmax(_T.matmul(_q, _k.T), dim=1)
checks.check_close(
    query_jacobian(_w, _k),
    _autograd(_q, _k, 1.0),
    "derivatives with the default beta (hidden)",
    atol=1e-10,
    rtol=0,
    hint="keep the default beta=1.0 of the signature",
)
# Weights given directly: any rows that sum to 1, one of them one-hot (derivative exactly 0), one uniform; one query.
_raw = _T.rand(3, 6, generator=_g, dtype=_T.float64)
_rows = _raw / _raw.sum(dim=1, keepdim=True)  # (3, K): each row sums to 1
_rows = _T.cat([_rows, _T.eye(6, dtype=_T.float64)[2:3], _T.ones(1, 6, dtype=_T.float64) / 6])  # (5, K)
checks.check_close(
    query_jacobian(_rows, _k, beta=2.0),
    _closed_form(_rows.tolist(), _k.tolist(), 2.0),
    "derivatives for weights given directly (hidden; a one-hot row, a uniform row)",
    atol=1e-10,
    rtol=0,
    hint=_hint,
)
checks.check_close(
    query_jacobian(_rows[:1], _k, beta=2.0),
    _closed_form(_rows[:1].tolist(), _k.tolist(), 2.0),
    "derivatives for a single query (hidden)",
    atol=1e-10,
    rtol=0,
    hint=_hint,
)
# Devices: every tensor the answer makes must be on the keys' device (_common.py: _device_probe).
_err = _device_probe(
    lambda: query_jacobian(_rows, _k, beta=2.0),
    lambda: query_jacobian(_rows.to("meta"), _k.to("meta"), beta=2.0),
    "query_jacobian",
)
checks.check_true(
    _err is None,
    f"the derivatives are made on the keys' device (hidden): {_err}",
    hint="make every new tensor on the keys' device: torch.zeros(..., dtype=keys.dtype, device=keys.device)",
)
