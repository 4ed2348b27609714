"""How a failure is said to a student: the messages of the checks, and the sentences that replace the tracebacks of
an unanswered stub or of the common crashes of an answer (D2L 11.1-11.9). :mod:`qkv.checks` uses them, and its
``install`` shows them in IPython.

References to torch and to builtins are captured when this module is first imported (in the notebook's first, locked
cell, through :mod:`qkv.checks`), before any student code runs.
"""

from __future__ import annotations

import inspect
import linecache
import re
import textwrap

import torch

__all__ = ["WIDTH", "message", "explain", "stub_message"]

#: The widest line of a failure message. ``nbgrader validate`` indents each line of an error by 4 spaces
#: and cuts what passes 87 characters (``Validator.width`` 90, less 3 for "..."): 83 + 4 = 87.
WIDTH = 83

_NONE_HINT = (
    "a function or method that ends without `return ...` gives None: make yours (forward too) return its result"
)

# Pristine references, captured at import.
_Tensor = torch.Tensor
_Module = torch.nn.Module
_shape = torch.Tensor.shape.__get__ if hasattr(torch.Tensor.shape, "__get__") else None
_type, _isinstance, _tuple, _len = type, isinstance, tuple, len


def _shape_of(x) -> tuple:
    return _tuple(_shape(x)) if _shape else _tuple(x.shape)


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


_EXERCISE = re.compile(r"^#\s*Exercise\s+(\d+)\b")
_TEST = re.compile(r"^#\s*Test of exercise\s+(\d+)\b", re.I)
#: The errors :func:`explain` may recognise when a cell raises them; any other keeps IPython's traceback.
_EXPLAINED = (AttributeError, TypeError, RuntimeError, IndexError, ValueError)


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
