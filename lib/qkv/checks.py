"""Checks used by the notebooks' test cells, with messages written for students (D2L 11.1-11.9).

Every check fails with a :class:`CheckFailed` (a subclass of
``AssertionError``) whose message says what was checked, what was expected,
what came back, and a hint, in the spirit of D2L's ``check_shape``; no line
of a message is wider than :data:`WIDTH`, so ``nbgrader validate`` prints it
whole. :func:`install`, called by each notebook's setup cell, makes IPython
show such a failure as its message alone (no frames of this module), and an
unanswered stub's ``NotImplementedError`` as a sentence naming the exercise.

The checks do not trust the objects they are given: a result must be exactly
a ``torch.Tensor`` (not a subclass, not an object whose ``==`` always answers
True); comparisons use the tensor functions captured when this module was
first imported, in the notebook's first, locked cell (:data:`trusted`); and
:func:`forbid_reference` makes a ``qkv`` component refuse to run while a
student's function runs, so an answer that only calls the reference fails.
The visible tests help a student find a mistake; the grade comes from the
course's hidden tests, which the grader runs apart from the student's code.
"""

from __future__ import annotations

import contextlib
import inspect
import sys
import types

import torch

from qkv._explain import _EXPLAINED, _NONE_HINT, WIDTH, _shape_of, _wrap, explain, message, stub_message

__all__ = [
    "CheckFailed",
    "WIDTH",
    "trusted",
    "install",
    "check_tensor",
    "check_shape",
    "check_close",
    "check_scalar",
    "check_true",
    "load_exact",
    "forbid_reference",
]


class CheckFailed(AssertionError):
    """A check of a test cell failed. Its message is the whole report (what, expected, got, hint), so the
    handler that :func:`install` sets up shows it without a traceback. An ``AssertionError``, so code that
    catches those (pytest, nbgrader, a student's ``try``) treats it as one."""


#: The hint for a None where a tensor was expected: the usual cause is a function that ends without ``return``.
# Pristine references, captured at import. Functions from torch's C extension
# cannot be altered, only re-bound; we keep our own bindings.
_Tensor = torch.Tensor
_as_tensor = torch.as_tensor
_broadcast_to = torch.broadcast_to
_isfinite = torch.isfinite
_abs, _sub, _all = torch.abs, torch.sub, torch.all
_tolist = torch.Tensor.tolist
_float64 = torch.float64
_detach = torch.Tensor.detach
_to = torch.Tensor.to
_type, _isinstance, _float, _tuple, _len = type, isinstance, float, tuple, len
_Module = torch.nn.Module

#: Tensor functions for computing references in hidden tests, bound at import
#: (before any student code): ``trusted.softmax(x, dim=-1)`` is torch's softmax
#: even if a student re-binds ``torch.softmax`` later.
trusted = types.SimpleNamespace(
    tensor=torch.tensor,
    zeros=torch.zeros,
    ones=torch.ones,
    eye=torch.eye,
    arange=torch.arange,
    randn=torch.randn,
    rand=torch.rand,
    randint=torch.randint,
    manual_seed=torch.manual_seed,
    Generator=torch.Generator,
    softmax=torch.softmax,
    exp=torch.exp,
    tanh=torch.tanh,
    matmul=torch.matmul,
    bmm=torch.bmm,
    cat=torch.cat,
    stack=torch.stack,
    where=torch.where,
    sqrt=torch.sqrt,
    float64=torch.float64,
    float32=torch.float32,
    float16=torch.float16,
    bfloat16=torch.bfloat16,
    long=torch.long,
    bool=torch.bool,
)


def _fail(what: str, expected, got, hint: str | None, where: str | None = None):
    raise CheckFailed(message(what, expected, got, hint, where))


def check_tensor(x, name: str = "result") -> None:
    """``x`` must be a plain ``torch.Tensor``: not a subclass, not a look-alike."""
    if _type(x) is not _Tensor:
        _fail(
            f"{name} should be a torch.Tensor",
            "torch.Tensor",
            "None" if x is None else f"{_type(x).__module__}.{_type(x).__qualname__}",
            _NONE_HINT
            if x is None
            else "return a tensor computed with torch operations (not a list, an array or a custom object)",
        )


def check_shape(x, shape, name: str = "result", hint: str | None = None) -> None:
    """``x`` is a tensor of exactly ``shape`` (D2L's ``check_shape``)."""
    check_tensor(x, name)
    got = _shape_of(x)
    if got != _tuple(shape):
        _fail(f"{name} has the wrong shape", _tuple(shape), got, hint)


def check_close(
    got,
    expected,
    name: str = "result",
    atol: float = 1e-5,
    rtol: float = 1e-5,
    hint: str | dict[str, str] | None = None,
    regions: dict | None = None,
) -> None:
    """``got`` is a finite tensor of ``expected``'s shape whose entries all match it within
    ``atol + rtol * |expected|``; the message shows the largest error and where it is.

    ``regions`` names parts of the tensor, each a boolean mask that broadcasts to ``expected``'s shape
    (``{"masked keys": ~keep, "valid keys": keep}``): a failure then says in which region the largest error
    lies and which regions match, and ``hint`` may be a dict giving each region its own hint.
    """
    general = hint if not isinstance(hint, dict) else None
    check_shape(got, _shape_of(expected), name, general)
    a = _to(_detach(got), dtype=_float64, device="cpu")
    b = _to(_detach(expected), dtype=_float64, device="cpu")
    if not _tolist(_all(_isfinite(a))):
        _fail(
            f"{name} has NaN or infinite entries",
            "finite numbers",
            "NaN/inf present",
            general or "look for a division by zero or a softmax over a row where every entry is -inf",
        )
    err = _abs(_sub(a, b))
    tol = atol + rtol * _abs(b)
    # Work on Python floats from here: no tensor comparison operator is involved.
    flat = _tolist(_sub(err, tol).flatten())
    if not flat or max(flat) <= 0:
        return
    idx = max(range(_len(flat)), key=flat.__getitem__)
    pos = _unravel(idx, _shape_of(a))
    what, where = f"{name}: wrong values", f"largest error at {pos}"  # "wrong values": right for "the lengths" too
    if regions:
        masks = {
            region: _tolist(_broadcast_to(_as_tensor(mask), _shape_of(b)).flatten()) for region, mask in regions.items()
        }
        inside = [region for region, mask in masks.items() if mask[idx]]
        if inside:
            what += f", in the {inside[0]}"
            where += f", in the {inside[0]}"
            if isinstance(hint, dict):
                hint = hint.get(inside[0])
        matching = [
            region
            for region, mask in masks.items()
            if region not in inside and all(e <= 0 for e, m in zip(flat, mask) if m) and any(mask)
        ]
        if matching:
            where += "; none in the " + " or the ".join(matching)
    _fail(
        what,
        f"{_tolist(b.flatten())[idx]:.6g} (within {atol:g} + {rtol:g}*|expected|)",
        f"{_tolist(a.flatten())[idx]:.6g}",
        hint if not isinstance(hint, dict) else None,
        where,
    )


def _unravel(idx: int, shape: tuple) -> tuple:
    pos = []
    for size in reversed(shape):
        pos.append(idx % size)
        idx //= size
    return _tuple(reversed(pos))


# ---------------------------------------------------------------- failures as a student sees them


def install(shell=None) -> bool:
    """Show failed checks, unanswered stubs and the common crashes of an answer briefly in IPython (Jupyter,
    the grader's shell).

    Registers a custom exception handler (``set_custom_exc``) for :class:`CheckFailed`, shown as its message
    alone; ``NotImplementedError``, shown as :func:`stub_message` when it comes from an unanswered stub; and
    the errors :func:`explain` recognises (a module whose ``__init__`` never called ``super().__init__()``, a
    None where a tensor was expected, a shape, dtype or device mismatch in the notebook's code), shown as its
    few lines. Any other error keeps IPython's usual traceback, and ``%tb`` shows the whole traceback of an
    error shown briefly. ``shell`` defaults to the running IPython; outside IPython this does nothing. Returns
    whether a handler was installed.
    """
    if shell is None:
        try:
            from IPython import get_ipython
        except ImportError:
            return False
        shell = get_ipython()
    if shell is None or not hasattr(shell, "set_custom_exc"):
        return False
    shell.set_custom_exc((CheckFailed, NotImplementedError, *_EXPLAINED), _show)
    return True


def _show(shell, etype, value, tb, tb_offset=None) -> list[str]:
    """IPython's custom handler: shows ``value`` (IPython leaves the showing to the handler) and returns the
    lines shown. Jupyter's kernel sends them as the error output's traceback, the grader's shell its own."""
    if isinstance(value, CheckFailed):
        stb = str(value).splitlines() or [etype.__name__]
    else:
        text = stub_message(value, tb) if isinstance(value, NotImplementedError) else explain(value, tb)
        if text is None:
            shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
            return []
        sys.last_type, sys.last_value, sys.last_traceback = etype, value, tb  # for %tb, the whole traceback
        with contextlib.suppress(Exception):
            value.args = (text,)  # so that the error output's evalue (and a grader's summary) says it too
        stb = [line for part in text.splitlines() for line in (_wrap(part) if _len(part) > WIDTH else [part])]
    shell._showtraceback(etype, value, stb)
    return stb


def check_scalar(got, expected: float, name: str = "result", atol: float = 1e-6, hint: str | None = None) -> None:
    """``got`` is a Python or 0-d tensor number equal to ``expected`` within ``atol``."""
    if _type(got) is _Tensor:
        if got.numel() != 1:
            _fail(f"{name} should be a single number", "a scalar", f"a tensor of shape {_shape_of(got)}", hint)
        got = _tolist(got.reshape(()))
    if _type(got) not in (int, _float) and not _isinstance(got, (int, _float)):
        _fail(f"{name} should be a number", "int or float", _type(got).__qualname__, hint)
    got = _float(got)
    if not abs(got - expected) <= atol:
        _fail(f"{name} is not the expected value", f"{expected:.6g}", f"{got:.6g}", hint)


def check_true(condition: bool, what: str, hint: str | None = None) -> None:
    """A plain boolean check with a readable message (``condition`` must be exactly True). When it is False, the
    message is ``what`` and the hint (an "expected: True, got: False" would add nothing); anything else is shown."""
    if condition is False:
        raise CheckFailed(message(what, None, None, hint))
    if condition is not True:
        _fail(what, True, condition, hint)


def load_exact(module, weights: dict, what: str) -> None:
    """Copy ``weights`` (name -> tensor) into ``module`` by name, after checking that its parameters and buffers are
    exactly these names with these shapes; the hint names what is extra, missing or of another shape (the hidden
    tests of 11.7 and 11.8 load drawn weights into an answer this way, then into a PyTorch reference)."""
    got = {k: tuple(v.shape) for k, v in module.state_dict().items()}
    want = {k: tuple(v.shape) for k, v in weights.items()}
    differ = sorted(set(got) ^ set(want)) or [k for k in want if got.get(k) != want[k]]
    check_true(
        got == want,
        f"{what} has the parameters the docstring names",
        hint="build it exactly as the docstring says (names, sizes, biases); extra, missing or of another shape: "
        + ", ".join(differ)[:200],
    )
    module.load_state_dict(weights)


@contextlib.contextmanager
def forbid_reference(student_fn, *references: tuple[types.ModuleType, str]):
    """Fail if ``student_fn`` merely calls the reference implementation in ``qkv``.

    Each reference is ``(module, name)``. While the block runs, those module
    attributes raise when called; before it runs, the student's function (and,
    for a class, its methods) must not refer to the reference objects through
    its globals or closures.
    """
    originals = {(m, n): getattr(m, n) for m, n in references}
    targets = list(originals.values())
    reference_classes = [t for t in targets if inspect.isclass(t)]
    if inspect.isclass(student_fn) and any(k is t for k in student_fn.__mro__ for t in reference_classes):
        _fail(
            "your answer subclasses the course's reference implementation",
            "your own code",
            f"a subclass of qkv's {reference_classes[0].__qualname__}",
            "write the class yourself, starting from nn.Module",
        )
    if any(student_fn is t for t in targets):
        _fail(
            "your answer is the course's reference implementation itself",
            "your own code",
            f"{getattr(student_fn, '__qualname__', student_fn)!r} imported from qkv",
            "write the computation yourself; the reference in qkv is there to read, not to call",
        )
    for fn in _functions_of(student_fn):
        for ref_name, value in _referenced(fn):
            if any(value is t for t in targets):
                _fail(
                    "your answer calls the course's reference implementation instead of computing the result",
                    "your own code",
                    f"a call to qkv's {ref_name}",
                    "write the computation yourself; the reference in qkv is there to read, not to call",
                )

    def poisoned(*args, **kwargs):
        raise CheckFailed("your answer calls the course's reference implementation; write your own")

    try:
        for m, n in references:
            setattr(m, n, poisoned)
        yield
    finally:
        for (m, n), value in originals.items():
            setattr(m, n, value)


def _functions_of(obj):
    if inspect.isclass(obj):
        for klass in obj.__mro__:
            if klass.__module__.startswith(("torch", "builtins")):
                continue
            for value in vars(klass).values():
                if inspect.isfunction(value):
                    yield value
    elif inspect.isfunction(obj):
        yield obj


def _referenced(fn):
    """(name, object) pairs a function can reach by name: globals it names, and its closure."""
    code = fn.__code__
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= set(const.co_names)
    for name in names:
        if name in fn.__globals__:
            yield name, fn.__globals__[name]
    for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
        with contextlib.suppress(ValueError):
            yield name, cell.cell_contents
