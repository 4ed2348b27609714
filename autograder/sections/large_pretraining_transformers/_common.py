# Shared by the hidden tests of 11.9; the assembler puts it in front of each of them (autograder/assemble.py:
# hidden_tests), so every hidden block stays self-contained in its notebook cell. The references are explicit
# Python constructions (nested loops over queries and keys, a walk over the tokens) and closed forms, built from
# checks.trusted; no student object is read back to build a reference, and the answers may not call qkv's own.

import math as _math  # noqa: F401 (the hidden tests that follow use it)

import qkv.corruption as _qc  # noqa: F401
import qkv.lm as _ql  # noqa: F401
import qkv.pretraining as _qp  # noqa: F401

_T = checks.trusted
_f64 = _T.float64


def _bools(rows):
    """A bool tensor from nested lists of Python bools."""
    return _T.tensor(rows, dtype=_T.bool)


def _loop_mask(Q, K, allowed):
    """(Q, K) bool tensor with entry [i, j] = allowed(i, j), built by two loops."""
    return _bools([[bool(allowed(i, j)) for j in range(K)] for i in range(Q)])


def _runs(flags):
    """Number of runs of True in a list of Python bools."""
    return sum(1 for t, f in enumerate(flags) if f and (t == 0 or not flags[t - 1]))


def _is_tensor(x, name, dtypes, hint):
    checks.check_true(type(x) is checks.trusted.tensor(0).__class__, f"{name} is a torch.Tensor", hint=hint)
    checks.check_true(x.dtype in dtypes, f"{name} has dtype {' or '.join(str(d) for d in dtypes)}", hint=hint)


def _raises(fn):
    """The name of the exception ``fn()`` raises, or "no error"."""
    try:
        fn()
    except Exception as err:  # noqa: BLE001
        return type(err).__name__
    return "no error"
