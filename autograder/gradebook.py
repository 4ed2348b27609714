"""What nbgrader's gradebook records for one graded notebook: scores, lateness, and what failed.

Used by :mod:`autograder.grading.results` after a sandbox has run a submission. nbgrader's own
preprocessors write the scores (``SaveAutoGrades``: ``determine_grade`` per grade
cell) and the late penalty (``AssignLatePenalties``); this module calls them and reads
back what the gradebook then holds, keeping a score a grader gave in the formgrader.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import sys
import warnings
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from autograder.nbcourse import Course
    from autograder.submissions import Submission


def output_text(value, limit: int = 200_000) -> str:
    """The text of an output field (a string or a list of strings), at most ``limit`` characters; else ""."""
    if isinstance(value, list):
        value = "".join(v for v in value if isinstance(v, str))
    return value[:limit] if isinstance(value, str) else ""


def quiet(preprocessor):
    """``preprocessor`` with its log turned down to errors (nbgrader's warnings are ours to report)."""
    preprocessor.log.setLevel(logging.ERROR)
    return preprocessor


def resources_for(course: Course, sub: Submission) -> dict:
    """The ``resources`` nbgrader's preprocessors need to find ``sub`` in the gradebook."""
    return {
        "nbgrader": {
            "notebook": sub.notebook,
            "assignment": sub.assignment,
            "student": sub.student,
            "db_url": course.db_url,
        }
    }


_DETAIL = re.compile(r"\s*\((?:largest error )?at index .*\)$")  # "(largest error at index (0, 1))"


def failure_summary(output) -> str:
    """One line saying what an error output of a test cell says went wrong, the same for every student who
    made the same mistake: a failed check's first line (its index details dropped), else ``Error: message``."""
    ename, evalue = output_text(output.get("ename", "")), output_text(output.get("evalue", ""))
    first = evalue.strip().splitlines()[0].strip() if evalue.strip() else ""
    if ename in ("AssertionError", "CheckFailed") and first:  # CheckFailed: qkv.checks' own AssertionError
        return _DETAIL.sub("", first)[:160]
    return f"{ename}: {first}"[:160] if first else ename[:160]


def failures(nb) -> dict[str, str]:
    """For each test cell (nbgrader grade cell that is not an answer) that raised: its :func:`failure_summary`."""
    found = {}
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.cell_type != "code" or not meta.get("grade") or meta.get("solution"):
            continue
        error = next((o for o in cell.get("outputs", []) if o.get("output_type") == "error"), None)
        if error is not None:
            found[meta.get("grade_id", "?")] = failure_summary(error)
    return found


@dataclasses.dataclass
class Scores:
    """What the gradebook holds for one submitted notebook after autograding."""

    points: dict[str, float | None]  # grade_id -> a grader's score if given, else the autograder's
    max_points: dict[str, float]
    waiting: tuple[str, ...]  # grade_ids with no score yet: written answers before a person grades them
    seconds_late: float
    late_penalty: float


def save_grades(nb, course: Course, sub: Submission, zero: bool) -> Scores:
    """Score the executed notebook with nbgrader (``SaveAutoGrades``: ``determine_grade`` per grade cell, then
    ``AssignLatePenalties``) into the gradebook, and read back what it now holds.

    A score a grader gave in the formgrader (``manual_score``) is kept and wins over the autograder's, as in
    nbgrader; grading again never loses it. ``zero`` (nothing ran, or a tampered notebook under
    ``--tampered zero``) zeroes the autograder's scores only.
    """
    from nbgrader.api import Gradebook
    from nbgrader.preprocessors import AssignLatePenalties, IgnorePattern, LimitOutput, SaveAutoGrades

    with warnings.catch_warnings():  # SQLAlchemy's autoflush warnings inside nbgrader's api
        warnings.simplefilter("ignore")
        with Gradebook(course.db_url, course.course_id) as gb:
            gb.update_or_create_student(sub.student)
            stamp = {"timestamp": sub.timestamp} if sub.timestamp is not None else {}
            gb.update_or_create_submission(sub.assignment, sub.student, **stamp)
        resources = resources_for(course, sub)
        for pp in (IgnorePattern, LimitOutput, SaveAutoGrades):
            nb, resources = quiet(pp(config=course.config)).preprocess(nb, resources)
        if zero:
            with Gradebook(course.db_url, course.course_id) as gb:
                submitted = gb.find_submission_notebook(sub.notebook, sub.assignment, sub.student)
                for grade in submitted.grades:
                    if grade.auto_score:
                        grade.auto_score = 0.0
                        grade.needs_manual_grade = grade.manual_score is not None
                gb.db.commit()
        nb, resources = quiet(AssignLatePenalties(config=course.config)).preprocess(nb, resources)
        points, max_points, waiting = {}, {}, []
        with Gradebook(course.db_url, course.course_id) as gb:
            submitted = gb.find_submission_notebook(sub.notebook, sub.assignment, sub.student)
            for grade in submitted.grades:
                points[grade.name] = grade.manual_score if grade.manual_score is not None else grade.auto_score
                max_points[grade.name] = grade.max_score
                if points[grade.name] is None:
                    waiting.append(grade.name)
            late = float(gb.find_submission(sub.assignment, sub.student).total_seconds_late)
            penalty = float(submitted.late_submission_penalty or 0.0)
    order = {c.metadata.get("nbgrader", {}).get("grade_id"): i for i, c in enumerate(nb.cells)}
    waiting.sort(key=lambda gid: order.get(gid, len(order)))
    return Scores(points, max_points, tuple(waiting), late, penalty)


def duration(seconds: float) -> str:
    """``seconds`` as a person would say it: 45 s, 12 min, 3.5 h, 2.0 days."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


# ---------------------------------------------------------------- the gradebook's database: SQLite or PostgreSQL

#: nbgrader's tables that hold the course itself (what ``nbgrader generate_assignment`` writes: assignments,
#: notebooks, their cells and hidden tests), in the order their foreign keys need; the other tables hold grades.
STRUCTURE = (
    "course",
    "assignment",
    "notebook",
    "base_cell",
    "source_cell",
    "grade_cells",
    "solution_cells",
    "task_cells",
)
#: Seconds a PostgreSQL server may take to answer the first connection (libpq's ``PGCONNECT_TIMEOUT``).
CONNECT_TIMEOUT = 10


def redact(url: str) -> str:
    """``url`` without its password, for messages."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 (a URL SQLAlchemy cannot read is shown as given, minus nothing)
        return "<a database URL SQLAlchemy cannot read>"


def check_database(url: str) -> None:
    """Connect to the gradebook's database once, or raise :class:`GradingError` saying what failed and what to
    do, before anything is graded. A server that is down, unknown or refuses the login fails within
    :data:`CONNECT_TIMEOUT` seconds (libpq's ``PGCONNECT_TIMEOUT``, unless set already)."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    from autograder.nbcourse import GradingError

    try:
        parsed = make_url(url)
    except Exception as err:  # noqa: BLE001
        raise GradingError(
            f"{url!r} is not a database URL ({err}): give sqlite:///PATH or postgresql://USER:PASSWORD@HOST:PORT/DB. "
            "Nothing was graded."
        ) from None
    if parsed.get_backend_name() == "sqlite":
        return
    if parsed.get_backend_name() != "postgresql":
        raise GradingError(
            f"the gradebook must be SQLite or PostgreSQL, not {parsed.get_backend_name()} ({redact(url)}). "
            "Nothing was graded."
        )
    os.environ.setdefault("PGCONNECT_TIMEOUT", str(CONNECT_TIMEOUT))
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            connection.execute(text("select 1"))
    except Exception as err:  # noqa: BLE001 (down, unknown host, wrong password, no such database...)
        first = str(getattr(err, "orig", err)).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise GradingError(
            f"cannot use the gradebook database {redact(url)}: {first}. Check that the server is running and that "
            "the user, password and database in the URL are right (--db, or db_url in nbgrader_config_local.py). "
            "Nothing was graded; the submissions and the grades already in the gradebook are untouched."
        ) from None
    finally:
        engine.dispose()


def copy_structure(source_url: str, target_url: str) -> int:
    """Copy the course's assignments, notebooks, cells and hidden tests (:data:`STRUCTURE`) from the gradebook at
    ``source_url`` (the SQLite one ``make release`` writes) into the one at ``target_url`` (e.g. PostgreSQL),
    creating nbgrader's tables there if needed: rows the target lacks are added, rows it has are updated (a new
    release changes its hidden tests); grades, students and submissions in the target are kept. Returns the rows
    written. One transaction: a failure leaves the target as it was."""
    from nbgrader.api import Base, Gradebook
    from sqlalchemy import create_engine, select

    # nbgrader creates its tables on first use and stamps them with the version of its migrations, which it asks
    # the ``alembic`` command for: the one beside this interpreter (make runs us without the venv on PATH).
    here = os.path.dirname(sys.executable)
    if here not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = here + os.pathsep + os.environ.get("PATH", "")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        Gradebook(target_url).close()
    tables = [t for t in Base.metadata.sorted_tables if t.name in STRUCTURE]
    source, target = create_engine(source_url), create_engine(target_url)
    written = 0
    try:
        with source.connect() as src, target.begin() as dst:
            for table in tables:
                key = [c.name for c in table.primary_key.columns]
                have = {tuple(row) for row in dst.execute(select(*table.primary_key.columns))}
                for row in src.execute(select(table)).mappings():
                    values = dict(row)
                    if tuple(values[k] for k in key) in have:
                        clause = [table.c[k] == values[k] for k in key]
                        dst.execute(table.update().where(*clause).values(values))
                    else:
                        dst.execute(table.insert().values(values))
                    written += 1
    finally:
        source.dispose()
        target.dispose()
    return written
