"""Notebooks for nbval (``tests/test_notebooks_nbval.py``): each section, solved and as released.

* ``_build/nbval/solutions/<slug>.ipynb``: every stub answered, hidden tests
  included; must run clean under ``pytest --nbval-lax``.
* ``_build/nbval/student/<slug>.ipynb``: the student's notebook; its test cells
  and the demo cells that call the answers are tagged ``raises-exception``, so
  nbval proves that no other cell fails while the stubs are unanswered.
"""

from __future__ import annotations

from pathlib import Path

from autograder import assemble
from course import notebooks as nbs
from course.section import Section

OUT = nbs.ROOT / "_build" / "nbval"


def prepare(section: Section, out: Path = OUT) -> dict[str, Path]:
    paths = {}
    solved = assemble.solved(section.read(), section, hidden=True)
    paths["solutions"] = out / "solutions" / f"{section.slug}.ipynb"
    nbs.write_if_changed(solved, paths["solutions"], fmt="ipynb")
    student = nbs.read(section.path)
    for cell in student.cells:
        if nbs.role(cell) == "test" or nbs.USES_ANSWERS in cell.metadata.get("tags", []):
            cell.metadata.setdefault("tags", []).append("raises-exception")
    paths["student"] = out / "student" / f"{section.slug}.ipynb"
    nbs.write_if_changed(student, paths["student"], fmt="ipynb")
    return paths
