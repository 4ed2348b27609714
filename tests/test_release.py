"""The nbgrader round trip: assembled sources -> nbgrader generate_assignment -> release == book/."""

from __future__ import annotations

import nbformat
import pytest

from autograder import assemble, course
from autograder import notebooks as nbs

SECTIONS = nbs.sections()


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    root = tmp_path_factory.mktemp("course")
    paths = course.release(root)
    return root, {p.parent.name: nbformat.read(p, as_version=4) for p in paths}


@pytest.mark.parametrize("section", SECTIONS, ids=lambda s: s.slug)
def test_release_equals_book_cell_for_cell(released, section):
    _, notebooks = released
    release, book = notebooks[section.assignment], nbs.read(section.path)
    assert len(release.cells) == len(book.cells)
    for i, (r, b) in enumerate(zip(release.cells, book.cells)):
        assert r.cell_type == b.cell_type, f"cell {i}"
        assert r.source == b.source, f"cell {i} ({nbs.grade_id(b)}) differs between release and book"
        for key in ("grade_id", "points", "locked", "solution", "grade"):
            assert nbs.nbgrader_meta(r).get(key) == nbs.nbgrader_meta(b).get(key), f"cell {i}: nbgrader {key}"


@pytest.mark.parametrize("section", SECTIONS, ids=lambda s: s.slug)
def test_source_holds_solutions_and_hidden_tests_and_release_does_not(released, section):
    root, notebooks = released
    source = nbformat.read(root / "source" / section.assignment / f"{section.slug}.ipynb", as_version=4)
    text = "\n".join(c.source for c in source.cells)
    assert assemble.BEGIN_SOLUTION in text and assemble.BEGIN_HIDDEN in text
    released_text = "\n".join(c.source for c in notebooks[section.assignment].cells)
    assert "BEGIN SOLUTION" not in released_text and "HIDDEN TESTS" not in released_text
    for path in (assemble.HIDDEN / assemble.module_name(section.slug)).glob("*.py"):
        first = next(line for line in path.read_text().splitlines() if line.strip() and not line.startswith("#"))
        assert first in text and first not in released_text, f"{path.name} in source, not in release"
