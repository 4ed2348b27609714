"""The student's notebook of a section: one notebook, whatever the door a student takes.

A student gets a section's ``.ipynb`` from nbgrader's release (``make release``, a JupyterHub exchange), from the
book's download button, from Colab (``make notebooks``, with an install cell in front) or from the public
repository. :func:`student_notebook` builds it, and every door uses it (:mod:`publish.colab`,
:mod:`publish.build_book`; the release is checked against it by :mod:`autograder.release`), so that the grader sees
the same cells and the same nbgrader metadata from every door.

What it holds: the cells of ``book/<slug>.md`` without outputs, less the book's hidden checks of its own prose
(tagged ``book-check``: :data:`course.notebooks.BOOK_CHECK`), each with an id derived from its text (writing again
changes only the cells that changed), and the nbgrader metadata that ``nbgrader generate_assignment`` writes into a
release: nbgrader's own preprocessors lock the cells (``deletable``/``editable``) and compute each graded cell's
checksum, exactly as they do in the release.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import nbformat

from course import notebooks as nbs
from course.section import Section


def student_notebook(section: Section) -> nbformat.NotebookNode:
    """``section``'s notebook as a student gets it from every door (see the module docstring)."""
    return page_notebook(section.path)


def page_notebook(path: Path) -> nbformat.NotebookNode:
    """The notebook of the book's page ``path`` (a MyST text notebook) as every door gives it: a section's is
    :func:`student_notebook`; a page without exercises (the chapter at a glance) is built the same way, and
    nbgrader's preprocessors leave it as it is."""
    from nbgrader.preprocessors import CheckCellMetadata, ComputeChecksums, LockCells

    nb = nbs.read(path)
    nb.cells = [cell for cell in nb.cells if not nbs.is_book_check(cell)]  # the book's checks of its own prose
    nb.metadata.pop("jupytext", None)
    nb.metadata.pop("trains", None)  # the course's list of the models the page trains (course.section.Section.trains)
    nb.metadata["language_info"] = nbs.language_info()
    seen: dict[str, int] = {}
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        digest = hashlib.sha1(f"{cell.cell_type}\n{cell.source}".encode()).hexdigest()[:12]
        seen[digest] = seen.get(digest, 0) + 1
        cell.id = digest if seen[digest] == 1 else f"{digest}-{seen[digest]}"
    resources: dict = {}
    # The preprocessors of nbgrader's release that touch what a student's notebook holds (generate_assignment's
    # LockCells, CheckCellMetadata, ComputeChecksums; the others clear solutions and hidden tests, which the
    # book never holds).
    for preprocessor in (LockCells(), CheckCellMetadata(), ComputeChecksums(), CheckCellMetadata()):
        nb, resources = preprocessor.preprocess(nb, resources)
    return nb


def differences(ours: nbformat.NotebookNode, theirs: nbformat.NotebookNode, limit: int = 5) -> list[str]:
    """Where ``theirs`` is not the notebook ``ours`` (cells, their ids, types, sources and metadata, and the
    notebook's kernel): empty when they are the same notebook. Outputs are not compared."""
    found = []
    if len(ours.cells) != len(theirs.cells):
        found.append(f"{len(theirs.cells)} cells instead of {len(ours.cells)}")
    for i, (a, b) in enumerate(zip(ours.cells, theirs.cells)):
        for key in ("id", "cell_type", "source", "metadata"):
            if a.get(key) != b.get(key):
                found.append(f"cell {i} ({nbs.grade_id(a) or a.cell_type}): {key} differs")
    for key in ("kernelspec", "language_info"):
        if ours.metadata.get(key) != theirs.metadata.get(key):
            found.append(f"notebook metadata {key} differs")
    return found[:limit] + ([f"and {len(found) - limit} more"] if len(found) > limit else [])
