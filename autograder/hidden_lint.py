"""Lint the hidden tests for undefined names, as the rest of the code is linted (``make lint``).

A hidden test runs after its cell's visible part, in a namespace of its own that holds the notebook's names (the
student's answers, ``checks``, ``torch``, what the course's cells imported: :mod:`autograder.sandboxed.guard`).
ruff cannot know those names, so ``pyproject.toml`` turns its undefined-name rule off for ``autograder/sections``;
this module turns it back on, file by file, with the names the notebook binds before the test (every code cell up to
and including the test cell's visible part, stubs answered) and those IPython gives a kernel as its builtins. A
misspelt name in a hidden test is then an error here, not a surprise when the test first runs.

The section's shared helpers come from an explicit ``from _common import ...`` line (which the assembler replaces
by ``_common.py``'s text: :func:`autograder.assemble.hidden_tests`); ``_common.py`` itself is linted with the names
of the notebook's first test cell.

    python -m autograder.hidden_lint          # every section; exit status 1 when a name is undefined
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from autograder import assemble
from course import notebooks as nbs
from course.section import Section, sections

#: What a Jupyter kernel's namespace holds before any cell runs (IPython's additions to Python's builtins).
KERNEL_NAMES = ("display", "get_ipython", "In", "Out", "exit", "quit")
#: ruff's undefined-name rules: undefined name, undefined name in ``__all__``, local used before assignment.
RULES = "F821,F822,F823"


def notebook_names(section: Section, grade: str | None = None) -> set[str]:
    """The names the section's solved notebook binds at top level before test cell ``grade``'s hidden part runs
    (with ``grade`` None: before the first test cell's)."""
    steps = _names_by_test(section)
    if grade is None:
        grade = next(iter(steps), None)
    if grade not in steps:
        raise KeyError(f"{section.slug} has no test cell {grade!r}; its test cells are: {', '.join(steps)}")
    return set(steps[grade])


def _names_by_test(section: Section) -> dict[str, set[str]]:
    """For each test cell of the section, in order, the names bound up to and including its visible part."""
    names: set[str] = set()
    steps: dict[str, set[str]] = {}
    for cell in assemble.solved(section.read(), section).cells:
        if cell.cell_type != "code":
            continue
        try:
            names |= _top_level_names(ast.parse(_without_magics(cell.source)))
        except SyntaxError:
            pass
        if nbs.role(cell) == "test":
            steps[nbs.grade_id(cell)] = set(names)
    return steps


def _without_magics(source: str) -> str:
    """The cell's Python: IPython's line magics and shell escapes (``%timeit``, ``!pip``) left out."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


def _top_level_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        else:
            names |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return names


def lint_file(path: Path, names: set[str]) -> list[str]:
    """ruff's undefined-name findings for ``path``, given that ``names`` are defined (one line each)."""
    ruff = Path(sys.executable).with_name("ruff")
    builtins = sorted(names | set(KERNEL_NAMES))
    cmd = [str(ruff), "check", "--isolated", "--no-cache", "--select", RULES, "--output-format", "concise"]
    cmd += ["--config", f"builtins = {builtins!r}", str(path)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        raise RuntimeError(f"ruff failed on {path}: {done.stderr.strip()}")
    return [line for line in done.stdout.splitlines() if ": F82" in line]


def lint_section(section: Section) -> list[str]:
    """Every undefined name in the section's hidden tests and ``_common.py``."""
    steps = _names_by_test(section)
    first = next(iter(steps.values()), set())
    found: list[str] = []
    if section.hidden_common.exists():
        found += lint_file(section.hidden_common, first)
    for path in sorted(section.grading_dir.glob("test_*.py")):
        found += lint_file(path, steps.get(path.stem, first))
    return found


def lint_shared() -> list[str]:
    """Every undefined name in the course's shared probes (``autograder/sections/_shared.py``), given the names the
    first hidden test of the first section has (the notebook's setup: ``checks``, ``torch``...)."""
    first = sections()[0]
    steps = _names_by_test(first)
    return lint_file(first.shared_helpers, next(iter(steps.values()), set()))


def main(argv=None) -> int:
    found = lint_shared() + [line for section in sections() for line in lint_section(section)]
    for line in found:
        print(line)
    print(f"hidden tests: {len(found)} undefined name(s)" if found else "hidden tests: no undefined name")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
