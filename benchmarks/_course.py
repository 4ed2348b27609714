"""The released course the grading benchmarks grade into, built as ``make release`` builds one.

``benchmarks/grading.py`` and ``similarity.py`` need an nbgrader course (sources, release, gradebook) for one section;
:func:`released` writes it afresh under ``_build/benchmarks/`` with :func:`autograder.release.release`, so that a
benchmark measures the grader against this checkout's course and imports nothing from the test suite.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from autograder import release
from course.section import section

FOLDER = Path(__file__).resolve().parent.parent / "_build" / "benchmarks"


def released(slug: str, folder: Path = FOLDER) -> Path:
    """A course holding section ``slug`` alone, released into ``folder/course-<slug>`` (what was there is replaced);
    copy it before grading into it."""
    course = folder / f"course-{slug}"
    shutil.rmtree(course, ignore_errors=True)
    course.mkdir(parents=True)
    release.release(course, [section(slug)])
    return course
