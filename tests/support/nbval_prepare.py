"""Notebooks for nbval (``tests/notebooks/test_notebooks_nbval.py``): each section, solved and as released.

* ``_build/nbval/solutions/<slug>.ipynb``: every stub answered, hidden tests
  included; must run clean under ``pytest --nbval-lax``. The book tags test
  cells and the demos that use the answers ``raises-exception`` (so that Run
  All reaches every exercise); that tag is taken off here, or nbval would let
  a failing test pass.
* ``_build/nbval/student/<slug>.ipynb``: the student's notebook; its test cells
  and the demo cells that call the answers carry ``raises-exception`` (once),
  so nbval proves that no other cell fails while the stubs are unanswered.
"""

from __future__ import annotations

from pathlib import Path

from autograder import assemble
from course import notebooks as nbs
from course.section import Section

OUT = nbs.ROOT / "_build" / "nbval"
RAISES = "raises-exception"


def _may_fail(cell) -> bool:
    """A cell that fails while a stub is unanswered: a test cell, or a demo that uses the answers."""
    return nbs.role(cell) == "test" or nbs.USES_ANSWERS in cell.metadata.get("tags", [])


def prepare(section: Section, out: Path = OUT) -> dict[str, Path]:
    paths = {}
    solved = assemble.solved(section.read(), section, hidden=True)
    for cell in solved.cells:
        if _may_fail(cell):
            cell.metadata["tags"] = [t for t in cell.metadata.get("tags", []) if t != RAISES]
    paths["solutions"] = out / "solutions" / f"{section.slug}.ipynb"
    nbs.write_if_changed(solved, paths["solutions"], fmt="ipynb")
    student = nbs.read(section.path)
    for cell in student.cells:
        if _may_fail(cell) and RAISES not in cell.metadata.get("tags", []):
            cell.metadata.setdefault("tags", []).append(RAISES)
    paths["student"] = out / "student" / f"{section.slug}.ipynb"
    nbs.write_if_changed(student, paths["student"], fmt="ipynb")
    return paths
