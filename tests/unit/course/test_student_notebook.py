"""The student's notebook of every door (course/student_notebook.py): the course, and nothing of its machinery.

``tests/grading/test_doors.py`` shows that every door gives it and that it grades; this file checks what it holds: the
page's cells without the book's hidden checks of its own prose (``book-check``), nbgrader's locks and checksums,
ids that are stable and unique, and no switch of the test suite or the grader, in it or in the page's source.
"""

from __future__ import annotations

import re

import pytest

from course import notebooks as nbs
from course.section import sections
from course.student_notebook import page_notebook, student_notebook

SECTIONS = sections()
#: Words of the course's machinery that a student's notebook and the book's pages never show.
MACHINERY = re.compile(r"QKV_TRAIN_SMOKE|smoke|NBGRADER_EXECUTION|QKV_NO_TRAIN|test suite", re.I)


@pytest.mark.parametrize("section", SECTIONS, ids=lambda s: s.slug)
def test_the_student_notebook_is_the_page_less_its_checks_with_nbgraders_locks_and_checksums(section):
    from nbgrader.utils import compute_checksum

    page, nb = nbs.read(section.path), student_notebook(section)
    kept = [c for c in page.cells if not nbs.is_book_check(c)]
    assert [(c.cell_type, c.source) for c in nb.cells] == [(c.cell_type, c.source) for c in kept]
    ids = [c.id for c in nb.cells]
    assert len(set(ids)) == len(ids) and ids == [c.id for c in student_notebook(section).cells]  # stable, unique
    for cell in nb.cells:
        if nbs.grade_id(cell):
            assert cell.metadata.nbgrader["checksum"] == compute_checksum(cell), nbs.grade_id(cell)
            assert cell.metadata.get("deletable") is False, f"{nbs.grade_id(cell)}: nbgrader locks it from deletion"
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None
    assert "jupytext" not in nb.metadata and nb.metadata["language_info"]["name"] == "python"


@pytest.mark.parametrize("section", SECTIONS, ids=lambda s: s.slug)
def test_the_books_claims_are_checks_of_the_book_and_no_page_names_the_machinery(section):
    """Every hidden cell that asserts the prose (``remove-cell`` with an ``assert``) is a ``book-check``, and the
    page's text (its prose and its cells, checks included) never names the test suite's or the grader's switches:
    a claim about a trained model asks the model whether it was trained in full (``Fitted.complete``)."""
    page = nbs.read(section.path)
    for cell in page.cells:
        tags = cell.metadata.get("tags", [])
        if cell.cell_type == "code" and "remove-cell" in tags and "assert" in cell.source:
            assert nbs.BOOK_CHECK in tags, f"{section.slug}: a hidden claim cell without the book-check tag"
    text = section.path.read_text(encoding="utf-8")
    assert not MACHINERY.findall(text), f"{section.slug} names the course's machinery: {MACHINERY.findall(text)}"


def test_pages_without_exercises_make_a_notebook_too():
    chapter = nbs.BOOK / "chapter-at-a-glance.md"
    nb = page_notebook(chapter)
    assert nb.cells and not any(nbs.grade_id(c) for c in nb.cells)
    assert [c.source for c in nb.cells] == [c.source for c in nbs.read(chapter).cells]
