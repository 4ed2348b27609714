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
import linecache
import re
import sys
import textwrap
import types

import torch

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

#: The widest line of a failure message. ``nbgrader validate`` indents each line of an error by 4 spaces
#: and cuts what passes 87 characters (``Validator.width`` 90, less 3 for "..."): 83 + 4 = 87.
WIDTH = 83


class CheckFailed(AssertionError):
    """A check of a test cell failed. Its message is the whole report (what, expected, got, hint), so the
    handler that :func:`install` sets up shows it without a traceback. An ``AssertionError``, so code that
    catches those (pytest, nbgrader, a student's ``try``) treats it as one."""


#: The hint for a None where a tensor was expected: the usual cause is a function that ends without ``return``.
_NONE_HINT = (
    "a function or method that ends without `return ...` gives None: make yours (forward too) return its result"
)

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
_shape = torch.Tensor.shape.__get__ if hasattr(torch.Tensor.shape, "__get__") else None
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


def _wrap(text, first: str = "", rest: str = "") -> list[str]:
    """``text`` as lines of at most :data:`WIDTH` characters, the first starting with ``first`` and the others
    with ``rest``; its own line breaks are kept, and a word too long for a line (a long repr) is cut."""
    lines = []
    for part in str(text).splitlines() or [""]:
        lines += textwrap.wrap(
            part,
            WIDTH,
            initial_indent=first if not lines else rest,
            subsequent_indent=rest,
            break_on_hyphens=False,
            drop_whitespace=True,
        ) or [(first if not lines else rest).rstrip()]
    return lines


def message(what: str, expected, got, hint: str | None = None, where: str | None = None) -> str:
    """The text of a failed check: ``what`` on the first line, then ``where`` (optional), ``expected`` and ``got``
    (left out when both are None) and ``hint``, each label indented by two spaces and each line wrapped to
    :data:`WIDTH` characters."""
    lines = _wrap(what, rest="  ")
    if where:
        lines += _wrap(where, "  where:    ", " " * 12)
    if expected is not None or got is not None:
        lines += _wrap(expected, "  expected: ", " " * 12)
        lines += _wrap(got, "  got:      ", " " * 12)
    if hint:
        lines += _wrap(hint, "  hint: ", " " * 8)
    return "\n".join(lines)


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


def _shape_of(x) -> tuple:
    return _tuple(_shape(x)) if _shape else _tuple(x.shape)


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

_EXERCISE = re.compile(r"^#\s*Exercise\s+(\d+)\b")
_TEST = re.compile(r"^#\s*Test of exercise\s+(\d+)\b", re.I)
#: The errors :func:`explain` may recognise when a cell raises them; any other keeps IPython's traceback.
_EXPLAINED = (AttributeError, TypeError, RuntimeError, IndexError, ValueError)


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


# ---------------------------------------------------------------- the common crashes of an answer

_SHAPE = re.compile(
    r"size of tensor|shapes cannot be multiplied|is invalid for input of size|sizes? of tensors|size mismatch"
    r"|dimensions? of batch|number of dims|expanded size|broadcast|normalized_shape|inconsistent tensor size"
    r"|\d-?D tensor|to have \d+ dim|dimension out of range|out of bounds for dimension|too many indices"
    r"|must match|expected .*shape|got .*shape|\bshape\b",
    re.I,
)
_DEVICE = re.compile(r"same device|not on the expected device|Expected all tensors to be on|cuda\.\w*Tensor", re.I)
_DTYPE = re.compile(r"scalar type|same dtype|dtype|should be the same|Expected object of scalar type", re.I)
_NAME = re.compile(r"\b(self\.)?([A-Za-z_]\w*)")
_NO_ATTRIBUTE = re.compile(r"^'(\w+)' object has no attribute '(\w+)'")


def explain(error: BaseException, tb=None) -> str | None:
    """A few lines that say what went wrong and where to look, for the common crashes of an answer; ``None``
    when ``error`` is none of them (it then keeps its traceback):

    * a ``torch.nn.Module`` whose ``__init__`` never called ``super().__init__()`` (PyTorch then fails on its
      first use, deep inside ``nn.Module``, with "object has no attribute '_backward_hooks'" or "cannot
      assign module before Module.__init__() call");
    * a None where a tensor was expected (a function or method that ends without ``return``), or an attribute
      of a notebook's class that nothing set (``self.dense1`` used, never assigned);
    * a shape, dtype or device mismatch raised by a line of the notebook's code (inside a student's
      ``forward``, or in a test cell that used what an answer returned).

    The lines name the function and the line of the cell (``Exercise 3``, from the cell's header line), the
    shapes of the tensors that line names, the error's own first line, and a hint. ``tb`` defaults to the
    error's traceback. Never raises: a handler that fails is removed by IPython."""
    try:
        return _explain(error, tb if tb is not None else error.__traceback__)
    except Exception:  # noqa: BLE001 (a student's object may raise anywhere; then the traceback stays)
        return None


def _explain(error: BaseException, tb) -> str | None:
    if not _isinstance(error, _EXPLAINED):
        return None
    frames = []
    while tb is not None:
        frames.append((tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    mine = [(f, n) for f, n in frames if f.f_globals.get("__name__") == "__main__"]
    if not mine:
        return None
    frame, lineno = mine[-1]
    text = str(error)
    first = text.splitlines()[0] if text else ""
    raised = f"{_type(error).__name__}: {first[:300]}"
    more = "(the whole traceback: %tb in a new cell)"

    module = _unready_module(frames) if _isinstance(error, AttributeError) else None
    if module is not None:
        name = _type(module).__name__
        init = _type(module).__dict__.get("__init__")
        number = _exercise_of(init.__code__.co_filename) if inspect.isfunction(init) else None
        where = f"{name}.__init__" + (f", in your Exercise {number} cell" if number else "")
        return _lines(
            f"{name}.__init__ never called super().__init__(), so {name} is not a working PyTorch module",
            [("where", where), ("error", raised)],
            "make super().__init__() the first line of __init__: nn.Module sets up its parameters, buffers "
            "and hooks there",
            more,
        )
    place, in_test = _place(frame, lineno)
    qualname = _qualname(frame)
    missing = _NO_ATTRIBUTE.match(first) if _isinstance(error, AttributeError) else None
    owners = [getattr(error, "obj", None)] + [f.f_locals.get("self") for f, _ in frames] if missing else []
    if any(_type(o).__name__ == missing.group(1) and _type(o).__module__ == "__main__" for o in owners):
        name, attr = missing.groups()
        return _lines(
            f"{name} has no attribute {attr}: nothing set self.{attr}",
            [("where", place), ("error", raised)],
            f"set self.{attr} in {name}.__init__, as the docstring names it (a layer: after super().__init__())",
            more,
        )
    if _isinstance(error, (TypeError, AttributeError)) and "NoneType" in text:
        nones = [n for n, v in _named_values(frame, lineno) if v is None]
        facts = [("where", place.removeprefix(f"{qualname}, ") if qualname and not in_test else place)]
        if nones:
            facts.append(("None", ", ".join(nones)))
        facts.append(("error", raised))
        what = (
            "the test got None from your code where it expected a result"
            if in_test or qualname is None
            else f"a value is None where a tensor was expected, in {qualname}"
        )
        attrs = [n for n in nones if n.startswith("self.")]
        hint = (
            f"{attrs[0]} is None: give it its value in __init__ (a tensor the module keeps: "
            f"self.register_buffer({attrs[0][5:]!r}, ...))"
            if attrs
            else _NONE_HINT
        )
        return _lines(what, facts, hint, more)
    kind = None
    if _isinstance(error, RuntimeError) and "out of memory" not in text.lower():
        if _DEVICE.search(text):
            kind = "device"
        elif _SHAPE.search(text):
            kind = "shape"
        elif _DTYPE.search(text):
            kind = "dtype"
    elif _isinstance(error, IndexError) and _SHAPE.search(text):
        kind = "shape"
    elif _isinstance(error, ValueError) and "values to unpack" in text:
        source = linecache.getline(frame.f_code.co_filename, lineno)
        kind = "shape" if ("shape" in source or "size(" in source) else None
    elif _isinstance(error, ValueError) and _SHAPE.search(text):
        # the course's own checks of their inputs (qkv raises a ValueError that names the shapes)
        kind = "shape" if str(frames[-1][0].f_globals.get("__name__", "")).startswith("qkv.") else None
    if kind is None:
        return None
    tensors = [(n, v) for n, v in _named_values(frame, lineno) if _type(v) is _Tensor or _isinstance(v, _Tensor)]
    described = {
        "shape": lambda v: str(_shape_of(v)),
        "dtype": lambda v: str(v.dtype).replace("torch.", ""),
        "device": lambda v: str(v.device),
    }[kind]
    facts = [("where", place.removeprefix(f"{qualname}, ") if qualname and not in_test else place)]
    if tensors:
        facts.append((kind + "s", ", ".join(f"{n} {described(v)}" for n, v in tensors[:6])))
    facts.append(("error", raised))
    scope = "in the test, with what your code returned" if in_test or qualname is None else f"in {qualname}"
    hint = {
        "shape": "compare these shapes with the docstring's; print(x.shape) before this line to follow them"
        + ("; the test used what your code returned: check its shape first" if in_test else ""),
        "dtype": "make new tensors with dtype=X.dtype, or cast with .to(X.dtype), so that the dtypes agree",
        "device": "make new tensors with device=X.device, and keep a module's tensors as buffers "
        "(self.register_buffer) so that .to(device) moves them",
    }[kind]
    return _lines(f"a {kind} mismatch {scope}", facts, hint, more)


def _lines(what: str, facts: list[tuple[str, str]], hint: str, more: str) -> str:
    """``what``, then each ``label: text`` of ``facts`` and the hint, wrapped to :data:`WIDTH` as
    :func:`message` lays out a failed check."""
    lines = _wrap(what, rest="  ")
    for label, text in facts:
        lines += _wrap(text, f"  {label + ':':<10}", " " * 12)
    lines += _wrap(hint, "  hint: ", " " * 8)
    lines += _wrap(more, "  ", "  ")
    return "\n".join(lines)


def _unready_module(frames):
    """The ``torch.nn.Module`` (a ``self`` of one of the frames) whose ``nn.Module.__init__`` never ran, if any."""
    for f, _ in frames:
        obj = f.f_locals.get("self")
        if _isinstance(obj, _Module) and "_parameters" not in object.__getattribute__(obj, "__dict__"):
            return obj
    return None


def _exercise_of(filename: str) -> str | None:
    """The exercise number of a cell's header line (``# Exercise 2 (...)``), if IPython kept the cell's text."""
    found = _EXERCISE.match((linecache.getlines(filename) or [""])[0].strip())
    return found.group(1) if found else None


def _qualname(frame) -> str | None:
    """``Class.method`` or ``function`` of a frame of the notebook's code; None at a cell's top level."""
    code = frame.f_code
    name = getattr(code, "co_qualname", code.co_name).replace(".<locals>", "")
    return None if name.startswith("<") else name


def _place(frame, lineno: int) -> tuple[str, bool]:
    """Where a frame of the notebook's code is, in words (and whether it is a test cell): the function, the
    cell (an exercise's, a test's, another) and the line, with its text."""
    filename = frame.f_code.co_filename
    head = (linecache.getlines(filename) or [""])[0].strip()
    source = re.sub(r"\s+#[^'\"]*$", "", linecache.getline(filename, lineno).strip())  # without its comment
    exercise, test = _EXERCISE.match(head), _TEST.match(head)
    cell = (
        f"your Exercise {exercise.group(1)} cell"
        if exercise
        else f"the test of exercise {test.group(1)}"
        if test
        else "the cell"
    )
    name = _qualname(frame)
    text = (f"{name}, " if name else "") + f"line {lineno} of {cell}"
    return (text + (f": {source}" if source else ""), test is not None)


def _named_values(frame, lineno: int) -> list[tuple[str, object]]:
    """The names (``x``, ``self.P``) that the frame's line ``lineno`` mentions, with their values, in order:
    locals of the frame, and attributes of its ``self`` (read without calling any property of a student's)."""
    source = linecache.getline(frame.f_code.co_filename, lineno)
    source = source.split("#", 1)[0]
    local = frame.f_locals
    found, seen = [], set()
    for match in _NAME.finditer(source):
        attr, name = match.group(1), match.group(2)
        key = f"self.{name}" if attr else name
        if key in seen or (not attr and name == "self"):
            continue
        seen.add(key)
        if attr:
            try:
                store = object.__getattribute__(local.get("self"), "__dict__")
            except (AttributeError, TypeError):
                continue
            parts = [store] + [store.get(k) or {} for k in ("_parameters", "_buffers", "_modules")]
            value = next((p[name] for p in parts if _isinstance(p, dict) and name in p), _MISSING)
        else:
            value = local.get(name, _MISSING)
        if value is not _MISSING:
            found.append((key, value))
    return found


_MISSING = object()


def stub_message(error: BaseException, tb=None) -> str | None:
    """For a bare ``NotImplementedError()`` raised by a function or method the notebook defines (a stub that
    is still ``raise NotImplementedError()``): a sentence naming the exercise, from the stub's name and its
    cell's header line (``# Exercise 2 (2 points): ...``) when IPython kept the cell's text. ``None`` for any
    other error (torch raises ``NotImplementedError`` with a message for operations a device lacks)."""
    if not isinstance(error, NotImplementedError) or error.args:
        return None
    tb = tb if tb is not None else error.__traceback__
    if tb is None:
        return None
    while tb.tb_next is not None:
        tb = tb.tb_next
    frame = tb.tb_frame
    if frame.f_globals.get("__name__") != "__main__":
        return None
    code = frame.f_code
    qualname = getattr(code, "co_qualname", code.co_name)
    name = qualname.replace(".<locals>", "").split(".")[0]
    if name == "<module>":
        return None
    first = (linecache.getlines(code.co_filename) or [""])[0]
    number = _EXERCISE.match(first.strip())
    label = f"Exercise {number.group(1)} ({name})" if number else f"{name}"
    return f"{label} is not written yet: replace `raise NotImplementedError()` in its cell with your code."


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
