"""The assembler: book + solutions + hidden tests -> nbgrader source notebooks.

One source for every piece (docs/design.md):

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
  them holds reference helpers that several of them share, which a hidden test
  imports explicitly (``from _common import ...``, inlined by :func:`hidden_tests`), and
  ``autograder/sections/_shared.py`` the probes every section may use (``from _shared import ...``). They use
  ``checks.check_*`` and ``checks.trusted.*`` as the visible tests do; no
  rewriting is needed: when graded, each hidden block runs in a namespace of
  its own whose ``checks`` is the one the sandbox recorded before any student
  code (``autograder.sandboxed.guard.run_hidden``). So a hidden block reads only the
  notebook's names (the answers, ``checks``, the setup cell's modules) and the
  builtins, never a name another hidden block binds.
* ``autograder/sections/<module>/rubric.toml`` holds the model answer and
  rubric of every written question (:mod:`autograder.rubrics`): inside
  nbgrader's solution markers in the source notebook's answer cells, in an
  admonition after them in the solutions edition.
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

from autograder import rubrics
from autograder.sandboxed import protocol
from course import notebooks as nbs
from course.section import Section, section

ROOT = nbs.ROOT

BEGIN_SOLUTION, END_SOLUTION = protocol.BEGIN_SOLUTION, protocol.END_SOLUTION
BEGIN_HIDDEN, END_HIDDEN = protocol.BEGIN_HIDDEN, protocol.END_HIDDEN
#: The module a hidden test imports its section's shared helpers from (``autograder/sections/<module>/_common.py``).
COMMON = "_common"
#: The module a hidden test imports the course's shared probes from (``autograder/sections/_shared.py``: the device
#: probe and its helpers, the same for every section).
SHARED = "_shared"


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


def _bound_names(tree: ast.AST) -> set[str]:
    """Names a piece of code binds itself: assignments, loop and ``with`` targets, imports, nested definitions."""
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            bound.add(node.id)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return bound


def component_body(obj, answers: ModuleType) -> str:
    """The body that answers a stub: ``obj``'s, as :func:`function_body` reads it.

    Where ``obj`` is a ``qkv`` component that the solutions module imports (the answer *is* the reference), its
    body was written against its own module's names, which the notebook does not have: ``masked_softmax`` in
    ``qkv.attention`` is, in the 11.3 notebook, the student's own Exercise 1. Every name the body reads from its
    module (a function, class or constant defined there) is therefore qualified with the name under which the
    solutions module, like the notebook, imports that module (``ref.masked_softmax`` where the notebook has
    ``from qkv import attention as ref``). Imported names (``torch``, ``math``, ``nn``) stay as they are: the
    notebook imports them under the same names, and the tests run every solved notebook.
    """
    body = function_body(obj)
    home = sys.modules.get(getattr(obj, "__module__", None) or "")
    if home is None or home is answers:
        return body
    tree = ast.parse(body)
    local = _bound_names(tree) | set(inspect.signature(obj).parameters)
    own = vars(home)

    def defined_in_home(name: str) -> bool:
        value = own[name]
        return not isinstance(value, ModuleType) and getattr(value, "__module__", home.__name__) == home.__name__

    reads = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in local and n.id in own
    ]
    reads = [n for n in reads if defined_in_home(n.id)]
    if not reads:
        return body
    aliases = sorted(name for name, value in vars(answers).items() if value is home)
    if not aliases:
        names = ", ".join(sorted({n.id for n in reads}))
        raise AssemblyError(
            f"{answers.__file__} answers a stub with {home.__name__}.{obj.__qualname__}, whose body uses {names} "
            f"from {home.__name__}: import that module under the notebook's name for it "
            f"(e.g. 'from {home.__name__.rpartition('.')[0]} import {home.__name__.rpartition('.')[2]} as ref')"
        )
    lines = body.splitlines()
    for node in sorted(reads, key=lambda n: (n.lineno, n.col_offset), reverse=True):
        line = lines[node.lineno - 1]
        lines[node.lineno - 1] = f"{line[: node.col_offset]}{aliases[0]}.{node.id}{line[node.end_col_offset :]}"
    return "\n".join(lines)


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
            body = component_body(_resolve(answers, qualname), answers)
        text = textwrap.indent(body, indent, lambda line: True)
        if markers:
            text = f"{indent}{BEGIN_SOLUTION}\n{text}\n{indent}{END_SOLUTION}"
        pieces += [source[last : match.start()], text]
        last = match.end()
    pieces.append(source[last:])
    return "".join(pieces)


def hidden_tests(which: Section | str, grade: str) -> str | None:
    """The hidden tests of test cell ``grade``, with the helpers they import inlined (``from _common import ...``:
    that statement is replaced by the section's ``_common.py``; ``from _shared import ...``, by the course's
    ``autograder/sections/_shared.py``), so each hidden block runs on its own in its cell. A hidden test that imports
    neither gets none of them."""
    sec = as_section(which)
    path = sec.hidden_test(grade)
    if not path.exists():
        return None
    text = path.read_text(encoding="utf-8").strip("\n")
    sources = {COMMON: sec.hidden_common, SHARED: sec.shared_helpers}
    found = [n for n in ast.parse(text).body if isinstance(n, ast.ImportFrom) and n.module in sources]
    lines = text.splitlines()
    for node in sorted(found, key=lambda n: n.lineno, reverse=True):  # from the bottom: line numbers stay right
        helpers = sources[node.module]
        if [n.module for n in found].count(node.module) > 1 or not helpers.exists():
            where = f"{path.relative_to(ROOT)}, line {node.lineno}"
            raise AssemblyError(
                f"{where}: import the helpers once, from {node.module}, which must exist ({helpers.relative_to(ROOT)})"
            )
        lines[node.lineno - 1 : node.end_lineno] = helpers.read_text(encoding="utf-8").strip("\n").splitlines()
    return "\n".join(lines)


def solved(
    nb: nbformat.NotebookNode,
    which: Section | str,
    *,
    markers: bool = False,
    hidden: bool = False,
    answers: ModuleType | None = None,
    model_answers: bool = False,
) -> nbformat.NotebookNode:
    """A copy of a section notebook with every stub answered.

    ``markers`` wraps answers in nbgrader's solution markers, and puts each written question's model answer and
    rubric (:mod:`autograder.rubrics`) into its answer cell inside the same markers (the nbgrader source notebook);
    ``hidden`` appends each test cell's hidden tests inside nbgrader's hidden-test markers; ``model_answers``
    adds, after each answer cell, a markdown cell with its model answer and rubric in an admonition (the
    solutions edition of the book). ``answers`` defaults to the section's solutions module.
    """
    sec = as_section(which)
    answers = answers or solutions_module(sec)
    written = rubrics.load(sec) if markers or model_answers else {}
    out = copy.deepcopy(nb)
    cells = []
    for cell in out.cells:
        cells.append(cell)
        r, grade = nbs.role(cell), nbs.grade_id(cell)
        if r == "stub":
            cell.source = fill_stubs(cell.source, grade, answers, markers)
        elif r == "test" and hidden:
            extra = hidden_tests(sec, grade)
            if extra:
                cell.source = f"{cell.source.rstrip()}\n{BEGIN_HIDDEN}\n{extra}\n{END_HIDDEN}"
        elif r == "answer" and grade in written:
            if model_answers:
                cells.append(nbformat.v4.new_markdown_cell(rubrics.admonition(written[grade])))
            if markers:
                cell.source = rubrics.solution_source(cell.source, written[grade])
    out.cells = cells
    return out
