"""nbval proves every student notebook runs in a real Jupyter kernel, failing only in its test cells (and the demos
that call the student's answers). That run, in the book's setting, is also what the smoke book shows
(``tests/support/nbval_runs.py``), so that the student notebook is executed once per session.

The solved notebook is executed once too, by ``tests/notebooks/test_grading_answers.py``: in the section's process,
in the grader's IPython shell, hidden tests included, no cell allowed to fail; every mutant and variant forks from it.
(It also ran here, in a second kernel, until that run was shared: issue 27.) ``prepare`` still writes it, with the
tags nbval would need, for whoever wants to run it in Jupyter."""

from __future__ import annotations

import nbformat
import pytest

from course import notebooks as nbs
from course.section import sections
from tests.support import nbval_runs
from tests.support.nbval_prepare import prepare

SECTIONS = sections()


@pytest.mark.slow
@pytest.mark.parametrize("section", SECTIONS, ids=lambda s: s.slug)
def test_student_notebook_runs_under_nbval(section):
    """The student notebook's run is the one the smoke book shows (``tests/support/nbval_runs.py``): made once per
    session, by this test or by the book's build, whichever asks first."""
    result = nbval_runs.student(section)
    assert result.returncode == 0, f"nbval failed on the student notebook {section.slug}:\n{result.stdout[-4000:]}"
    assert " passed" in result.stdout


def test_student_notebook_tags_only_tests_and_answer_demos(tmp_path):
    section = SECTIONS[0]
    nb = nbformat.read(prepare(section, tmp_path)["student"], as_version=4)
    tagged = [c for c in nb.cells if "raises-exception" in c.metadata.get("tags", [])]
    assert tagged and all(nbs.role(c) == "test" or nbs.USES_ANSWERS in c.metadata["tags"] for c in tagged)


def test_raises_exception_is_tagged_once_for_students_and_never_in_the_solved_notebook(tmp_path):
    """The book already tags test cells raises-exception (Run All reaches every exercise): the student notebook
    keeps one tag, and the solved one has none, so that nbval fails there when a test fails."""
    for section in SECTIONS:
        paths = prepare(section, tmp_path)
        student = nbformat.read(paths["student"], as_version=4)
        tests = [c for c in student.cells if nbs.role(c) == "test"]
        assert tests and all(c.metadata["tags"].count("raises-exception") == 1 for c in tests), section.slug
        solved = nbformat.read(paths["solutions"], as_version=4)
        tagged = [nbs.grade_id(c) for c in solved.cells if "raises-exception" in c.metadata.get("tags", [])]
        assert not tagged, f"{section.slug}: the solved notebook lets these cells fail: {tagged}"
