"""Limits per section: a section that needs more than the defaults (one that trains a model) says so in its
notebook's front matter, which jupytext, the assembler and ``nbgrader generate_assignment`` carry into the release
notebook's metadata::

    grading:
      deadline_s: 300   # wall-clock seconds for the whole notebook
      memory_gib: 4     # GiB of address space

(:data:`course.section.LIMIT_KEYS`). The grader reads it from the course's release notebook, never from the
submission, whose metadata a student controls. A section's values replace the defaults for that section; a
``--deadline`` or ``--memory`` given on the command line holds for every section, theirs included (the instructor
has the last word, e.g. on a slow machine). An invalid block stops the run before any grade is written.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection

from autograder import sandbox as sb
from autograder.nbcourse import Course, GradingError
from course.section import grading_limits

#: What each key of a section's ``grading:`` block (:data:`course.section.LIMIT_KEYS`) sets: the field of
#: :class:`sandbox.Limits` and its value.
LIMIT_FIELDS = {
    "deadline_s": ("deadline", float),
    "memory_gib": ("memory", lambda gib: int(gib * sb.GiB)),
}
#: The fields of :class:`sandbox.Limits` that a section may set, hence that the instructor may fix for all.
FIXABLE = tuple(field for field, _ in LIMIT_FIELDS.values())


def section_limits(block: dict, base: sb.Limits, fixed: Collection[str] = ()) -> sb.Limits:
    """``base`` with a section's checked ``grading:`` block on top, except the fields in ``fixed`` (those
    the instructor gave on the command line: they hold for every section)."""
    changes = {}
    for key, value in block.items():
        field, convert = LIMIT_FIELDS[key]
        if field not in fixed:
            changes[field] = convert(value)
    return dataclasses.replace(base, **changes)


def notebook_limits(course: Course, assignment: str, notebook: str, base: sb.Limits, fixed=()) -> sb.Limits:
    """The limits of every run of a notebook: :func:`section_limits` of the ``grading:`` block of the
    course's release notebook (trusted; a submission's own metadata is never read for this).

    Raises :class:`GradingError` naming the file and the problem when the block is invalid."""
    try:
        block = grading_limits(course.release(assignment, notebook).metadata)
    except ValueError as err:
        raise GradingError(
            f"{course.release_path(assignment, notebook)}: {err}. The block comes from the front matter of the "
            f"section's notebook (book/{assignment}.md): fix it there, run make release, then grade again. "
            "Nothing was graded."
        ) from None
    return section_limits(block, base, fixed)
