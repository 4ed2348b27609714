"""nbval proves every notebook runs in a real Jupyter kernel: solved ones clean, student ones failing only in
their test cells (and the demos that call the student's answers).

The solved notebook carries its hidden tests (``tests/support/nbval_prepare.py``), so its run is also the proof that
every solution passes its visible and hidden tests and that no demo fails with the solutions (once the in-process
``test_solutions_pass_every_visible_and_hidden_test`` of ``tests/test_grading_answers.py``, which ran the same
notebook a second time)."""

from __future__ import annotations

import subprocess
import sys

import nbformat
import pytest

from course import notebooks as nbs
from course.section import sections
from tests.support.nbval_prepare import prepare

SECTIONS = sections()


#: The plugins a notebook's nbval run does not use: hypothesis's alone takes a second to import (of the 2.3 s that a
#: pytest with every installed plugin takes to start, against 0.9 s without these).
UNUSED_PLUGINS = ("cacheprovider", "hypothesispytest", "anyio", "xdist", "xdist.looponfail")


def _nbval(path):
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "--nbval-lax",
        "-q",
        *(arg for name in UNUSED_PLUGINS for arg in ("-p", f"no:{name}")),
        "--rootdir",
        str(path.parent),
        str(path),
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
@pytest.mark.parametrize("edition", ["solutions", "student"])
@pytest.mark.parametrize("section", SECTIONS, ids=lambda s: s.slug)
def test_notebook_runs_under_nbval(section, edition, tmp_path):
    path = prepare(section, tmp_path)[edition]
    result = _nbval(path)
    assert result.returncode == 0, f"nbval failed on the {edition} notebook {section.slug}:\n{result.stdout[-4000:]}"
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
