"""Every dotted name of the course's own code that a docstring cites resolves: a module, or an object in one.

Docstrings name where things live (``autograder.sandboxed.guard.Guard``, :func:`qkv.checks.install`). After a move
or a rename the old name stays in prose nobody runs; this test imports each one. It reads the docstrings of every
module of ``qkv``, ``autograder``, ``course`` and ``publish`` (functions, classes and methods too), and checks the
names in double backquotes or in a Sphinx role (:mod:, :func:, :class:, :meth:, :data:, :attr:, :exc:) whose first
part is one of those packages.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = ("qkv", "autograder", "course", "publish")
FOLDERS = {"qkv": ROOT / "lib" / "qkv", "autograder": ROOT / "autograder", "course": ROOT / "course",
           "publish": ROOT / "publish"}  # fmt: skip
NAME = re.compile(
    r"(?:``|:(?:mod|func|class|meth|data|attr|exc):`~?)(?P<name>(?:"
    + "|".join(PACKAGES)
    + r")(?:\.[A-Za-z_][A-Za-z0-9_]*)+)(?:\(\))?(?:``|`)"
)


def _modules() -> list[Path]:
    found = []
    for folder in FOLDERS.values():
        for path in sorted(folder.rglob("*.py")):
            if "sections" in path.relative_to(ROOT).parts:  # hidden tests: notebook code, not importable modules
                continue
            found.append(path)
    return found


def _docstrings(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = [tree] + [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)]
    return [doc for n in nodes if (doc := ast.get_docstring(n, clean=False))]


def resolves(dotted: str) -> bool:
    """Whether ``dotted`` is a module, or a chain of attributes from the longest importable module prefix."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False
        return True
    return False


def _cited() -> list[tuple[str, str]]:
    out = []
    for path in _modules():
        for doc in _docstrings(path):
            for match in NAME.finditer(doc):
                out.append((path.relative_to(ROOT).as_posix(), match["name"]))
    return sorted(set(out))


CITED = _cited()


def test_the_docstrings_cite_names_of_the_course():
    assert len(CITED) > 100 and ("lib/qkv/training.py", "qkv.widgets") in CITED


@pytest.mark.parametrize("where,dotted", CITED, ids=[f"{w}:{d}" for w, d in CITED])
def test_a_dotted_name_in_a_docstring_resolves(where, dotted):
    assert resolves(dotted), f"{where}'s docstring names {dotted}, which does not exist (moved or renamed?)"
