# Shared by the hidden tests of 11.5 (multi-head attention); the assembler inlines it where a hidden test imports it
# (from _common import ...; autograder/assemble.py: hidden_tests), so every hidden block stays self-contained in its
# notebook cell.
# (Runs in the notebook, after its visible test: checks and the answers are defined there.)
import math as _math

import torch.overrides as _ov

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


class _CountProducts(_ov.TorchFunctionMode):
    """While on, counts the calls of torch functions that multiply matrices (bmm, matmul and @, einsum, linear,
    fused attention...). A TorchFunctionMode sees the calls as the student's code makes them, before dispatch; it is
    fast and imports nothing (a TorchDispatchMode's first use imports torch._dynamo, seconds on a loaded machine)."""

    NAMES = (
        "mm", "bmm", "matmul", "__matmul__", "__rmatmul__", "einsum", "linear", "baddbmm", "addmm", "addbmm",
        "mv", "dot", "tensordot", "scaled_dot_product_attention", "multi_head_attention_forward",
    )  # fmt: skip

    def __init__(self):
        super().__init__()
        self.count = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") in self.NAMES:
            self.count += 1
        return func(*args, **(kwargs or {}))


class _HostProbe(_ov.TorchFunctionMode):
    """While on, records what would tie the code to the CPU on another device: values read out into Python
    (.tolist(), .item(), int(), bool(), .numpy(), .cpu()), which on a GPU wait for it and copy, and new tensors
    made from scratch without device= (torch.tensor, arange, zeros, ...), which land on the CPU. (Running the code
    on 'meta' tensors would show the same, but a division on 'meta' imports torch._dynamo: seconds of grading.)"""

    READS = ("tolist", "item", "__int__", "__float__", "__bool__", "__index__", "numpy", "cpu")
    FACTORIES = ("tensor", "as_tensor", "arange", "zeros", "ones", "full", "empty", "eye", "linspace", "randn",
                 "rand", "randint")  # fmt: skip

    def __init__(self):
        super().__init__()
        self.found = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in self.READS:
            self.found.append(f".{name}()" if not name.startswith("__") else f"{name.strip('_')}(a tensor)")
        elif name in self.FACTORIES and (kwargs or {}).get("device") is None:
            self.found.append(f"torch.{name}(...) without device=")
        return func(*args, **(kwargs or {}))


def _error_of(call):
    """Run ``call()``; return (result, None) or (None, one line naming what it raised)."""
    try:
        return call(), None
    except Exception as e:  # report what the student's code raised, in one line
        return None, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
