# Shared by the hidden tests of 11.5 (multi-head attention); the assembler puts it in front of each of them
# (autograder/assemble.py: hidden_tests), so every hidden block stays self-contained in its notebook cell.
# (Runs in the notebook, after its visible test: checks and the answers are defined there.)
import math as _math

from torch.utils._python_dispatch import TorchDispatchMode as _DispatchMode

import qkv.multihead as _qm  # noqa: F401 (the hidden tests after this use it)

_T = checks.trusted
_f64 = _T.float64


def _attend_ref(q, k, v, lens):
    """Scaled dot-product attention of one head by explicit loops over nested lists: q[i] (h,), k[j] (h,), v[j]
    (v,); query i sees the first lens[i] keys. Returns the weights (Q, K) and the output (Q, v) as lists."""
    h, m = len(q[0]), len(k)
    weights, output = [], []
    for qi, n in zip(q, lens):
        s = [sum(a * b for a, b in zip(qi, kj)) / _math.sqrt(h) for kj in k[:n]]
        top = max(s)
        e = [_math.exp(x - top) for x in s]
        w = [x / sum(e) for x in e] + [0.0] * (m - n)
        weights.append(w)
        output.append([sum(w[j] * v[j][c] for j in range(m)) for c in range(len(v[0]))])
    return weights, output


def _lens_per_query(valid_lens, B, Q, K):
    """Lengths as a nested list [b][i]: from None, a list of B lengths or a list of B lists of Q lengths."""
    if valid_lens is None:
        return [[K] * Q for _ in range(B)]
    return [n if isinstance(n, list) else [n] * Q for n in valid_lens]


class _CountProducts(_DispatchMode):
    """While on, counts the matrix products (mm, bmm, addmm, baddbmm, fused attention...) torch dispatches."""

    NAMES = ("mm", "bmm", "addmm", "baddbmm", "addbmm", "matmul", "dot", "mv", "vdot", "linear", "einsum")

    def __init__(self):
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        if name in self.NAMES or name.startswith("_scaled_dot_product"):
            self.count += 1
        return func(*args, **(kwargs or {}))


def _error_of(call):
    """Run ``call()``; return (result, None) or (None, one line naming what it raised)."""
    try:
        return call(), None
    except Exception as e:  # report what the student's code raised, in one line
        return None, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
