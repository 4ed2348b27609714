"""Grade a class: ``python -m autograder.grade SUBMISSIONS [--course DIR] [--jobs N] [--out DIR] [...]``.

``SUBMISSIONS`` is a folder in nbgrader's layout, ``STUDENT/ASSIGNMENT/NOTEBOOK.ipynb``
(or one folder above it), or a ``.zip`` of one (``--cluster ADDR`` and ``--db URL``: below).
``--course`` is the nbgrader course that ``make release`` builds (``_build/course``: its gradebook and ``release/``).

For every (student, assignment, notebook) there is exactly one result: a score, or
zero with a reason (``STATUSES``). Nothing a submission holds can stop the batch:

* **Never trust the submitted notebook's structure.** What runs is rebuilt from the
  instructor's copy (the release notebook, then nbgrader's ``OverwriteCells`` puts
  the hidden tests back from the gradebook); only the sources of the submission's
  answer cells (nbgrader ``solution`` cells, matched by grade_id and cell type) are
  taken. Edited locked cells and forged metadata are ignored (the course's own
  cells run) and reported, and the notebook scores zero, as docs/design.md says;
  ``--tampered keep`` gives it its answers' score instead.
* Student code runs in a bubblewrap sandbox (:mod:`autograder.sandbox`), in
  parallel (``--jobs``), with a progress bar.
* **Answers that silence the checks.** Each test's hidden part runs with the
  checks the sandbox recorded before any student code, and the sandbox reports
  an answer that changed what the hidden tests rely on (``qkv.checks``,
  ``builtins``, ``sys.modules``...: :class:`autograder.runner.Guard`) as an
  error output of the test cell (:data:`TAMPERED_ENAME`); such a notebook is
  ``tampered`` and scores zero (``--tampered keep``: the points of the tests
  that passed), the changes named in the reason (:func:`integrity_changes`).
* An unanswered stub's ``NotImplementedError`` names its exercise, number and
  name, taken from the release notebook (:func:`name_exercises`).
* **Limits per section.** A run may take ``--deadline`` seconds and ``--memory``
  GiB (120 s and 3 GiB by default). A section that needs more (one that trains a
  model) says so in its notebook's front matter, which jupytext, the assembler
  and ``nbgrader generate_assignment`` carry into the release notebook's
  metadata::

      grading:
        deadline_s: 300   # wall-clock seconds for the whole notebook
        memory_gib: 4     # GiB of address space

  (:data:`course.section.LIMIT_KEYS`). The grader reads it from the course's
  release notebook, never from the submission, whose metadata a student
  controls. A section's values replace the defaults for that section; a
  ``--deadline`` or ``--memory`` given on the command line holds for every
  section, theirs included (the instructor has the last word, e.g. on a slow
  machine). An invalid block stops the run before any grade is written.
* Only this process writes: nbgrader's gradebook (its ``SaveAutoGrades`` scores the
  executed notebook, so ``determine_grade`` decides), the autograded notebooks in
  ``COURSE/autograded/STUDENT/ASSIGNMENT/``, nbgrader's feedback, ``grades.csv`` and
  the report (:mod:`autograder.report`). nbgrader's own ``formgrader``,
  ``generate_feedback`` and ``export`` work on the result.
* **Beyond one machine.** ``--cluster tcp://HOST:PORT`` runs the sandboxes on the workers of a dask.distributed
  cluster (:mod:`autograder.cluster`: every worker checked first, lost tasks run again, one result each); this
  process still writes everything. ``--db URL`` grades into another gradebook database, e.g. PostgreSQL
  (:func:`gradebook.check_database` fails fast when it cannot be used; :func:`gradebook.copy_structure` brings the
  course's assignments and hidden tests into it). Each finished submission goes into a :class:`Journal`, so that an
  interrupted run, started again, finishes the class without grading anything twice.
* Grading again loses nothing: a score a grader gave in the formgrader stays in
  the gradebook and counts. A ``timestamp.txt`` beside a notebook (as ``nbgrader
  collect`` leaves it) and the assignment's due date in the gradebook mark late
  work; nbgrader's ``LateSubmissionPlugin`` sets the penalty.

Reading cells: the course's own notebooks (the release, and the notebook rebuilt
from it, whose metadata is the release's) are read with nbgrader's
``nbgrader.utils.is_solution`` / ``is_locked``. A submission's cells are read
by :func:`_untrusted_meta` and :func:`_untrusted_is_answer` instead, because
nbgrader's helpers assume well-formed metadata (nbgrader 0.9.6,
``nbgrader/utils.py``: ``cell.metadata['nbgrader'].get(...)``). A submitted
cell whose ``metadata.nbgrader`` is a string, a list or ``null``, which
nbformat reads without complaint, makes them raise ``AttributeError``; one whose
``metadata`` is a list, ``TypeError`` (nbformat happens to refuse that one
today). ``tests/test_grade_cli.py`` checks both, and that :func:`rebuild`
takes such a notebook in its stride: a malformed answer cell counts as missing
(its stub is graded), a malformed locked cell as deleted.
"""

from __future__ import annotations

import argparse
import ast
import copy
import dataclasses
import hashlib
import logging
import os
import re
import shutil
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Collection
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path

import nbformat

from autograder import gradebook, report, rubrics, scan
from autograder import sandbox as sb
from autograder.gradebook import output_text
from autograder.nbcourse import Course
from autograder.submissions import (  # noqa: F401 (re-exported: the CLI's inputs)
    MAX_NOTEBOOK_BYTES,
    GradingError,
    InvalidNotebook,
    Submission,
    discover,
    extract_zip,
    find_root,
    read_submission,
)
from course.section import grading_limits

STATUSES = ("graded", "tampered", "timeout", "kernel died", "invalid notebook", "missing")
TAMPER_POLICIES = ("zero", "keep")  # what a tampered notebook scores (see grade())
#: Prepared notebooks waiting per local sandbox (:func:`_grade_here`): enough that a sandbox never waits for the
#: coordinator, few enough that the coordinator's memory stays flat however large the class.
LOCAL_WINDOW = 4
#: nbgrader metadata that no student may change (compared with the instructor's copy).
LOCKED_KEYS = ("grade", "solution", "locked", "points", "schema_version", "checksum", "task")
log = logging.getLogger("autograder.grade")


# ---------------------------------------------------------------- rebuilding what runs


def _untrusted_meta(cell) -> dict:
    """The nbgrader metadata of a submitted cell, ``{}`` whatever shape the cell or its metadata has
    (see the module docstring: nbgrader's own helpers raise on malformed metadata)."""
    meta = cell.get("metadata", {}) if isinstance(cell, dict) else {}
    nbg = meta.get("nbgrader", {}) if isinstance(meta, dict) else {}
    return nbg if isinstance(nbg, dict) else {}


def _untrusted_is_answer(cell) -> bool:
    """Whether a submitted cell says it is an answer (nbgrader ``solution``) cell, whatever its shape."""
    return bool(_untrusted_meta(cell).get("solution"))


def rebuild(release: nbformat.NotebookNode, submitted: nbformat.NotebookNode | None):
    """The notebook to run: the instructor's ``release`` with the submission's answers pasted in.

    Returns ``(notebook, notes, tampered)``: ``notes`` are remarks for the result (deleted,
    duplicated or retyped answer cells, a changed kernelspec), ``tampered`` the locked cells or
    metadata the submission changed (ignored: the instructor's version is what runs).
    """
    from nbgrader.utils import is_locked, is_solution  # for the course's cells only (see the module docstring)

    nb = copy.deepcopy(release)
    notes, tampered = [], []
    if submitted is None:
        return nb, notes, tampered
    by_id: dict[str, list] = {}
    for cell in submitted.cells:
        gid = _untrusted_meta(cell).get("grade_id")
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
            elif theirs.get("cell_type") != cell.cell_type or not _untrusted_is_answer(theirs):
                notes.append(f"answer cell {gid!r} changed type or role: its stub was graded")
            else:
                cell.source = theirs.get("source", "")
                forged = [k for k in LOCKED_KEYS if k in meta and _untrusted_meta(theirs).get(k) != meta.get(k)]
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
                f"metadata {k}" for k in LOCKED_KEYS if k in meta and _untrusted_meta(theirs).get(k) != meta.get(k)
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


# ---------------------------------------------------------------- outputs and grades


def clean_outputs(outputs) -> list:
    """Rebuild the outputs the sandbox sent from their known fields only (they are untrusted data)."""
    clean = []
    for out in outputs if isinstance(outputs, list) else []:
        if not isinstance(out, dict):
            continue
        kind = out.get("output_type")
        if kind == "stream":
            name = "stderr" if out.get("name") == "stderr" else "stdout"
            clean.append(nbformat.v4.new_output("stream", name=name, text=output_text(out.get("text"))))
        elif kind == "error":
            tb = out.get("traceback")
            tb = [output_text(line, 10_000) for line in tb[:200]] if isinstance(tb, list) else []
            ename, evalue = (
                output_text(out.get("ename"), 1000) or "Error",
                output_text(out.get("evalue"), 10_000),
            )
            clean.append(nbformat.v4.new_output("error", ename=ename, evalue=evalue, traceback=tb))
        elif kind in ("execute_result", "display_data"):
            data = out.get("data")
            text = output_text(data.get("text/plain")) if isinstance(data, dict) else ""
            if kind == "execute_result":
                count = out.get("execution_count")
                clean.append(
                    nbformat.v4.new_output(
                        kind, data={"text/plain": text}, execution_count=count if isinstance(count, int) else None
                    )
                )
            else:
                clean.append(nbformat.v4.new_output(kind, data={"text/plain": text}))
    return clean


def _not_run(ename: str, why: str):
    return nbformat.v4.new_output("error", ename=ename, evalue=why, traceback=[f"{ename}: {why}"])


def fill_outputs(nb, run: sb.RunResult | None, why_not_run: str) -> None:
    """Put the run's outputs into the code cells; a cell that did not finish gets an error output,
    so nbgrader's ``determine_grade`` gives its tests no points."""
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        if run is not None and index in run.cells:
            count, outputs = run.cells[index]
            cell.execution_count, cell.outputs = count, clean_outputs(outputs)
        elif run is not None and index == run.running:
            ename = "Timeout" if run.how == "timeout" else "KernelDied"
            cell.execution_count, cell.outputs = None, [_not_run(ename, f"this cell did not finish: {run.detail}")]
        else:
            cell.execution_count, cell.outputs = None, [_not_run("NotRun", why_not_run)]


@dataclasses.dataclass
class Result:
    """The one result of a (student, assignment, notebook)."""

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


def write_notebook(nb, path: Path) -> None:
    """Write ``nb`` to ``path`` atomically (a reader never sees half a notebook)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    nbformat.write(nb, str(tmp))
    os.replace(tmp, path)


# ---------------------------------------------------------------- limits per section

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


# ---------------------------------------------------------------- one submission, all of them


@dataclasses.dataclass
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
    nb, more, tampered = rebuild(release, submitted)
    nb = restore_hidden(nb, course, sub)
    first = next((i for i, c in enumerate(nb.cells) if is_solution(c)), len(nb.cells))
    code = [(i, c.source) for i, c in enumerate(nb.cells) if c.cell_type == "code"] if status is None else []
    prefix, cells = [(i, s) for i, s in code if i < first], [(i, s) for i, s in code if i >= first]
    flags = [] if status is not None else answer_flags(nb)
    exercises = stub_exercises(release)
    return Prepared(sub, nb, prefix, cells, status, notes + more, tampered, tuple(flags), exercises)


#: The ``ename`` of the error output with which the sandbox reports that the answers changed what the hidden
#: tests rely on (``autograder.runner.TAMPERED``; this process does not import the runner).
TAMPERED_ENAME = "TamperingDetected"
#: The header line of a stub cell (``# Exercise 2 (3 points): write ...``), and an unanswered stub's message
#: as the sandbox sends it (``qkv.checks.stub_message`` without the cell's text: the name alone).
_EXERCISE = re.compile(r"#\s*Exercise\s+(\d+)\b")
_UNWRITTEN = re.compile(r"(?P<name>[A-Za-z_]\w*) is not written yet(?P<rest>:.*)", re.S)


def integrity_changes(nb) -> tuple[list[str], str | None]:
    """What the sandbox reported changed (each change once, first seen first) and the test cell where it first
    did, from the error outputs of the run notebook's test cells (:data:`TAMPERED_ENAME`); ``([], None)`` when
    none reported a change. The rebuilt notebook's metadata is the course's."""
    from nbgrader.utils import is_grade, is_solution

    found: dict[str, None] = {}
    first = None
    for cell in nb.cells:
        if cell.cell_type != "code" or not is_grade(cell) or is_solution(cell):
            continue
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error" and out.get("ename") == TAMPERED_ENAME:
                first = first or cell.metadata["nbgrader"].get("grade_id", "?")
                lines = [line[2:].strip() for line in output_text(out.get("evalue")).splitlines() if line[:2] == "- "]
                found.update(dict.fromkeys([line for line in lines if line] or ["a change the sandbox reported"]))
    return list(found), first


def stub_exercises(release) -> dict[str, str]:
    """The functions and classes each stub cell of the release notebook defines, with its exercise number (from
    the cell's header line, ``# Exercise 2 (3 points): ...``): ``{"masked_softmax": "1", ...}``. Read from the
    course's release, never from a submission, whose cells a student can edit."""
    from nbgrader.utils import is_solution

    found: dict[str, str] = {}
    for cell in release.cells:
        if cell.cell_type != "code" or not is_solution(cell):
            continue
        number = _EXERCISE.match(cell.source.lstrip())
        if number is None:
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                found.setdefault(node.name, number.group(1))
    return found


def name_exercises(nb, exercises: dict[str, str]) -> None:
    """Give each unanswered stub's ``NotImplementedError`` in the run notebook's outputs the number of its
    exercise (:func:`stub_exercises`): "Exercise 1 (masked_softmax) is not written yet: ...", as the notebook
    itself says it in Jupyter, where the cell's header line is at hand (the sandbox keeps no cell's text)."""
    for cell in nb.cells:
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if out.get("output_type") != "error" or out.get("ename") != "NotImplementedError":
                continue
            match = _UNWRITTEN.fullmatch(output_text(out.get("evalue")).strip())
            if match is None or match["name"] not in exercises:
                continue
            text = f"Exercise {exercises[match['name']]} ({match['name']}) is not written yet{match['rest']}"
            out["evalue"] = text
            out["traceback"] = textwrap.wrap(f"NotImplementedError: {text}", 83, break_on_hyphens=False)


def answer_flags(nb) -> list[str]:
    """The static scan (:mod:`autograder.scan`) of the notebook's answer code cells, one line per flag."""
    from nbgrader.utils import is_solution  # the rebuilt notebook's metadata is the course's

    found = []
    for cell in nb.cells:
        if cell.cell_type == "code" and is_solution(cell):
            grade_id = cell.metadata["nbgrader"].get("grade_id", "?")
            found += scan.describe(grade_id, scan.scan(cell.source))
    return found


def finish(prep: Prepared, run: sb.RunResult | None, course: Course) -> Result:
    """Everything after the sandbox: outputs into the notebook, grades into the gradebook, the files."""
    sub, nb = prep.sub, prep.nb
    notes = list(prep.notes)
    changed: list[str] = []  # what the sandbox's guard found changed (autograder.runner.Guard)
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
        if prep.tampered and course.tampered == "zero":
            notes.append(
                "locked cells or their metadata were edited, so the notebook scores zero: " + "; ".join(prep.tampered)
            )
        elif prep.tampered:
            notes.append("edited locked cells were replaced by the course's: " + "; ".join(prep.tampered))
        if changed:
            shown = changed[:6] + ([f"and {len(changed) - 6} more"] if len(changed) > 6 else [])
            verdict = "so the notebook scores zero" if course.tampered == "zero" else "so those tests scored zero"
            notes.append(
                f"the answers changed objects the hidden tests rely on (found at {where}), {verdict}: "
                + "; ".join(shown)
            )
    if sub.timestamp_note:
        notes.append(sub.timestamp_note)
    zero = prep.status is not None or (bool(prep.tampered or changed) and course.tampered == "zero")
    scores = gradebook.save_grades(nb, course, sub, zero=zero)
    # The formgrader shows this file: under each written answer, its model answer and rubric from the course's
    # source notebook (a tagged cell that the course's feedback configuration removes; autograder/rubrics.py).
    model = rubrics.source_answers(course.root / "source" / sub.assignment / f"{sub.notebook}.ipynb")
    graded = course.root / "autograded" / sub.student / sub.assignment / f"{sub.notebook}.ipynb"
    write_notebook(rubrics.for_graders(nb, model), graded)
    if sub.path is not None and sub.path.is_file() and not sub.path.is_symlink():
        dest = course.root / "submitted" / sub.student / sub.assignment / f"{sub.notebook}.ipynb"
        if dest.resolve() != sub.path.resolve() and sub.path.stat().st_size <= MAX_NOTEBOOK_BYTES:
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(sub.path, dest)
    if scores.seconds_late > 0:
        notes.append(f"handed in {gradebook.duration(scores.seconds_late)} after the due date")
    score = sum(p for p in scores.points.values() if p is not None) - scores.late_penalty
    return Result(
        sub.student,
        sub.assignment,
        sub.notebook,
        status,
        "; ".join(n for n in notes if n),
        float(score),
        float(sum(scores.max_points.values())),
        scores.points,
        scores.max_points,
        run.seconds if run is not None else 0.0,
        scores.waiting,
        scores.seconds_late,
        scores.late_penalty,
        gradebook.failures(nb) if not zero else {},
        prep.flags,
    )


def finish_safely(prep: Prepared, run: sb.RunResult | None, course: Course) -> Result:
    """:func:`finish`, or, if recording fails, a zero with the reason (never stop the batch)."""
    try:
        return finish(prep, run, course)
    except Exception as err:  # noqa: BLE001
        log.exception("could not record %s", sub_key(prep.sub))
        status = prep.status or "kernel died"
        return Result(*sub_key(prep.sub), status, f"could not record the result: {err}", 0.0, 0.0, {}, {})


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


def grade_all(
    subs: list[Submission],
    course: Course,
    jobs: int,
    limits: sb.Limits,
    progress: bool = True,
    fixed: Collection[str] = (),
    client=None,
    journal: Journal | None = None,
) -> list[Result]:
    """Grade every submission; sandboxes run ``jobs`` at a time (or on the workers of the dask ``client``:
    :mod:`autograder.cluster`), this thread writes every grade.

    ``limits`` are the defaults of a run; each notebook's release may change them (:func:`notebook_limits`),
    except the fields in ``fixed``. Every release's limits are checked before anything is graded.
    ``journal``: where each finished submission is recorded, and whose records of an interrupted run of the same
    class are kept instead of grading those submissions again (:class:`Journal`)."""
    from tqdm import tqdm

    per_notebook = {
        (a, n): notebook_limits(course, a, n, limits, fixed)
        for a, n in sorted({(s.assignment, s.notebook) for s in subs})
    }
    journal = journal or Journal(None)
    tokens = {sub_key(s): journal.token(s, per_notebook[s.assignment, s.notebook], course) for s in subs}
    results: dict[tuple, Result] = journal.finished(tokens)
    if results:
        log.warning("resuming an interrupted run: %d of %d notebooks were graded already", len(results), len(subs))
    todo = sorted((s for s in subs if sub_key(s) not in results), key=lambda s: (s.assignment, s.notebook, s.student))
    bar = tqdm(
        total=len(subs), initial=len(results), unit="notebook", desc="grading", disable=not progress, file=sys.stderr
    )

    def record(prep: Prepared, run: sb.RunResult | None) -> None:
        key = sub_key(prep.sub)
        if key in results:  # never twice (the cluster's bookkeeping should make this impossible)
            log.warning("a second result for %s was ignored", key)
            return
        results[key] = finish_safely(prep, run, course)
        journal.add(tokens[key], results[key])
        bar.update()

    try:
        if client is not None:
            from autograder import cluster

            cluster.run_all(
                client,
                _runnable(todo, course, record),  # prepared as the cluster has room: the memory stays flat
                lambda prep: per_notebook[prep.sub.assignment, prep.sub.notebook],
                record,
                token_of=lambda prep: hashlib.sha256(
                    repr((sub_key(prep.sub), tokens[sub_key(prep.sub)])).encode()
                ).hexdigest()[:24],
            )
        else:
            _grade_here(todo, course, jobs, per_notebook, record)
    finally:
        bar.close()
        journal.close()
    return [results[k] for k in sorted(results)]


def _runnable(subs, course: Course, record):
    """The submissions of ``subs`` prepared one at a time, as the caller asks for the next (so that only those in
    flight are held in memory); one that cannot run (unreadable, no answers) is recorded at once, without a run."""
    for sub in subs:
        prep = prepare_safely(sub, course)
        if prep.status is not None:
            record(prep, None)
        else:
            yield prep


def _grade_here(subs, course: Course, jobs: int, per_notebook: dict, record) -> None:
    """Grade ``subs`` on this machine, ``jobs`` sandboxes at a time; ``record(prep, run)`` each in this thread.

    ``subs`` come in notebook order (:func:`grade_all` sorts them), so that each sandbox runs a notebook's shared
    prefix once; its limits change only with the notebook, when the sandbox starts again anyway. A submission is
    prepared (read, checked, its hidden tests put back) only when a sandbox has room for it, at most
    :data:`LOCAL_WINDOW` per sandbox ahead, so the coordinator's memory does not grow with the class."""
    mine = threading.local()  # each worker thread's sandbox
    boxes: list[sb.Sandbox] = []  # every sandbox made, closed at the end
    made = threading.Lock()

    def run(prep: Prepared) -> sb.RunResult:
        """In a worker thread: one notebook in that thread's sandbox (never raises: a failure is a result)."""
        try:
            wanted = per_notebook[prep.sub.assignment, prep.sub.notebook]
            box = getattr(mine, "box", None)
            if box is None or box.limits != wanted:
                if box is not None:
                    box.close()
                box = mine.box = sb.Sandbox(wanted)
                with made:
                    boxes.append(box)
            return box.run(prep.cells, prefix=prep.prefix)
        except Exception as err:  # noqa: BLE001 (a sandbox failure is this submission's result)
            return sb.RunResult(how="died", detail=f"the sandbox failed: {err}")

    workers = max(1, jobs)
    source = _runnable(subs, course, record)
    pending: dict = {}  # future -> prepared submission
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="sandbox")

    def refill() -> None:
        while len(pending) < LOCAL_WINDOW * workers:
            prep = next(source, None)
            if prep is None:
                return
            pending[pool.submit(run, prep)] = prep

    try:
        refill()
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                record(pending.pop(future), future.result())
            refill()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # on Ctrl-C: no new run starts, the running ones end
        for box in boxes:
            box.close()


class Journal:
    """The submissions of this run that are finished, one JSON line each (``COURSE/grading-journal.jsonl``), so
    that a run that was interrupted (Ctrl-C, a kill, a lost machine) finishes the class when it is started again:
    what the journal holds is kept, the rest is graded, nothing twice.

    Why a journal and not the gradebook as the record: the gradebook holds grades of earlier runs too (and
    formgrader scores), so it cannot tell what this run finished; and it lacks what ``grades.csv`` and the report
    need (status, reason, failures, flags). A line counts only if it is whole (a kill mid-write leaves a torn last
    line, which is ignored) and only for the same submission file, limits, tampering policy and course version
    (:meth:`token`); its grades are in the gradebook already, written before the line. A kill between the two
    only means that submission is graded again, which writes the same grades (nbgrader updates, never adds).
    The file is removed once ``grades.csv`` and the report are written: the next run grades everything again.
    """

    NAME = "grading-journal.jsonl"

    def __init__(self, path: Path | None):
        self.path = path
        self._file = None

    @staticmethod
    def token(sub: Submission, limits: sb.Limits, course: Course) -> str:
        """What a journal line must match to be kept: the submitted file's bytes (or why it is missing), the
        limits of its run, the tampering policy, the course's release notebook and the grader's code."""
        from autograder import cluster

        digest = hashlib.sha256()
        if sub.path is not None and sub.path.is_file() and not sub.path.is_symlink():
            with open(sub.path, "rb") as f:
                while chunk := f.read(1 << 20):
                    digest.update(chunk)
        else:
            digest.update(f"missing: {sub.missing}".encode())
        release = course.release_path(sub.assignment, sub.notebook)
        for part in (repr(limits), course.tampered, cluster.course_version(), str(sub.timestamp), sub.timestamp_note):
            digest.update(b"\0" + part.encode())
        digest.update(release.read_bytes())
        return digest.hexdigest()[:32]

    def finished(self, tokens: dict[tuple, str]) -> dict[tuple, Result]:
        """The results the journal holds for ``tokens`` (key -> token of this run's submissions)."""
        import json

        found: dict[tuple, Result] = {}
        if self.path is None or not self.path.exists():
            return found
        for line in self.path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True):
            if not line.endswith("\n"):
                continue  # torn by a kill mid-write
            try:
                entry = json.loads(line)
                key = tuple(entry["key"])
                if tokens.get(key) != entry["token"]:
                    continue
                data = entry["result"]
                data["waiting"], data["flags"] = tuple(data["waiting"]), tuple(data["flags"])
                found[key] = Result(**data)
            except (ValueError, KeyError, TypeError):
                continue
        return found

    def add(self, token: str, result: Result) -> None:
        """Record ``result`` as finished: one whole line, on disk (fsync) before this returns."""
        import json

        if self.path is None:
            return
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "a+b")  # noqa: SIM115 (kept open for the run)
            self._file.seek(0, os.SEEK_END)
            if self._file.tell():
                self._file.seek(-1, os.SEEK_END)
                if self._file.read(1) != b"\n":  # a torn last line: end it, so that it stays apart
                    self._file.write(b"\n")
        entry = {"key": list(result.key), "token": token, "result": dataclasses.asdict(result)}
        self._file.write((json.dumps(entry) + "\n").encode())
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def remove(self) -> None:
        """The run is complete: the next one starts afresh."""
        self.close()
        if self.path is not None:
            self.path.unlink(missing_ok=True)


def sub_key(sub: Submission) -> tuple[str, str, str]:
    """(student, assignment, notebook): what identifies a result."""
    return sub.student, sub.assignment, sub.notebook


# ---------------------------------------------------------------- the command


def default_course() -> Path:
    """The course ``make release`` builds: ``_build/course``."""
    from autograder import release

    return release.COURSE


def reports_dir(course_dir: Path, out: Path | None = None) -> Path:
    """Where ``grades.csv``, ``failures.csv`` and the report go: ``out``, else ``COURSE/reports``."""
    return Path(out or Path(course_dir) / "reports").resolve()


def grade(
    submissions: Path,
    course_dir: Path | None = None,
    jobs: int | None = None,
    out: Path | None = None,
    limits: sb.Limits | None = None,
    feedback: bool = True,
    progress: bool = True,
    tampered: str = "zero",
    fixed: Collection[str] = (),
    cluster: str | None = None,
    db: str | None = None,
) -> list[Result]:
    """Grade the class in ``submissions`` (a folder or a zip) into ``course_dir``; see the module docstring.

    ``cluster``: the address of a dask scheduler (``tcp://HOST:PORT``) whose workers run the sandboxes
    (:mod:`autograder.cluster`; checked before anything is graded). ``db``: the gradebook's database URL
    (``postgresql://USER:PASSWORD@HOST:PORT/DB``, or ``sqlite:///PATH``) instead of the course's ``db_url``; the
    course's assignments and hidden tests are copied into it from the course's own gradebook. Either way a
    scheduler or database that cannot be reached stops the run at once, nothing written.

    ``limits``: what a run may use, where its section's ``grading:`` block says nothing; ``fixed``: the fields
    of ``limits`` (``"deadline"``, ``"memory"``) that hold for every section, whatever its block says (the
    command line fixes those given explicitly).

    ``tampered``: what a notebook whose locked cells or grading metadata were edited gets. ``"zero"`` (as
    docs/design.md says), or ``"keep"``: the score of its answers, which ran with the course's own cells anyway
    (kinder to an accidental edit, e.g. on Colab, which does not lock cells). Either way its status is
    ``tampered`` and the reason lists the edits.
    """
    if tampered not in TAMPER_POLICIES:
        raise GradingError(f"tampered must be one of {', '.join(TAMPER_POLICIES)}, not {tampered!r}")
    unknown = sorted(set(fixed) - set(FIXABLE))
    if unknown:
        raise GradingError(f"fixed names limits a section may set ({', '.join(FIXABLE)}), not {unknown}")
    sb.check_available()
    os.environ.setdefault("PGCONNECT_TIMEOUT", str(gradebook.CONNECT_TIMEOUT))  # a PostgreSQL that hangs: an error
    if db is not None:
        gradebook.check_database(db)
    client = None
    if cluster is not None:
        from autograder import cluster as dask_cluster

        client = dask_cluster.connect(cluster)
    try:
        if client is not None:
            dask_cluster.preflight(client)
        return _grade(submissions, course_dir, jobs, out, limits, feedback, progress, tampered, fixed, client, db)
    finally:
        if client is not None:
            client.close()


def _grade(submissions, course_dir, jobs, out, limits, feedback, progress, tampered, fixed, client, db):
    """:func:`grade` once the cluster and the database are known to work."""
    course_dir = Path(course_dir or default_course()).resolve()
    if not (course_dir / "gradebook.db").exists() and course_dir == Path(default_course()).resolve():
        from autograder import release

        release.release(course_dir)
    if db is not None and (course_dir / "gradebook.db").exists():  # the course's assignments and hidden tests
        gradebook.copy_structure(f"sqlite:///{course_dir / 'gradebook.db'}", db)
    course = load_course(course_dir)
    if db is not None:
        course.db_url = course.config.CourseDirectory.db_url = db
    course.tampered = tampered
    out = reports_dir(course_dir, out)
    submissions = Path(submissions).resolve()
    if not submissions.exists():
        raise GradingError(f"{submissions} does not exist: give a folder STUDENT/ASSIGNMENT/NOTEBOOK.ipynb or a zip")
    with tempfile.TemporaryDirectory(prefix="qkv-submissions-") as tmp:
        if submissions.is_file():
            for warning in extract_zip(submissions, Path(tmp)):
                log.warning(warning)
            root = Path(tmp)
        else:
            root = submissions
        root = find_root(root, course.notebooks)
        sb.check_hidden([course_dir, root, out])
        subs = discover(root, course)
        journal = Journal(course_dir / Journal.NAME)
        results = grade_all(
            subs, course, jobs or os.cpu_count() or 1, limits or sb.Limits(), progress, fixed, client, journal
        )
    out.mkdir(parents=True, exist_ok=True)
    report.write_csv(results, out / "grades.csv")
    report.write_failures(results, out / "failures.csv")
    report.write_flags(results, out / "flags.csv")
    report.write_report(results, out)
    if feedback:
        report.generate_feedback(course, sorted({r.assignment for r in results}), jobs or os.cpu_count() or 1)
    journal.remove()
    return results


def load_course(course_dir: Path) -> Course:
    """:meth:`Course.load`, with a gradebook database that cannot be used (a PostgreSQL ``db_url`` in
    ``nbgrader_config_local.py`` whose server is down or refuses the login) as a :class:`GradingError`."""
    try:
        return Course.load(course_dir)
    except GradingError:
        raise
    except Exception as err:
        if type(err).__module__.startswith("sqlalchemy"):
            first = str(getattr(err, "orig", err)).strip().splitlines()[0]
            raise GradingError(
                f"cannot use the course's gradebook database ({first}): check db_url in "
                f"{course_dir / 'nbgrader_config_local.py'} and that its server runs. Nothing was graded."
            ) from None
        raise


def positive(text: str) -> float:
    """A command-line number that must be above zero (``--deadline``, ``--memory``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be above zero, not {text}")
    return value


def main(argv=None) -> int:
    """The command line; returns the exit status (2 when nothing could be graded)."""
    parser = argparse.ArgumentParser(
        prog="python -m autograder.grade",
        description="Grade a class of nbgrader submissions in sandboxes, into the course's gradebook.",
    )
    parser.add_argument("submissions", type=Path, help="folder STUDENT/ASSIGNMENT/NOTEBOOK.ipynb, or a zip of one")
    parser.add_argument("--course", type=Path, default=None, help="the nbgrader course (default: _build/course)")
    parser.add_argument("--jobs", type=int, default=None, help="sandboxes at once (default: number of CPUs)")
    parser.add_argument("--out", type=Path, default=None, help="where grades.csv and the report go")
    default = sb.Limits()
    parser.add_argument(
        "--deadline",
        type=positive,
        default=None,
        help=f"seconds per notebook, wall clock (default: the section's grading: deadline_s, else "
        f"{default.deadline:g}); given, it holds for every section",
    )
    parser.add_argument(
        "--memory",
        type=positive,
        default=None,
        help=f"GiB of address space per notebook (default: the section's grading: memory_gib, else "
        f"{default.memory / sb.GiB:g}); given, it holds for every section",
    )
    parser.add_argument("--no-feedback", action="store_true", help="skip nbgrader's feedback HTML")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument(
        "--tampered",
        choices=TAMPER_POLICIES,
        default="zero",
        help="a notebook whose locked cells were edited scores zero (default), or keeps its answers' score",
    )
    parser.add_argument(
        "--cluster",
        default=None,
        metavar="tcp://HOST:PORT",
        help="grade on the workers of this dask scheduler (each runs the same sandbox); default: on this machine",
    )
    parser.add_argument(
        "--db",
        default=None,
        metavar="URL",
        help="the gradebook's database, e.g. postgresql://USER:PASSWORD@HOST:5432/DB (default: the course's "
        "db_url, sqlite:///gradebook.db unless nbgrader_config_local.py says otherwise)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
    given = {"deadline": args.deadline, "memory": None if args.memory is None else int(args.memory * sb.GiB)}
    given = {field: value for field, value in given.items() if value is not None}
    limits = sb.Limits(**given)
    started = time.monotonic()
    try:
        results = grade(
            args.submissions,
            args.course,
            args.jobs,
            args.out,
            limits,
            not args.no_feedback,
            not args.quiet,
            args.tampered,
            fixed=tuple(given),
            cluster=args.cluster,
            db=args.db,
        )
    except (GradingError, sb.SandboxUnavailable) as err:
        print(f"grade: {err}", file=sys.stderr)
        return 2
    counts = {s: sum(r.status == s for r in results) for s in STATUSES}
    summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    graded = report.plural(len(results), "notebook", "notebooks")
    print(f"graded {graded} in {time.monotonic() - started:.1f} s: {summary}")
    course_dir = Path(args.course or default_course()).resolve()
    out = reports_dir(course_dir, args.out)
    print(f"grades: {out / 'grades.csv'}\nreport: {out / 'report.html'} (failures: {out / 'failures.csv'})")
    if not args.no_feedback:
        print(f"feedback: {course_dir / 'feedback'}/STUDENT/ASSIGNMENT/")
    waiting = sum(len(r.waiting) for r in results)
    if waiting:
        answers = report.plural(waiting, "written answer waits", "written answers wait")
        print(f"{answers} for a grader: jupyter lab in {course_dir}, then Nbgrader > Formgrader")
    return 0


if __name__ == "__main__":
    sys.exit(main())
