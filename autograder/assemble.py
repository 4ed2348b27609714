"""The assembler: book + solutions + hidden tests -> nbgrader source notebooks.

One source for every piece (DESIGN.md):

* ``book/<slug>.md`` holds the student text, with stubs written exactly as
  nbgrader writes them (``# YOUR CODE HERE`` then ``raise NotImplementedError()``).
* ``solutions/<module>.py`` (the slug with ``_`` for ``-``) answers every stub
  (every path comes from :class:`course.section.Section`).
  A stub region inside ``def f`` (or ``class C: def m``) is filled with the
  body of the object of the same qualified name in that module; where the
  answer is a ``qkv`` component the module simply imports it, so the code is
  not written twice. A region outside any function is filled from the
  module's ``CELLS[grade_id]`` string.
* ``autograder/sections/<module>/<grade_id>.py`` holds the hidden tests of the
  test cell ``grade_id``, as plain Python; an optional ``_common.py`` beside
  them holds reference helpers that several of them share.
* ``autograder/sections/<module>/mutants.toml`` holds known-wrong answers
  (mutants), each a small named edit of a solved stub cell with the mistake
  it models; ``autograder.mutants`` applies them to what ``fill_stubs``
  returns.

``fill_stubs`` is the one mechanism that turns a stub cell into a solved cell,
used for the solutions edition, the tests, and (with nbgrader's markers) the
nbgrader source notebooks.
"""

from __future__ import annotations

import ast
import copy
import importlib.util
import inspect
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import nbformat

from course import notebooks as nbs
from course.section import Section, section

ROOT = nbs.ROOT

BEGIN_SOLUTION, END_SOLUTION = "### BEGIN SOLUTION", "### END SOLUTION"
BEGIN_HIDDEN, END_HIDDEN = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"


class AssemblyError(RuntimeError):
    """A stub, solution or hidden test that does not fit together; the message says which and how to fix it."""


def as_section(which: Section | str) -> Section:
    """A :class:`~course.section.Section`, given one or its slug."""
    return which if isinstance(which, Section) else section(which)


def load_module(path: Path, name: str | None = None) -> ModuleType:
    """Import a Python file by path (the solutions are a plain file, not an installed package)."""
    if not path.exists():
        raise AssemblyError(f"missing file {path}")
    name = name or f"_qkv_course_{path.parent.name}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def solutions_module(which: Section | str) -> ModuleType:
    """The section's answers, ``solutions/<module>.py``, imported."""
    sec = as_section(which)
    return load_module(sec.solutions, f"solutions_{sec.module}")


def _enclosing_function(tree: ast.AST, lineno: int) -> str | None:
    """Qualified name (``f`` or ``C.m``) of the innermost function whose body holds line ``lineno`` (1-based)."""
    best: tuple[int, str] | None = None

    def visit(node, prefix):
        nonlocal best
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                qual = f"{prefix}{child.name}"
                if child.lineno <= lineno <= child.end_lineno:
                    if not isinstance(child, ast.ClassDef) and (best is None or child.lineno >= best[0]):
                        best = (child.lineno, qual)
                    visit(child, qual + ".")

    visit(tree, "")
    return best[1] if best else None


def function_body(obj) -> str:
    """The source of a function's body, without its ``def`` line(s) and docstring, dedented."""
    try:
        source = textwrap.dedent(inspect.getsource(obj))
    except (OSError, TypeError) as err:
        raise AssemblyError(f"cannot read the source of {obj!r}: {err}") from err
    tree = ast.parse(source)
    fn = tree.body[0]
    if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
        raise AssemblyError(f"{obj!r} is not a function")
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
        if isinstance(body[0].value.value, str):
            body = body[1:]
    if not body:
        raise AssemblyError(f"{obj!r} has no body besides its docstring")
    lines = source.splitlines()
    start = body[0].lineno - 1
    # Keep comments that sit between the docstring and the first statement.
    while start > 0 and lines[start - 1].strip().startswith("#"):
        start -= 1
    return textwrap.dedent("\n".join(lines[start : fn.end_lineno]))


def _resolve(module: ModuleType, qualname: str):
    obj = module
    for part in qualname.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise AssemblyError(
                f"{module.__file__} has no {qualname!r}: define it (or import the qkv component of that name) "
                "to answer the stub of the same name"
            ) from None
    return obj


def fill_stubs(source: str, grade: str, answers: ModuleType, markers: bool) -> str:
    """Fill every stub region of a stub cell's ``source`` from the ``answers`` module.

    With ``markers``, each answer is wrapped in nbgrader's solution markers, so
    that ``nbgrader generate_assignment`` turns it back into the stub.
    """
    regions = nbs.stub_regions(source)
    if not regions:
        raise AssemblyError(f"stub cell {grade!r} has no '# YOUR CODE HERE' / 'raise NotImplementedError()' region")
    tree = ast.parse(source)
    pieces, last = [], 0
    for match in regions:
        indent = match.group("indent")
        lineno = source.count("\n", 0, match.start()) + 1
        qualname = _enclosing_function(tree, lineno)
        if qualname is None:
            cells = getattr(answers, "CELLS", {})
            if grade not in cells:
                raise AssemblyError(
                    f"stub {grade!r} has a region outside any function; add CELLS[{grade!r}] to {answers.__file__}"
                )
            body = textwrap.dedent(cells[grade]).strip("\n")
        else:
            body = function_body(_resolve(answers, qualname))
        text = textwrap.indent(body, indent, lambda line: True)
        if markers:
            text = f"{indent}{BEGIN_SOLUTION}\n{text}\n{indent}{END_SOLUTION}"
        pieces += [source[last : match.start()], text]
        last = match.end()
    pieces.append(source[last:])
    return "".join(pieces)


def hidden_tests(which: Section | str, grade: str) -> str | None:
    """The hidden tests of test cell ``grade``, preceded by the section's ``_common.py`` (reference helpers
    shared by several hidden tests) when there is one, so each hidden block runs on its own in its cell."""
    sec = as_section(which)
    path = sec.hidden_test(grade)
    if not path.exists():
        return None
    parts = [p.read_text(encoding="utf-8").strip("\n") for p in (sec.hidden_common, path) if p.exists()]
    return "\n\n".join(parts)


def solved(
    nb: nbformat.NotebookNode,
    which: Section | str,
    *,
    markers: bool = False,
    hidden: bool = False,
    answers: ModuleType | None = None,
) -> nbformat.NotebookNode:
    """A copy of a section notebook with every stub answered.

    ``markers`` wraps answers in nbgrader's solution markers; ``hidden`` appends
    each test cell's hidden tests inside nbgrader's hidden-test markers.
    ``answers`` defaults to the section's solutions module.
    """
    sec = as_section(which)
    answers = answers or solutions_module(sec)
    out = copy.deepcopy(nb)
    for cell in out.cells:
        r, grade = nbs.role(cell), nbs.grade_id(cell)
        if r == "stub":
            cell.source = fill_stubs(cell.source, grade, answers, markers)
        elif r == "test" and hidden:
            extra = hidden_tests(sec, grade)
            if extra:
                cell.source = f"{cell.source.rstrip()}\n{BEGIN_HIDDEN}\n{extra}\n{END_HIDDEN}"
    return out
