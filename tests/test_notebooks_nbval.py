"""nbval proves every notebook runs in a real Jupyter kernel: solved ones clean, student ones failing only in
their test cells (and the demos that call the student's answers)."""

from __future__ import annotations

import subprocess
import sys

import nbformat
import pytest

from course import notebooks as nbs
from course.section import sections
from tests.support.nbval_prepare import prepare

SECTIONS = sections()


def _nbval(path):
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "--nbval-lax",
        "-q",
        "-p",
        "no:cacheprovider",
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
