"""Grade a class: ``python -m autograder.grade SUBMISSIONS [--course DIR] [--jobs N] [--out DIR]``.

``SUBMISSIONS`` is a folder in nbgrader's layout, ``STUDENT/ASSIGNMENT/NOTEBOOK.ipynb``
(or one folder above it), or a ``.zip`` of one. ``--course`` is the nbgrader course
that ``make release`` builds (``_build/course``: its gradebook and ``release/``).

For every (student, assignment, notebook) there is exactly one result: a score, or
zero with a reason (``STATUSES``). Nothing a submission holds can stop the batch:

* **Never trust the submitted notebook's structure.** What runs is rebuilt from the
  instructor's copy (the release notebook, then nbgrader's ``OverwriteCells`` puts
  the hidden tests back from the gradebook); only the sources of the submission's
  answer cells (nbgrader ``solution`` cells, matched by grade_id and cell type) are
  taken. Edited locked cells and forged metadata are ignored (the course's own
  cells run) and reported, and the notebook scores zero, as DESIGN.md says;
  ``--tampered keep`` gives it its answers' score instead.
* Student code runs in a bubblewrap sandbox (:mod:`autograder.sandbox`), in
  parallel (``--jobs``), with a progress bar.
* Only this process writes: nbgrader's gradebook (its ``SaveAutoGrades`` scores the
  executed notebook, so ``determine_grade`` decides), the autograded notebooks in
  ``COURSE/autograded/STUDENT/ASSIGNMENT/``, nbgrader's feedback, ``grades.csv`` and
  the report (:mod:`autograder.report`). nbgrader's own ``formgrader``,
  ``generate_feedback`` and ``export`` work on the result.
* Grading again loses nothing: a score a grader gave in the formgrader stays in
  the gradebook and counts. A ``timestamp.txt`` beside a notebook (as ``nbgrader
  collect`` leaves it) and the assignment's due date in the gradebook mark late
  work; nbgrader's ``LateSubmissionPlugin`` sets the penalty.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import logging
import os
import queue
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import nbformat

from autograder import gradebook, report
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

STATUSES = ("graded", "tampered", "timeout", "kernel died", "invalid notebook", "missing")
TAMPER_POLICIES = ("zero", "keep")  # what a tampered notebook scores (see grade())
#: nbgrader metadata that no student may change (compared with the instructor's copy).
LOCKED_KEYS = ("grade", "solution", "locked", "points", "schema_version", "checksum", "task")
log = logging.getLogger("autograder.grade")


# ---------------------------------------------------------------- rebuilding what runs


def _meta(cell) -> dict:
    meta = cell.get("metadata", {}) if isinstance(cell, dict) else {}
    nbg = meta.get("nbgrader", {}) if isinstance(meta, dict) else {}
    return nbg if isinstance(nbg, dict) else {}


def _is_answer(cell) -> bool:
    return bool(_meta(cell).get("solution"))


def _is_locked(cell) -> bool:
    meta = _meta(cell)
    return bool(meta) and not meta.get("solution") and bool(meta.get("grade") or meta.get("locked"))


def rebuild(release: nbformat.NotebookNode, submitted: nbformat.NotebookNode | None):
    """The notebook to run: the instructor's ``release`` with the submission's answers pasted in.

    Returns ``(notebook, notes, tampered)``: ``notes`` are remarks for the result (deleted,
    duplicated or retyped answer cells, a changed kernelspec), ``tampered`` the locked cells or
    metadata the submission changed (ignored: the instructor's version is what runs).
    """
    nb = copy.deepcopy(release)
    notes, tampered = [], []
    if submitted is None:
        return nb, notes, tampered
    by_id: dict[str, list] = {}
    for cell in submitted.cells:
        gid = _meta(cell).get("grade_id")
        if isinstance(gid, str):
            by_id.setdefault(gid, []).append(cell)
    for gid, cells in sorted(by_id.items()):
        if len(cells) > 1:
            notes.append(f"grade_id {gid!r} appears {len(cells)} times: the first one was used")
    for cell in nb.cells:
        meta = _meta(cell)
        gid = meta.get("grade_id")
        if not gid:
            continue
        theirs = by_id.get(gid, [None])[0]
        if _is_answer(cell):
            if theirs is None:
                notes.append(f"answer cell {gid!r} is missing: its stub was graded")
            elif theirs.get("cell_type") != cell.cell_type or not _is_answer(theirs):
                notes.append(f"answer cell {gid!r} changed type or role: its stub was graded")
            else:
                cell.source = theirs.get("source", "")
                forged = [k for k in LOCKED_KEYS if k in meta and _meta(theirs).get(k) != meta.get(k)]
                if forged:
                    tampered.append(f"{gid} (metadata {', '.join(forged)} changed)")
        elif _is_locked(cell):
            if theirs is None:
                tampered.append(f"{gid} (deleted)")
                continue
            changed = []
            if theirs.get("cell_type") != cell.cell_type:
                changed.append("cell type")
            if theirs.get("source") != cell.source:
                changed.append("source")
            changed += [f"metadata {k}" for k in LOCKED_KEYS if k in meta and _meta(theirs).get(k) != meta.get(k)]
            if changed:
                tampered.append(f"{gid} ({', '.join(changed)} changed)")
    if submitted.metadata.get("kernelspec") != release.metadata.get("kernelspec"):
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

    @property
    def key(self) -> tuple[str, str, str]:
        return self.student, self.assignment, self.notebook


def write_notebook(nb, path: Path) -> None:
    """Write ``nb`` to ``path`` atomically (a reader never sees half a notebook)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    nbformat.write(nb, str(tmp))
    os.replace(tmp, path)


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


def prepare(sub: Submission, course: Course) -> Prepared:
    """Everything before the sandbox: read, rebuild, restore the hidden tests."""
    status, notes, submitted = None, [], None
    if sub.path is None:
        status, notes = "missing", [sub.missing]
    else:
        try:
            submitted = read_submission(sub.path)
        except InvalidNotebook as err:
            status, notes = "invalid notebook", [str(err)]
    nb, more, tampered = rebuild(course.release(sub.assignment, sub.notebook), submitted)
    nb = restore_hidden(nb, course, sub)
    first = next((i for i, c in enumerate(nb.cells) if _is_answer(c)), len(nb.cells))
    code = [(i, c.source) for i, c in enumerate(nb.cells) if c.cell_type == "code"] if status is None else []
    prefix, cells = [(i, s) for i, s in code if i < first], [(i, s) for i, s in code if i >= first]
    return Prepared(sub, nb, prefix, cells, status, notes + more, tampered)


def finish(prep: Prepared, run: sb.RunResult | None, course: Course) -> Result:
    """Everything after the sandbox: outputs into the notebook, grades into the gradebook, the files."""
    sub, nb = prep.sub, prep.nb
    notes = list(prep.notes)
    if prep.status is not None:
        status = prep.status
        fill_outputs(nb, None, f"not graded: {status} ({'; '.join(notes)})")
        banner = nbformat.v4.new_markdown_cell(f"**This notebook was not graded: {status}.** {'; '.join(notes)}")
        nb.cells.insert(0, banner)
    else:
        if run.how == "timeout":
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
        fill_outputs(nb, run, f"not run: {run.detail}")
    if sub.timestamp_note:
        notes.append(sub.timestamp_note)
    zero = prep.status is not None or (bool(prep.tampered) and course.tampered == "zero")
    scores = gradebook.save_grades(nb, course, sub, zero=zero)
    write_notebook(nb, course.root / "autograded" / sub.student / sub.assignment / f"{sub.notebook}.ipynb")
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
    )


def finish_safely(prep: Prepared, run: sb.RunResult | None, course: Course) -> Result:
    """:func:`finish`, or, if recording fails, a zero with the reason (never stop the batch)."""
    try:
        return finish(prep, run, course)
    except Exception as err:  # noqa: BLE001
        log.exception("could not record %s", sub_key(prep.sub))
        status = prep.status or "kernel died"
        return Result(*sub_key(prep.sub), status, f"could not record the result: {err}", 0.0, 0.0, {}, {})


def grade_all(
    subs: list[Submission],
    course: Course,
    jobs: int,
    limits: sb.Limits,
    progress: bool = True,
) -> list[Result]:
    """Grade every submission; sandboxes run ``jobs`` at a time, this thread writes every grade."""
    from tqdm import tqdm

    todo: queue.Queue = queue.Queue()
    done: queue.Queue = queue.Queue()
    results: dict[tuple, Result] = {}
    pending = 0
    bar = tqdm(total=len(subs), unit="notebook", desc="grading", disable=not progress, file=sys.stderr)
    runs = []
    for sub in subs:
        try:
            prep = prepare(sub, course)
        except GradingError:
            raise
        except Exception as err:  # noqa: BLE001 (whatever a file holds, it gets a result)
            log.exception("could not prepare %s", sub_key(sub))
            prep = prepare(dataclasses.replace(sub, path=None), course)
            prep.status, prep.notes = "invalid notebook", [f"could not be read ({type(err).__name__}: {err})"]
        if prep.status is not None:
            results[sub_key(sub)] = finish_safely(prep, None, course)
            bar.update()
        else:
            runs.append(prep)
    # One notebook after another, so that each sandbox runs a notebook's shared prefix once.
    for prep in sorted(runs, key=lambda p: (p.sub.assignment, p.sub.notebook, p.sub.student)):
        todo.put(prep)
        pending += 1

    def worker() -> None:
        box = sb.Sandbox(limits)
        try:
            while True:
                try:
                    prep = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    run = box.run(prep.cells, prefix=prep.prefix)
                except Exception as err:  # noqa: BLE001 (a sandbox failure is this submission's result)
                    run = sb.RunResult(how="died", detail=f"the sandbox failed: {err}")
                done.put((prep, run))
        finally:
            box.close()

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(max(1, min(jobs, pending)))]
    for thread in threads:
        thread.start()
    for _ in range(pending):
        prep, run = done.get()
        results[sub_key(prep.sub)] = finish_safely(prep, run, course)
        bar.update()
    for thread in threads:
        thread.join()
    bar.close()
    return [results[k] for k in sorted(results)]


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
) -> list[Result]:
    """Grade the class in ``submissions`` (a folder or a zip) into ``course_dir``; see the module docstring.

    ``tampered``: what a notebook whose locked cells or grading metadata were edited gets. ``"zero"`` (as
    DESIGN.md says), or ``"keep"``: the score of its answers, which ran with the course's own cells anyway
    (kinder to an accidental edit, e.g. on Colab, which does not lock cells). Either way its status is
    ``tampered`` and the reason lists the edits.
    """
    if tampered not in TAMPER_POLICIES:
        raise GradingError(f"tampered must be one of {', '.join(TAMPER_POLICIES)}, not {tampered!r}")
    sb.check_available()
    course_dir = Path(course_dir or default_course()).resolve()
    if not (course_dir / "gradebook.db").exists() and course_dir == Path(default_course()).resolve():
        from autograder import release

        release.release(course_dir)
    course = Course.load(course_dir)
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
        results = grade_all(subs, course, jobs or os.cpu_count() or 1, limits or sb.Limits(), progress)
    out.mkdir(parents=True, exist_ok=True)
    report.write_csv(results, out / "grades.csv")
    report.write_failures(results, out / "failures.csv")
    report.write_report(results, out)
    if feedback:
        report.generate_feedback(course, sorted({r.assignment for r in results}), jobs or os.cpu_count() or 1)
    return results


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
    parser.add_argument("--deadline", type=float, default=120.0, help="seconds per notebook (wall clock)")
    parser.add_argument("--memory", type=float, default=3.0, help="GiB of address space per notebook")
    parser.add_argument("--no-feedback", action="store_true", help="skip nbgrader's feedback HTML")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument(
        "--tampered",
        choices=TAMPER_POLICIES,
        default="zero",
        help="a notebook whose locked cells were edited scores zero (default), or keeps its answers' score",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
    limits = sb.Limits(deadline=args.deadline, memory=int(args.memory * sb.GiB))
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
