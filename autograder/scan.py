"""A static scan of the answer cells for code that reaches for the grader's own objects.

Hidden tests run in the notebook, beside the student's code: an answer that rebinds the checks
(``checks.check_close = lambda *a, **k: None``), patches ``torch``, ``builtins`` or ``sys.modules``, or goes
looking for objects through ``gc``, ``inspect`` or frames can make a wrong answer look right. Whatever such a
notebook scores, the report lists these lines for a person to look at (``flags.csv``, and a table in
``report.html``). The scan reads the source only (:mod:`ast`); it runs nothing and decides no grade.

What is flagged, per line:

* an assignment, augmented assignment, ``del`` or ``setattr``/``delattr`` that changes an attribute or item of
  a watched name (:data:`WATCHED`, and any name a cell binds to one of them by ``import ... as``), or of
  ``vars(...)``/``getattr(...)`` of one;
* an assignment or ``del`` of one of the names :data:`REBOUND` (``checks = my_module``), and an import that
  binds ``checks`` to anything but ``qkv.checks``;
* an import of a module that finds objects behind the code's back (:data:`REACHING_MODULES`), and any use of
  the attributes that lead from a function or frame to its globals (:data:`REACHING_ATTRIBUTES`).

A flag is not a verdict: honest code rarely does any of this (no answer of the course's solutions does; a test
checks it), and a person decides.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

#: Names whose attributes an answer has no reason to change: the checks, the course library, the libraries the
#: hidden tests use, and the interpreter's own tables.
WATCHED = frozenset({"checks", "qkv", "ref", "torch", "nn", "F", "math", "np", "numpy", "builtins", "sys"})
#: Names that no answer has a reason to rebind (``checks = my_module``): the checks, and modules the tests use.
REBOUND = frozenset({"checks", "qkv", "torch", "builtins", "sys"})
#: Modules that find objects without being given them.
REACHING_MODULES = frozenset({"gc", "inspect", "ctypes", "builtins", "importlib"})
#: Attributes that lead from a function, frame or traceback to the namespaces around it.
REACHING_ATTRIBUTES = frozenset(
    {
        "f_globals",
        "f_locals",
        "f_back",
        "f_builtins",
        "tb_frame",
        "gi_frame",
        "cr_frame",
        "__globals__",
        "__builtins__",
        "__code__",
        "__closure__",
        "__subclasses__",
        "_getframe",
    }
)


@dataclass(frozen=True)
class Flag:
    """One line of an answer cell for a person to look at."""

    line: int  # 1-based, in the cell
    text: str  # the line, stripped
    why: str


def _root(node: ast.AST) -> ast.AST:
    """The innermost object of ``a.b[c].d``: ``a`` (or the call ``vars(a)``)."""
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return node


def _watched(node: ast.AST, watched: set[str]) -> str | None:
    """The watched name an attribute or item chain starts from, if any."""
    root = _root(node)
    if isinstance(root, ast.Name) and root.id in watched:
        return root.id
    if isinstance(root, ast.Call) and isinstance(root.func, ast.Name) and root.func.id in ("vars", "getattr"):
        if root.args and isinstance(root.args[0], ast.Name) and root.args[0].id in watched:
            return root.args[0].id
    return None


def _aliases(tree: ast.AST) -> set[str]:
    """Names bound to a watched module by an import in the cell (``import qkv.checks as c``: ``c``)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                if top in WATCHED or alias.name.split(".")[-1] in WATCHED:
                    names.add(alias.asname or top)
        elif isinstance(node, ast.ImportFrom) and node.module:
            top = node.module.split(".")[0]
            if top in WATCHED:
                names.update(alias.asname or alias.name for alias in node.names)
    return names


def scan(source: str) -> list[Flag]:
    """The lines of one answer cell that a person should look at; empty for a cell that does not parse
    (it fails its tests anyway) or that does none of the things the module docstring lists."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    watched = set(WATCHED) | _aliases(tree)
    lines = source.splitlines()
    found: dict[int, str] = {}

    def flag(node: ast.AST, why: str) -> None:
        found.setdefault(node.lineno, why)

    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = node.targets
        for target in targets:
            for part in ast.walk(target):
                if isinstance(part, ast.Attribute | ast.Subscript) and isinstance(part.ctx, ast.Store | ast.Del):
                    name = _watched(part, watched)
                    if name:
                        flag(node, f"changes {name}'s attributes or items")
                elif isinstance(part, ast.Name) and isinstance(part.ctx, ast.Store | ast.Del) and part.id in REBOUND:
                    flag(node, f"rebinds the name {part.id}")
        if isinstance(node, ast.Import | ast.ImportFrom):
            module = node.module or "" if isinstance(node, ast.ImportFrom) else ""
            for alias in node.names:
                bound = alias.asname or alias.name.split(".")[0]
                source = f"{module}.{alias.name}" if module else alias.name
                if bound == "checks" and source != "qkv.checks":
                    flag(node, f"binds the name checks to {source}, not qkv.checks")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr"):
            if node.args and _watched(node.args[0], watched):
                flag(node, f"{node.func.id} on {_watched(node.args[0], watched)}")
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in REACHING_MODULES:
                    flag(node, f"imports {alias.name}, which finds objects behind the code's back")
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in REACHING_MODULES:
            flag(node, f"imports from {node.module}, which finds objects behind the code's back")
        elif isinstance(node, ast.Attribute) and node.attr in REACHING_ATTRIBUTES:
            flag(node, f"reaches for {node.attr}")
        elif isinstance(node, ast.Name) and node.id in REACHING_ATTRIBUTES:
            flag(node, f"reaches for {node.id}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "__import__"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and str(node.args[0].value).split(".")[0] in REACHING_MODULES | WATCHED
        ):
            flag(node, f"__import__({node.args[0].value!r})")
    return [Flag(n, lines[n - 1].strip() if 0 < n <= len(lines) else "", why) for n, why in sorted(found.items())]


def describe(grade_id: str, flags: list[Flag]) -> list[str]:
    """One line per flag, as the report shows it: ``grade_id, line N: the line (why)``."""
    return [f"{grade_id}, line {f.line}: {f.text[:200]} ({f.why})" for f in flags]
