"""Grades into the LMS: ``python -m autograder.lms [--canvas EXPORT.csv] [--map MAP.csv] [...]`` (``make export``).

It writes, from the course's gradebook:

* ``COURSE/reports/nbgrader-grades.csv``: nbgrader's own export (its ``CsvExportPlugin``, what ``nbgrader export``
  writes: one row per student and assignment, ``score`` after the late penalty);
* with ``--canvas``, ``COURSE/reports/canvas-import.csv``: the CSV that Canvas exported for the course (Grades >
  Export > Export Entire Gradebook), with the column of each of our assignments filled in and every other cell as
  it was, to import again (Grades > Import). Students are matched by login: a course's student id is a Canvas
  ``SIS Login ID``, or the ``--map`` file (columns ``student`` and ``login``) says which login it is. The students
  found on one side only are listed;
* for each assignment with written questions and submissions, ``COURSE/reports/written/ASSIGNMENT/``: every
  student's answer to each written question, one HTML page and PDF per question (``--blind``: students by an
  anonymous label), and one PDF per student in Gradescope's template layout (:mod:`autograder.written`;
  ``--no-written`` for none).

Why the gradebook and not ``grades.csv``: ``make grade`` writes ``grades.csv`` afresh for the class it grades,
so after grading one assignment this week and another next week it holds only the last; and a score that a grader
gives in the formgrader after that run is in the gradebook only. The gradebook holds every assignment ever graded,
with the formgrader's scores and nbgrader's late penalties, and it is what ``nbgrader export`` reads, so both files
agree.

A Canvas export (see Canvas's guide "How do I export grades in the Gradebook?"): a header row ``Student``, ``ID``,
``SIS User ID``, ``SIS Login ID`` (some schools add ``Integration ID`` or ``Root Account``), ``Section``, then one
column per assignment named ``NAME (CANVAS_ID)``, then Canvas's read-only totals (``Current Score``...); a second row
whose first cell is ``Points Possible``, and sometimes a ``Manual Posting`` row; then a row per student. Our
assignment ``attention-scoring-functions`` is the column whose name, letters and digits only, is the same
(``Attention Scoring Functions (4711)``), or the one ``--column SLUG=HEADER`` names. A cell is written only where
the gradebook holds a submission of that student; every other cell, row and column is left exactly as it was.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import re
import subprocess
import sys
from pathlib import Path

from autograder.nbcourse import Course, GradingError

#: The columns every Canvas gradebook export has (Canvas needs them back to import).
REQUIRED = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
#: Identity columns some Canvas instances add before ``Section``; never an assignment.
IDENTITY = (*REQUIRED, "Integration ID", "Root Account")
#: The columns Canvas computes itself and ignores on import (``Current Score``, ``Assignments Final Points``,
#: ``Unposted Final Grade``, ``Override Score``...); their ``Points Possible`` cell says ``(read only)``.
COMPUTED = re.compile(r"(^|\s)((Unposted )?(Current|Final) (Score|Points|Grade)|Override (Score|Grade))$")
READ_ONLY = "(read only)"
POINTS_POSSIBLE = "Points Possible"
HOW_TO_EXPORT = "in Canvas: Grades > Export > Export Entire Gradebook, and give that file"


@dataclasses.dataclass(frozen=True)
class Score:
    """One student's score of one assignment in the gradebook, as ``nbgrader export`` computes it."""

    score: float  # after the late penalty, at least 0
    max_score: float
    waits: bool  # some written answer waits for a grader (it counts 0 until then)


def gradebook_scores(course: Course) -> dict[str, dict[str, Score]]:
    """``assignment -> student -> Score`` of every submission in the course's gradebook: the score after the late
    penalty (never below 0), as nbgrader's ``CsvExportPlugin`` computes it."""
    from nbgrader.api import Gradebook

    found: dict[str, dict[str, Score]] = {}
    with Gradebook(course.db_url, course.course_id) as gb:
        for assignment in gb.assignments:
            found[assignment.name] = {
                sub.student.id: Score(
                    score=max(0.0, float(sub.score) - float(sub.late_submission_penalty or 0.0)),
                    max_score=float(assignment.max_score),
                    waits=bool(sub.needs_manual_grade),
                )
                for sub in assignment.submissions
            }
    return found


def write_nbgrader_csv(course: Course, path: Path) -> Path:
    """nbgrader's own CSV export (what ``nbgrader export --to PATH`` writes), from the course's gradebook."""
    from nbgrader.api import Gradebook
    from nbgrader.plugins.export import CsvExportPlugin

    path.parent.mkdir(parents=True, exist_ok=True)
    plugin = CsvExportPlugin()
    plugin.to = str(path)
    with Gradebook(course.db_url, course.course_id) as gb:
        plugin.export(gb)
    return path


def _key(name: str) -> str:
    """A column's name as matched: without Canvas's `` (ID)``, letters and digits only, lower case."""
    return re.sub(r"[^0-9a-z]", "", re.sub(r"\s*\(\d+\)\s*$", "", name).lower())


@dataclasses.dataclass
class Export:
    """A Canvas gradebook export, read: its header, its rows (each a list of cells, as in the file), which rows are
    students, and where the points possible are."""

    header: list[str]
    rows: list[list[str]]
    students: list[int]  # indexes into rows
    points_row: int | None

    def column(self, name: str) -> int:
        return self.header.index(name)

    def computed(self, name: str) -> bool:
        """Whether column ``name`` is one Canvas computes (a total, a grade), which it ignores on import."""
        if COMPUTED.search(name):
            return True
        return self.points_row is not None and self.rows[self.points_row][self.column(name)].strip() == READ_ONLY

    def assignments(self) -> list[str]:
        """The assignment columns: neither a student's identity nor a total that Canvas computes."""
        return [h for h in self.header if h not in IDENTITY and not self.computed(h)]


def read_export(path: Path) -> Export:
    """Read a Canvas gradebook export, or say what is wrong with it and what to give instead."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as err:
        raise GradingError(f"cannot read the Canvas export {path}: {err}. Export it {HOW_TO_EXPORT}") from None
    rows = list(csv.reader(text.splitlines()))
    if not rows:
        raise GradingError(f"{path} is empty: export the gradebook {HOW_TO_EXPORT}")
    header = [h.strip() for h in rows[0]]
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise GradingError(
            f"{path} is not a Canvas gradebook export: it has no column {', '.join(missing)} (its columns: "
            f"{', '.join(header[:8])}{'...' if len(header) > 8 else ''}). Export it {HOW_TO_EXPORT}, unchanged"
        )
    body = [row + [""] * (len(header) - len(row)) for row in rows[1:]]
    ident, login = header.index("ID"), header.index("SIS Login ID")
    points = next((i for i, row in enumerate(body) if row[0].strip() == POINTS_POSSIBLE), None)
    students = [i for i, row in enumerate(body) if i != points and row[ident].strip() and row[0].strip()]
    students = [i for i in students if row_is_student(body[i], ident, login)]
    return Export(header=header, rows=body, students=students, points_row=points)


def row_is_student(row: list[str], ident: int, login: int) -> bool:
    """A student's row has Canvas's numeric user ID (the ``Points Possible`` and ``Manual Posting`` rows have none)."""
    return row[ident].strip().isdigit() or bool(row[login].strip())


def read_map(path: Path) -> dict[str, str]:
    """The ``--map`` file: course student id -> Canvas ``SIS Login ID`` (columns ``student`` and ``login``)."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            reader = csv.DictReader(fh)
            fields = [f.strip() for f in reader.fieldnames or []]
            if "student" not in fields or "login" not in fields:
                raise GradingError(
                    f"the map {path} needs the columns student (the course's id, as in grades.csv) and login (the "
                    f"student's SIS Login ID in Canvas); it has: {', '.join(fields) or 'nothing'}"
                )
            rows = [{k.strip(): (v or "").strip() for k, v in row.items() if k} for row in reader]
    except OSError as err:
        raise GradingError(f"cannot read the map {path}: {err}") from None
    mapping: dict[str, str] = {}
    for n, row in enumerate(rows, 2):
        if not row["student"] or not row["login"]:
            raise GradingError(f"{path}, line {n}: both student and login are needed")
        if mapping.setdefault(row["student"], row["login"]) != row["login"]:
            raise GradingError(f"{path}, line {n}: {row['student']} is mapped to two logins")
    return mapping


@dataclasses.dataclass
class Filled:
    """What :func:`fill_canvas` did: the export with our columns filled, and what a person should know."""

    export: Export
    columns: dict[str, str]  # assignment -> the Canvas column filled
    written: int  # cells written
    canvas_only: list[str]  # Canvas students (name, login) with no submission of ours in the gradebook
    course_only: list[str]  # course students with a submission whom no Canvas row matches
    notes: list[str]


def _number(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def match_columns(export: Export, assignments: list[str], named: dict[str, str], add: bool) -> dict[str, str]:
    """Our assignment -> the Canvas column for it: the one ``named`` gives, else the one whose name is the
    assignment's (:func:`_key`); a column that is missing is an error saying what to do (or added, ``add``)."""
    columns, missing = {}, []
    for assignment in assignments:
        if assignment in named:
            if named[assignment] not in export.header:
                raise GradingError(
                    f"--column {assignment}={named[assignment]!r}: the Canvas export has no such column; its "
                    f"assignment columns are: {', '.join(export.assignments()) or 'none'}"
                )
            columns[assignment] = named[assignment]
            continue
        found = [h for h in export.assignments() if _key(h) == _key(assignment)]
        if len(found) > 1:
            raise GradingError(
                f"{len(found)} Canvas columns could be {assignment}: {', '.join(found)}. Say which with "
                f"--column {assignment}='COLUMN'"
            )
        if found:
            columns[assignment] = found[0]
        elif add:
            columns[assignment] = assignment
        else:
            missing.append(assignment)
    if missing:
        raise GradingError(
            f"the Canvas export has no column for {', '.join(missing)}. Either create the assignment in Canvas "
            f"(named as ours, e.g. {missing[0]!r}) and export the gradebook again; or name its column with "
            f"--column {missing[0]}='Its Canvas name (ID)'; or leave it out with --assignment for the others; "
            "or give --add-missing, and Canvas creates the assignment when it imports the file. Canvas's "
            f"assignment columns: {', '.join(export.assignments()) or 'none'}"
        )
    return columns


def fill_canvas(
    export: Export,
    scores: dict[str, dict[str, Score]],
    mapping: dict[str, str] | None = None,
    named: dict[str, str] | None = None,
    add: bool = False,
) -> Filled:
    """Fill the column of each assignment of ``scores`` (assignment -> student -> :class:`Score`, those with a
    submission) in ``export``, matching students by ``SIS Login ID`` (``mapping``: course id -> login where they
    differ); every other cell stays as it was."""
    mapping, named = mapping or {}, named or {}
    graded = [a for a in scores if scores[a]]
    columns = match_columns(export, graded, named, add)
    for assignment, column in columns.items():
        if column not in export.header:  # --add-missing: a new column, before Canvas's totals
            at = next((i for i, h in enumerate(export.header) if export.computed(h)), len(export.header))
            export.header.insert(at, column)
            for row in export.rows:
                row.insert(at, "")
            if export.points_row is not None:
                export.rows[export.points_row][at] = _number(next(iter(scores[assignment].values())).max_score)
    login = export.column("SIS Login ID")
    by_login: dict[str, int] = {}
    notes: list[str] = []
    for i in export.students:
        key = export.rows[i][login].strip()
        if key and key in by_login:
            notes.append(f"two Canvas rows have the login {key}: the first is filled")
        by_login.setdefault(key, i)
    students = sorted({s for a in graded for s in scores[a]})
    login_of = {s: mapping.get(s, s) for s in students}
    written, matched = 0, set()
    for assignment, column in columns.items():
        col = export.column(column)
        max_score = next(iter(scores[assignment].values())).max_score
        if export.points_row is not None:
            possible = export.rows[export.points_row][col].strip()
            try:
                if possible and abs(float(possible) - max_score) > 1e-9:
                    notes.append(
                        f"{column}: Canvas gives {possible} points possible, the course {_number(max_score)}; set "
                        "the assignment's points in Canvas to the course's, or Canvas computes percentages of its own"
                    )
            except ValueError:
                pass
        waiting = 0
        for student, score in scores[assignment].items():
            row = by_login.get(login_of[student])
            if row is None:
                continue
            matched.add(student)
            export.rows[row][col] = _number(score.score)
            written += 1
            waiting += score.waits
        if waiting:
            notes.append(
                f"{column}: {waiting} of the scores count written answers that wait for a grader as 0 (grade them in "
                "nbgrader's formgrader, then export again)"
            )
    found = {login_of[s] for s in matched}
    name = export.column("Student")
    canvas_only = [
        f"{export.rows[i][name].strip()} ({export.rows[i][login].strip() or 'no login'})"
        for i in export.students
        if export.rows[i][login].strip() not in found
    ]
    course_only = [s if login_of[s] == s else f"{s} (login {login_of[s]})" for s in students if s not in matched]
    return Filled(export, columns, written, canvas_only, course_only, notes)


def write_export(export: Export, path: Path) -> Path:
    """Write the export back as Canvas reads it: the header, then every row, in the order read."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(export.header)
        writer.writerows(export.rows)
    return path


def _column_pair(text: str) -> tuple[str, str]:
    slug, sep, header = text.partition("=")
    if not sep or not slug.strip() or not header.strip():
        raise argparse.ArgumentTypeError(f"give ASSIGNMENT=COLUMN (our name = Canvas's column), not {text!r}")
    return slug.strip(), header.strip()


def main(argv=None) -> int:
    """The command line (``make export``); returns the exit status: 2 on a problem with the course or the command
    line (nothing written), or with one assignment's written answers (the rest written)."""
    parser = argparse.ArgumentParser(
        prog="python -m autograder.lms",
        description="Export the gradebook's scores (nbgrader's CSV, a Canvas gradebook import file) and the written "
        "answers, by question and per student.",
    )
    parser.add_argument("--course", type=Path, default=None, help="the nbgrader course (default: _build/course)")
    parser.add_argument("--canvas", type=Path, default=None, help="the CSV Canvas exported for the course")
    parser.add_argument("--map", type=Path, default=None, help="CSV with columns student,login where they differ")
    parser.add_argument(
        "--column", type=_column_pair, action="append", default=[], metavar="ASSIGNMENT=COLUMN",
        help="the Canvas column of one of our assignments, where its name is not ours",
    )  # fmt: skip
    parser.add_argument("--assignment", action="append", default=[], help="export only this assignment (repeat)")
    parser.add_argument("--add-missing", action="store_true", help="add a column (a new Canvas assignment) for ours")
    parser.add_argument("--out", type=Path, default=None, help="folder of the files (default: COURSE/reports)")
    parser.add_argument(
        "--blind", action="store_true",
        help="written answers by question show anonymous labels, not ids or names (the key: written/*/blind-key.csv)",
    )  # fmt: skip
    parser.add_argument("--no-written", action="store_true", help="write no files of written answers")
    args = parser.parse_args(argv)
    from autograder import release

    course_dir = Path(args.course or release.COURSE).resolve()
    out = Path(args.out or course_dir / "reports")
    try:
        course = Course.load(course_dir)
        scores = gradebook_scores(course)
        unknown = sorted(set(args.assignment) - set(scores))
        if unknown:
            raise GradingError(f"no assignment {', '.join(unknown)} in the gradebook; it has: {', '.join(scores)}")
        if args.assignment:
            scores = {a: s for a, s in scores.items() if a in args.assignment}
        filled = None
        if args.canvas is not None:
            mapping = read_map(args.map) if args.map else {}
            filled = fill_canvas(read_export(args.canvas), scores, mapping, dict(args.column), args.add_missing)
    except GradingError as err:
        print(f"export: {err}", file=sys.stderr)
        return 2
    print(f"nbgrader's CSV: {write_nbgrader_csv(course, out / 'nbgrader-grades.csv')}")
    status = 0
    if filled is not None:
        report_canvas(filled, out)
    if not args.no_written:
        status = export_written(course, [a for a in scores if scores[a]], out, args.blind)
    return status


def report_canvas(filled: Filled, out: Path) -> None:
    """Write the Canvas import file and say what a person should know about it."""
    path = write_export(filled.export, out / "canvas-import.csv")
    print(f"Canvas import file: {path} ({filled.written} scores; import it in Canvas: Grades > Import)")
    for assignment, column in filled.columns.items():
        print(f"  {assignment} -> {column}")
    for note in filled.notes:
        print(f"note: {note}")
    if filled.course_only:
        print(f"in the gradebook, not in Canvas ({len(filled.course_only)}): {', '.join(filled.course_only)}")
        print("  (a different login? list them in a --map file: student,login)")
    if filled.canvas_only:
        print(f"in Canvas, no submission in the gradebook ({len(filled.canvas_only)}): {', '.join(filled.canvas_only)}")


def mathjax() -> Path | None:
    """MathJax for the pages of written answers: the book's copy (:mod:`publish.vendor`, fetched with npm on first
    use), or ``None`` (the math stays TeX) with a note where it cannot be had."""
    from publish import vendor

    try:
        return vendor.mathjax_dir()
    except (SystemExit, OSError, subprocess.CalledProcessError) as err:
        print(f"note: no MathJax for the pages of written answers, so their math shows as TeX ({err})")
        return None


def export_written(course: Course, assignments: list[str], out: Path, blind: bool) -> int:
    """The files of written answers of each assignment (:func:`autograder.written.collect`, then
    :func:`autograder.written.write`); returns the exit status: 2 if an assignment's could not be written (said why;
    the others are written). An assignment whose release notebook is not in the course (a gradebook kept without
    its course folder) is noted and left out."""
    from autograder import written

    status, found = 0, []  # found: MathJax, looked for once an assignment has written questions
    for assignment in assignments:
        try:
            answers = written.collect(course, assignment, blind=blind)
            if not answers.questions or not answers.students:
                continue
            found = found or [mathjax()]
            done = written.write(answers, out, mathjax=found[0])
        except written.answers.MissingRelease as err:
            print(f"note: no written answers of {assignment}: {err}")
            continue
        except GradingError as err:
            print(f"export: written answers of {assignment}: {err}", file=sys.stderr)
            status = 2
            continue
        how = "unchanged since the last export" if done.unchanged else "written"
        print(
            f"written answers of {assignment}: {done.questions} questions, {done.students} students, {how}: "
            f"{done.folder}/by-question/index.html (by question), by-student/*.pdf and template.pdf (Gradescope)"
        )
        if done.key is not None:
            print(f"  blind: students by label; the key is {done.key} (keep it from the graders)")
        if done.continued:
            longer = ", ".join(f"{s} ({', '.join(q)})" for s, q in sorted(done.continued.items()))
            print(f"  answers longer than their page, continued after the last question: {longer}")
    return status


if __name__ == "__main__":
    sys.exit(main())
