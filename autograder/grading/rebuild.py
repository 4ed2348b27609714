"""Rebuilding what runs: the instructor's release notebook with only the submission's answers pasted in.

Never trust the submitted notebook's structure. What runs is rebuilt from the instructor's copy (the release
notebook, then nbgrader's ``OverwriteCells`` puts the hidden tests back from the gradebook); only the sources of the
submission's answer cells (nbgrader ``solution`` cells, matched by grade_id and cell type) are taken. Edited locked
cells and forged metadata are ignored (the course's own cells run) and reported.

Reading cells: the course's own notebooks (the release, and the notebook rebuilt from it, whose metadata is the
release's) are read with nbgrader's ``nbgrader.utils.is_solution`` / ``is_locked``. A submission's cells are read
by :func:`untrusted_meta` and :func:`untrusted_is_answer` instead, because nbgrader's helpers assume well-formed
metadata (``cell.metadata['nbgrader'].get(...)``). A submitted cell whose ``metadata.nbgrader`` is a string, a
list or ``null``, which nbformat reads without complaint, makes them raise ``AttributeError``; one whose
``metadata`` is a list, ``TypeError``. ``tests/test_grade_cli.py`` checks both, and that :func:`rebuild` takes
such a notebook in its stride: a malformed answer cell counts as missing (its stub is graded), a malformed locked
cell as deleted.
"""

from __future__ import annotations

import copy

import nbformat

from autograder import gradebook
from autograder.nbcourse import Course
from autograder.submissions import Submission

#: nbgrader metadata that no student may change (compared with the instructor's copy).
LOCKED_KEYS = ("grade", "solution", "locked", "points", "schema_version", "checksum", "task")


def untrusted_meta(cell) -> dict:
    """The nbgrader metadata of a submitted cell, ``{}`` whatever shape the cell or its metadata has
    (see this module's docstring: nbgrader's own helpers raise on malformed metadata)."""
    meta = cell.get("metadata", {}) if isinstance(cell, dict) else {}
    nbg = meta.get("nbgrader", {}) if isinstance(meta, dict) else {}
    return nbg if isinstance(nbg, dict) else {}


def untrusted_is_answer(cell) -> bool:
    """Whether a submitted cell says it is an answer (nbgrader ``solution``) cell, whatever its shape."""
    return bool(untrusted_meta(cell).get("solution"))


def rebuild(release: nbformat.NotebookNode, submitted: nbformat.NotebookNode | None):
    """The notebook to run: the instructor's ``release`` with the submission's answers pasted in.

    Returns ``(notebook, notes, tampered)``: ``notes`` are remarks for the result (deleted,
    duplicated or retyped answer cells, a changed kernelspec), ``tampered`` the locked cells or
    metadata the submission changed (ignored: the instructor's version is what runs).
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
    for cell in nb.cells:  # the course's cells: well-formed, read with nbgrader's helpers
        meta = cell.metadata.get("nbgrader", {})
        gid = meta.get("grade_id")
        if not gid:
            continue
        theirs = by_id.get(gid, [None])[0]
        if is_solution(cell):
            if theirs is None:
                notes.append(f"answer cell {gid!r} is missing: its stub was graded")
            elif theirs.get("cell_type") != cell.cell_type or not untrusted_is_answer(theirs):
                notes.append(f"answer cell {gid!r} changed type or role: its stub was graded")
            else:
                cell.source = theirs.get("source", "")
                forged = [k for k in LOCKED_KEYS if k in meta and untrusted_meta(theirs).get(k) != meta.get(k)]
                if forged:
                    tampered.append(f"{gid} (metadata {', '.join(forged)} changed)")
        elif is_locked(cell):
            if theirs is None:
                tampered.append(f"{gid} (deleted)")
                continue
            changed = []
            if theirs.get("cell_type") != cell.cell_type:
                changed.append("cell type")
            if theirs.get("source") != cell.source:
                changed.append("source")
            changed += [
                f"metadata {k}" for k in LOCKED_KEYS if k in meta and untrusted_meta(theirs).get(k) != meta.get(k)
            ]
            if changed:
                tampered.append(f"{gid} ({', '.join(changed)} changed)")
    their_meta = submitted.get("metadata")
    if (their_meta.get("kernelspec") if isinstance(their_meta, dict) else None) != release.metadata.get("kernelspec"):
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
