"""Run a section notebook's cells in this process, with chosen answers, and report each test.

This is how ``tests/`` proves the grading sound without a kernel per case:
for every grade_id, the solution passes the visible and hidden tests, the
untouched stub fails them, and every mutant fails the hidden tests. (The real
notebooks are also run in Jupyter kernels, by nbval and by the grader.)

Conventions the book follows and ``tests/test_book_structure.py`` checks: the
test cell of stub ``G`` has grade_id ``test_G``; hidden tests live in
``autograder/sections/<module>/test_G.py`` (:class:`course.section.Section`).
"""

from __future__ import annotations

import functools
import os
import traceback
from dataclasses import dataclass, field

from autograder import assemble
from course import notebooks as nbs


@dataclass
class TestOutcome:
    """What one test cell did: its visible part, then its hidden part (None when not run)."""

    visible_error: str | None = None
    hidden_error: str | None = None
    hidden_ran: bool = False

    @property
    def visible_passed(self) -> bool:
        return self.visible_error is None

    @property
    def hidden_passed(self) -> bool:
        return self.hidden_ran and self.hidden_error is None


@dataclass
class Run:
    tests: dict[str, TestOutcome] = field(default_factory=dict)
    demo_errors: dict[int, str] = field(default_factory=dict)


@functools.lru_cache(maxsize=32)
def _notebook(path: str, mtime: float):
    """The parsed section notebook (parsing MyST is slow; the cache is keyed by modification time)."""
    return nbs.read(path)


def _exec(source: str, namespace: dict, label: str) -> str | None:
    try:
        exec(compile(source, label, "exec"), namespace)  # noqa: S102 (trusted course code)
    except BaseException as err:  # noqa: BLE001 (a student's stub may raise anything)
        if isinstance(err, KeyboardInterrupt):
            raise
        return "".join(traceback.format_exception_only(type(err), err)).strip()
    return None


def run_section(
    slug: str, *, answers: dict[str, str | None] | None = None, until: str | None = None, hidden: bool = True
) -> Run:
    """Execute ``book/<slug>.md`` top to bottom in a fresh namespace.

    ``answers`` maps a stub's grade_id to the source that replaces the whole
    stub cell (a mutant is written as a student would write the cell), or to
    ``None`` to leave the stub as the student receives it; other stubs are
    filled from the section's solutions. Stops after test cell ``until``.
    Plain cells must not fail (a failure raises ``RuntimeError``), except
    cells tagged ``uses-answers``, whose errors are recorded.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.environ.setdefault("MPLBACKEND", "Agg")
    answers = answers or {}
    sec = assemble.as_section(slug)
    solutions = assemble.solutions_module(sec)
    path = sec.path
    nb = _notebook(str(path), path.stat().st_mtime)
    namespace: dict = {"__name__": "__main__"}
    run = Run()
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        role, grade = nbs.role(cell), nbs.grade_id(cell)
        label = f"<{slug} cell {index} {grade or ''}>"
        try:
            if role == "stub":
                if grade in answers:
                    source = cell.source if answers[grade] is None else answers[grade]
                else:
                    source = assemble.fill_stubs(cell.source, grade, solutions, False)
                _exec(source, namespace, label)
            elif role == "test":
                outcome = TestOutcome(visible_error=_exec(cell.source, namespace, label))
                extra = assemble.hidden_tests(sec, grade) if hidden else None
                if extra is not None:
                    outcome.hidden_ran = True
                    outcome.hidden_error = _exec(extra, namespace, label + " hidden")
                run.tests[grade] = outcome
                if grade == until:
                    break
            else:
                error = _exec(cell.source, namespace, label)
                if error:
                    if nbs.USES_ANSWERS in cell.metadata.get("tags", []):
                        run.demo_errors[index] = error
                    else:
                        raise RuntimeError(f"{slug}: cell {index} failed, and it is not a stub or a test:\n{error}")
        finally:
            plt.close("all")
    return run
