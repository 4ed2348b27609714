"""One submission, from file to result: :func:`prepare` (read, rebuild, restore the hidden tests) before the
sandbox, :func:`finish` (outputs into the notebook, grades into the gradebook, the files) after it, and the one
:class:`Result` of every (student, assignment, notebook)."""

from __future__ import annotations

import dataclasses
import logging
import shutil

import nbformat

from autograder import gradebook, rubrics
from autograder import sandbox as sb
from autograder.grading.options import GradeOptions
from autograder.grading.outputs import (
    answer_flags,
    fill_outputs,
    integrity_changes,
    name_exercises,
    stub_exercises,
    write_notebook,
)
from autograder.grading.rebuild import RECOVER, not_this_notebook, rebuild, restore_hidden
from autograder.nbcourse import Course, GradingError
from autograder.submissions import MAX_NOTEBOOK_BYTES, InvalidNotebook, Submission, read_submission

#: What a result's status may be: graded, or zero with a reason.
STATUSES = ("graded", "tampered", "timeout", "kernel died", "invalid notebook", "missing")
log = logging.getLogger("autograder.grade")


@dataclasses.dataclass(kw_only=True)
class Result:
    """The one result of a (student, assignment, notebook); built by keyword, so that no field can be misassigned."""

    student: str
    assignment: str
    notebook: str
    status: str
    reason: str
    score: float
    max_score: float
    exercises: dict[str, float | None]  # grade_id -> points (a grader's score if given; None: waits for one)
    max_points: dict[str, float]
    seconds: float = 0.0
    waiting: tuple[str, ...] = ()  # grade_ids that wait for a person (formgrader), in notebook order
    seconds_late: float = 0.0  # after the due date (nbgrader's timestamp and due date), 0 when on time
    late_penalty: float = 0.0  # points taken off by nbgrader's late-submission plugin (already out of score)
    failures: dict[str, str] = dataclasses.field(default_factory=dict)  # test grade_id -> what failed, one line
    flags: tuple[str, ...] = ()  # answer lines that reach for the grader's objects, for a person (autograder.scan)

    @property
    def key(self) -> tuple[str, str, str]:
        return self.student, self.assignment, self.notebook


@dataclasses.dataclass(kw_only=True)
class Prepared:
    """A submission ready for the sandbox: the notebook to run, split into the shared prefix and the rest."""

    sub: Submission
    nb: object
    prefix: list[tuple[int, str]]  # the code cells before the first answer: the same for every submission
    cells: list[tuple[int, str]]  # the code cells from the first answer on
    status: str | None  # "missing" / "invalid notebook": nothing to run
    notes: list[str]
    tampered: list[str]
    flags: tuple[str, ...] = ()  # what the static scan of the answer cells found (autograder.scan)
    exercises: dict[str, str] = dataclasses.field(default_factory=dict)  # stub name -> exercise number (release)


def prepare(sub: Submission, course: Course) -> Prepared:
    """Everything before the sandbox: read, rebuild, restore the hidden tests."""
    from nbgrader.utils import is_solution  # read on the rebuilt notebook, whose metadata is the course's

    status, notes, submitted = None, [], None
    if sub.path is None:
        status, notes = "missing", [sub.missing]
    else:
        try:
            submitted = read_submission(sub.path)
        except InvalidNotebook as err:
            status, notes = "invalid notebook", [str(err)]
    release = course.release(sub.assignment, sub.notebook)
    if submitted is not None and (why := not_this_notebook(release, submitted)):
        status, notes, submitted = "invalid notebook", [why], None
    nb, more, tampered = rebuild(release, submitted)
    nb = restore_hidden(nb, course, sub)
    first = next((i for i, c in enumerate(nb.cells) if is_solution(c)), len(nb.cells))
    code = [(i, c.source) for i, c in enumerate(nb.cells) if c.cell_type == "code"] if status is None else []
    prefix, cells = [(i, s) for i, s in code if i < first], [(i, s) for i, s in code if i >= first]
    flags = [] if status is not None else answer_flags(nb)
    return Prepared(
        sub=sub,
        nb=nb,
        prefix=prefix,
        cells=cells,
        status=status,
        notes=notes + more,
        tampered=tampered,
        flags=tuple(flags),
        exercises=stub_exercises(release),
    )


def finish(prep: Prepared, run: sb.RunResult | None, course: Course, options: GradeOptions) -> Result:
    """Everything after the sandbox: outputs into the notebook, grades into the gradebook, the files
    (``options.tampered`` says what a tampered notebook scores)."""
    sub, nb = prep.sub, prep.nb
    notes = list(prep.notes)
    changed: list[str] = []  # what the sandbox's guard found changed (autograder.sandboxed.guard.Guard)
    if prep.status is not None:
        status = prep.status
        fill_outputs(nb, None, f"not graded: {status} ({'; '.join(notes)})")
        banner = nbformat.v4.new_markdown_cell(f"**This notebook was not graded: {status}.** {'; '.join(notes)}")
        nb.cells.insert(0, banner)
    else:
        fill_outputs(nb, run, f"not run: {run.detail}")
        name_exercises(nb, prep.exercises)
        changed, where = integrity_changes(nb)
        if changed:
            status = "tampered"
        elif run.how == "timeout":
            status = "timeout"
        elif run.how == "died":
            status = "kernel died"
        else:
            status = "tampered" if prep.tampered else "graded"
        if run.how != "done":
            notes.insert(0, run.detail)
        if prep.tampered and options.tampered == "zero":
            notes.append(
                "locked cells or their metadata were edited, so the notebook scores zero: "
                + "; ".join(prep.tampered)
                + ". If you did not mean to edit them, tell your instructor. "
                + RECOVER
            )
        elif prep.tampered:
            notes.append("edited locked cells were replaced by the course's: " + "; ".join(prep.tampered))
        if changed:
            shown = changed[:6] + ([f"and {len(changed) - 6} more"] if len(changed) > 6 else [])
            verdict = "so the notebook scores zero" if options.tampered == "zero" else "so those tests scored zero"
            notes.append(
                f"the answers changed objects the hidden tests rely on (found at {where}), {verdict}: "
                + "; ".join(shown)
            )
    if sub.timestamp_note:
        notes.append(sub.timestamp_note)
    if sub.renamed:
        notes.append(sub.renamed)
    zero = prep.status is not None or (bool(prep.tampered or changed) and options.tampered == "zero")
    scores = gradebook.save_grades(nb, course, sub, zero=zero)
    # The formgrader shows this file: under each written answer, its model answer and rubric from the course's
    # source notebook (a tagged cell that the course's feedback configuration removes; autograder/rubrics.py).
    model = rubrics.source_answers(course.path("source", sub.assignment, sub.notebook))
    graded = course.path("autograded", sub.assignment, sub.notebook, student=sub.student)
    write_notebook(rubrics.for_graders(nb, model), graded)
    if sub.path is not None and sub.path.is_file() and not sub.path.is_symlink():
        dest = course.path("submitted", sub.assignment, sub.notebook, student=sub.student)
        if dest.resolve() != sub.path.resolve() and sub.path.stat().st_size <= MAX_NOTEBOOK_BYTES:
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(sub.path, dest)
    if scores.seconds_late > 0:
        notes.append(f"handed in {gradebook.duration(scores.seconds_late)} after the due date")
    score = sum(p for p in scores.points.values() if p is not None) - scores.late_penalty
    return Result(
        student=sub.student,
        assignment=sub.assignment,
        notebook=sub.notebook,
        status=status,
        reason="; ".join(n for n in notes if n),
        score=float(score),
        max_score=float(sum(scores.max_points.values())),
        exercises=scores.points,
        max_points=scores.max_points,
        seconds=run.seconds if run is not None else 0.0,
        waiting=scores.waiting,
        seconds_late=scores.seconds_late,
        late_penalty=scores.late_penalty,
        failures=gradebook.failures(nb) if not zero else {},
        flags=prep.flags,
    )


def finish_safely(prep: Prepared, run: sb.RunResult | None, course: Course, options: GradeOptions) -> Result:
    """:func:`finish`, or, if recording fails, a zero with the reason (never stop the batch)."""
    try:
        return finish(prep, run, course, options)
    except Exception as err:  # noqa: BLE001
        log.exception("could not record %s", sub_key(prep.sub))
        status = prep.status or "kernel died"
        student, assignment, notebook = sub_key(prep.sub)
        return Result(
            student=student,
            assignment=assignment,
            notebook=notebook,
            status=status,
            reason=f"could not record the result: {err}",
            score=0.0,
            max_score=0.0,
            exercises={},
            max_points={},
        )


def prepare_safely(sub: Submission, course: Course) -> Prepared:
    """:func:`prepare`, or, whatever the file holds, an ``invalid notebook`` ready to be recorded."""
    try:
        return prepare(sub, course)
    except GradingError:
        raise
    except Exception as err:  # noqa: BLE001 (whatever a file holds, it gets a result)
        log.exception("could not prepare %s", sub_key(sub))
        prep = prepare(dataclasses.replace(sub, path=None), course)
        prep.status, prep.notes = "invalid notebook", [f"could not be read ({type(err).__name__}: {err})"]
        return prep


def sub_key(sub: Submission) -> tuple[str, str, str]:
    """(student, assignment, notebook): what identifies a result."""
    return sub.student, sub.assignment, sub.notebook
