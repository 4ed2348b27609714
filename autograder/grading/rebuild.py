"""Rebuilding what runs: the instructor's release notebook with only the submission's answers pasted in.

Never trust the submitted notebook's structure. What runs is rebuilt from the instructor's copy (the release
notebook, then nbgrader's ``OverwriteCells`` puts the hidden tests back from the gradebook); only the sources of the
submission's answer cells (nbgrader ``solution`` cells, matched by grade_id and cell type) are taken. Edited locked
cells and forged metadata are ignored (the course's own cells run) and reported: an edit is a change to a cell's
source, type or grading role, or to a key only a hand could change (:data:`HAND_KEYS`), decided with nbgrader's own
checksum function; a derived key that a tool did not keep is never an edit, so that every door a student takes (the
release, the book's download, Colab, jupytext) grades.

Reading cells: the course's own notebooks (the release, and the notebook rebuilt from it, whose metadata is the
release's) are read with nbgrader's ``nbgrader.utils.is_solution`` / ``is_locked``. A submission's cells are read
by :func:`untrusted_meta` and :func:`untrusted_is_answer` instead, because nbgrader's helpers assume well-formed
metadata (``cell.metadata['nbgrader'].get(...)``). A submitted cell whose ``metadata.nbgrader`` is a string, a
list or ``null``, which nbformat reads without complaint, makes them raise ``AttributeError``; one whose
``metadata`` is a list, ``TypeError``. ``tests/grading/test_grade_cli.py`` checks both, and that :func:`rebuild` takes
such a notebook in its stride: a malformed answer cell counts as missing (its stub is graded), a malformed locked
cell as deleted.
"""

from __future__ import annotations

import copy

import nbformat

from autograder import gradebook
from autograder.nbcourse import Course
from autograder.submissions import Submission

#: The nbgrader metadata a student could change only by hand (in a cell's metadata editor): a key of these that
#: differs from the course's is an edit. The others are derived (``checksum``, ``schema_version``, ``cell_type``:
#: nbgrader writes them), and a notebook from a tool that does not keep them (a jupytext conversion of the page,
#: an older notebook, one saved by Colab or VS Code) lacks them; they are never counted against the student.
HAND_KEYS = ("grade", "solution", "locked", "task", "points")

#: What a student who cannot be graded is told to do (the notebook of every door: course/student_notebook.py).
RECOVER = (
    "To recover: open the section's notebook again where you got it (the book's download button, its Colab "
    "button, or your course's hub), paste your answers into its answer cells, save it and hand it in again."
)


def untrusted_meta(cell) -> dict:
    """The nbgrader metadata of a submitted cell, ``{}`` whatever shape the cell or its metadata has
    (see this module's docstring: nbgrader's own helpers raise on malformed metadata)."""
    meta = cell.get("metadata", {}) if isinstance(cell, dict) else {}
    nbg = meta.get("nbgrader", {}) if isinstance(meta, dict) else {}
    return nbg if isinstance(nbg, dict) else {}


def untrusted_is_answer(cell) -> bool:
    """Whether a submitted cell says it is an answer (nbgrader ``solution``) cell, whatever its shape."""
    return bool(untrusted_meta(cell).get("solution"))


def _same(key: str, theirs, ours) -> bool:
    if key == "points":
        try:
            return float(theirs) == float(ours or 0)
        except (TypeError, ValueError):
            return False
    return theirs is bool(ours) if isinstance(theirs, bool) else theirs == ours


def hand_edits(course_cell, theirs) -> list[str]:
    """The :data:`HAND_KEYS` that the submitted cell ``theirs`` holds with another value than the course's
    ``course_cell`` (a key it lacks is not an edit: see :data:`HAND_KEYS`)."""
    ours, their_meta = course_cell.metadata.get("nbgrader", {}), untrusted_meta(theirs)
    return [f"metadata {k}" for k in HAND_KEYS if k in their_meta and not _same(k, their_meta[k], ours.get(k))]


def locked_edits(course_cell, theirs) -> list[str]:
    """What was edited in a locked (or test) cell: empty when nbgrader's own checksum
    (``nbgrader.utils.compute_checksum``) of the submitted cell, its derived keys taken from the course's, equals
    the course's, and no key of :data:`HAND_KEYS` differs."""
    from nbgrader.utils import compute_checksum

    ours = course_cell.metadata["nbgrader"]
    their_meta = untrusted_meta(theirs)
    source, kind = theirs.get("source", ""), theirs.get("cell_type")
    meta = {**ours, **{k: their_meta[k] for k in HAND_KEYS if k in their_meta}}
    changed = []
    if kind != course_cell.cell_type:
        changed.append("cell type")
    if source != course_cell.source:
        changed.append("source")
    changed += hand_edits(course_cell, theirs)
    if not changed:
        probe = nbformat.from_dict({"cell_type": kind, "source": source, "metadata": {"nbgrader": meta}})
        try:
            differs = compute_checksum(probe) != ours.get("checksum", compute_checksum(course_cell))
        except (TypeError, ValueError, KeyError):
            differs = True
        if differs:
            changed.append("contents")
    return changed


def not_this_notebook(release: nbformat.NotebookNode, submitted: nbformat.NotebookNode) -> str | None:
    """Why ``submitted`` cannot be graded as ``release`` at all, in the words a student uses, or None.

    A notebook that holds none of the release's answer and test cells is another section's notebook, or one whose cells
    lost nbgrader's metadata (copied into a new notebook, or saved by a tool that drops it): grading it would call
    every locked cell deleted. It is an invalid notebook, with what to do."""
    from nbgrader.utils import is_grade, is_solution

    # The exercises' cells (answers and tests): every section shares a locked cell named "setup".
    ours = {c.metadata.nbgrader["grade_id"] for c in release.cells if is_solution(c) or is_grade(c)}
    theirs = [untrusted_meta(c).get("grade_id") for c in submitted.cells]
    theirs = [g for g in theirs if isinstance(g, str)]
    if not ours or ours & set(theirs):
        return None
    if not theirs:
        return (
            "none of its cells carries nbgrader's metadata (the cells were copied into a new notebook, or the "
            "editor it was saved with dropped the metadata), so its answers cannot be found. " + RECOVER
        )
    everyone = {c.metadata.nbgrader["grade_id"] for c in release.cells if c.get("metadata", {}).get("nbgrader")}
    shown = ", ".join(list(dict.fromkeys(g for g in theirs if g not in everyone))[:6])
    return (
        f"this is another notebook: none of its exercises is this assignment's (it holds {shown}). Hand in "
        "this assignment's notebook, under its own name. " + RECOVER
    )


def rebuild(release: nbformat.NotebookNode, submitted: nbformat.NotebookNode | None):
    """The notebook to run: the instructor's ``release`` with the submission's answers pasted in.

    Returns ``(notebook, notes, tampered)``: ``notes`` are remarks for the result (deleted,
    duplicated or retyped answer cells, another kernel), ``tampered`` the locked cells or
    metadata the submission changed by hand (ignored: the instructor's version is what runs).
    """
    from nbgrader.utils import is_locked, is_solution  # for the course's cells only (see this module's docstring)

    nb = copy.deepcopy(release)
    notes, tampered = [], []
    if submitted is None:
        return nb, notes, tampered
    by_id: dict[str, list] = {}
    for cell in submitted.cells:
        gid = untrusted_meta(cell).get("grade_id")
        if isinstance(gid, str):
            by_id.setdefault(gid, []).append(cell)
    for gid, cells in sorted(by_id.items()):
        if len(cells) > 1:
            notes.append(f"grade_id {gid!r} appears {len(cells)} times: the first one was used")
    lost = False
    for cell in nb.cells:  # the course's cells: well-formed, read with nbgrader's helpers
        meta = cell.metadata.get("nbgrader", {})
        gid = meta.get("grade_id")
        if not gid:
            continue
        theirs = by_id.get(gid, [None])[0]
        if is_solution(cell):
            if theirs is None:
                notes.append(f"answer cell {gid!r} is missing: its stub was graded")
                lost = True
            elif theirs.get("cell_type") != cell.cell_type or not untrusted_is_answer(theirs):
                notes.append(f"answer cell {gid!r} changed type or role: its stub was graded")
                lost = True
            else:
                cell.source = theirs.get("source", "")
                forged = hand_edits(cell, theirs)
                if forged:
                    tampered.append(f"{gid} ({', '.join(forged)} changed)")
        elif is_locked(cell):
            if theirs is None:
                tampered.append(f"{gid} (deleted)")
                continue
            changed = locked_edits(cell, theirs)
            if changed:
                tampered.append(f"{gid} ({', '.join(changed)} changed)")
    if lost:
        notes.append(RECOVER)
    their_meta = submitted.get("metadata")
    their_kernel = their_meta.get("kernelspec") if isinstance(their_meta, dict) else None
    # Colab and VS Code write a kernelspec of their own for the same Python kernel ("Python 3", no language):
    # only another kernel's name is worth a note.
    their_name = their_kernel.get("name") if isinstance(their_kernel, dict) else None
    if their_name != release.metadata.get("kernelspec", {}).get("name"):
        notes.append("kernelspec changed: the course's kernel was used")
    return nb, notes, tampered


def restore_hidden(nb, course: Course, sub: Submission):
    """nbgrader's own sanitising step on the rebuilt notebook: it puts the hidden tests back into the
    test cells (from the gradebook) and the checksums and points into the metadata."""
    from nbgrader.preprocessors import CheckCellMetadata, OverwriteCells

    resources = gradebook.resources_for(course, sub)
    for pp in (OverwriteCells, CheckCellMetadata):
        nb, resources = gradebook.quiet(pp(config=course.config)).preprocess(nb, resources)
    return nb
