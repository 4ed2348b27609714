"""The written answers of one graded assignment, gathered by question: what :mod:`autograder.written` writes out.

A written question is a markdown answer cell (nbgrader ``solution``, graded by a person) after the markdown cell
that asks it, which ends with ``**Your answer to question N:**`` (``tests/unit/course/test_book_structure.py``
requires it). From the course folder that ``make grade`` leaves:

* the questions, in the notebook's order, from the release notebook (trusted): the question's text is the asking
  cell from its numbered item ``N.`` on (else its last paragraph), its points the answer cell's;
* the model answer and rubric of each, from the section's ``rubric.toml`` (:mod:`autograder.rubrics`);
* who is in the class, from the gradebook's submissions of the assignment (with the names the gradebook holds, if
  any), sorted by id;
* each student's answer, from their graded notebook ``autograded/STUDENT/ASSIGNMENT/NOTEBOOK.ipynb``, whose answer
  cells the grader copied from the submission (the notebook is read defensively all the same).

For blind grading (:func:`collect` with ``blind=True``) each student is shown by a label, ``anon-`` and six hex
digits of an HMAC-SHA256 of the assignment and the student's id under a secret kept in the course folder
(:func:`blind_secret`): the same student has the same label in every file of the assignment and at every export,
labels differ between assignments, nobody can compute one from an id without the secret, and students are listed
in the order of their labels, which says nothing about their ids.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import os
import re
import secrets
from pathlib import Path

import nbformat

from autograder import rubrics
from autograder.nbcourse import Course, GradingError

#: The line that ends the cell asking written question N (the book's structure tests require it).
ASKS = re.compile(r"^\s*\*\*Your answer to question (\d+):\*\*\s*$")
#: A MyST role in a question's text (``{eq}`eq-roofline```): shown as its target, as code.
_ROLE = re.compile(r"\{[a-z][\w:-]*\}(`[^`]+`)")
#: The file in the course folder that keeps the secret of the blind labels (created on first use, owner only).
SECRET_FILE = ".written-answers-secret"
LABEL_PREFIX = "anon-"


class MissingRelease(GradingError):
    """The course has no release notebook of the assignment, so no questions to read (a gradebook without its
    course folder, or one from before ``make release``)."""


@dataclasses.dataclass(frozen=True)
class Question:
    """One written question: its answer cell's grade_id and points, its number and text, its rubric."""

    grade_id: str
    number: int
    notebook: str
    text: str  # Markdown, from the course's release notebook
    points: float
    rubric: rubrics.Rubric | None  # None: the section's rubric.toml has no entry for it

    @property
    def title(self) -> str:
        return f"Question {self.number}"


@dataclasses.dataclass(frozen=True)
class Student:
    """A student as the files show them: ``shown`` is the id (with the name, where the gradebook has one), or the
    anonymous label in blind mode."""

    id: str
    name: str
    shown: str


@dataclasses.dataclass(frozen=True)
class Answer:
    """One student's answer to one question: its Markdown, or ``None`` with ``note`` saying why there is none."""

    text: str | None
    note: str = ""


@dataclasses.dataclass
class Written:
    """The written answers of one assignment: its questions, its students (in the files' order), their answers."""

    assignment: str
    title: str
    questions: list[Question]
    students: list[Student]
    answers: dict[tuple[str, str], Answer]  # (student id, grade_id) -> answer
    blind: bool = False
    rubric_path: str = "rubric.toml"  # where the questions' rubrics come from, as the files name it

    def answer(self, student: Student, question: Question) -> Answer:
        return self.answers.get((student.id, question.grade_id), Answer(None, "no graded notebook"))


def question_text(source: str) -> tuple[int | None, str]:
    """The number and the text of the question that a markdown cell asks (the cell before an answer cell).

    The text is the cell from the numbered item ``N.`` that the last line names on (its number and the item's
    indentation removed), else the cell's last paragraph; MyST roles become code (``{eq}`x``` -> ```x```)."""
    lines = source.rstrip().split("\n")
    number = None
    if lines and (m := ASKS.match(lines[-1])):
        number = int(m.group(1))
        lines = lines[:-1]
    while lines and not lines[-1].strip():
        lines.pop()
    start = None
    if number is not None:
        item = re.compile(rf"^{number}\.\s")
        start = next((i for i in range(len(lines) - 1, -1, -1) if item.match(lines[i])), None)
    if start is None:
        blank = [i for i, line in enumerate(lines) if not line.strip()]
        start = blank[-1] + 1 if blank else 0
        body = lines[start:]
    else:
        first = re.sub(rf"^{number}\.\s+", "", lines[start])
        indent = len(lines[start]) - len(first) if lines[start].startswith(f"{number}.") else 0
        body = [first] + [line[indent:] if line[:indent].strip() == "" else line for line in lines[start + 1 :]]
    return number, _ROLE.sub(r"\1", "\n".join(body).strip())


def title_of(nb) -> str:
    """A notebook's title: its first level-1 heading (``11.1 Queries, Keys, and Values``), or ``""``."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.split("\n"):
                if line.startswith("# "):
                    return line[2:].strip()
    return ""


def questions_of(nb, notebook: str, entries: dict[str, rubrics.Rubric]) -> list[Question]:
    """The written questions of a course notebook (the release), in order, with their rubrics from ``entries``."""
    found, asking = [], ""
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {}) or {}
        if cell.cell_type == "markdown" and meta.get("solution") and meta.get("grade"):
            number, text = question_text(asking)
            gid = meta["grade_id"]
            found.append(
                Question(gid, number or len(found) + 1, notebook, text, float(meta.get("points", 0)), entries.get(gid))
            )
        if cell.cell_type == "markdown":
            asking = cell.source
    return found


def answers_in(nb) -> dict[str, str]:
    """grade_id -> source of every markdown answer cell of a graded notebook, whatever shape its cells have."""
    found: dict[str, str] = {}
    for cell in nb.get("cells", []) if isinstance(nb, dict) else []:
        meta = cell.get("metadata", {}) if isinstance(cell, dict) else {}
        nbg = meta.get("nbgrader", {}) if isinstance(meta, dict) else {}
        if not isinstance(nbg, dict) or not nbg.get("solution") or cell.get("cell_type") != "markdown":
            continue
        gid, source = nbg.get("grade_id"), cell.get("source", "")
        if isinstance(gid, str) and gid not in found:
            found[gid] = source if isinstance(source, str) else "".join(map(str, source))
    return found


def _answer(source: str | None) -> Answer:
    if source is None:
        return Answer(None, "no answer cell in the graded notebook")
    if not source.strip() or source.strip() == rubrics.TEXT_STUB:
        return Answer(None, "no answer")
    return Answer(source)


def blind_secret(course_root: Path) -> bytes:
    """The course's secret for blind labels (:data:`SECRET_FILE`), made on first use and readable by its owner only."""
    path = Path(course_root) / SECRET_FILE
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_hex(32) + "\n")
    return path.read_text().strip().encode()


def labels(secret: bytes, assignment: str, ids: list[str]) -> dict[str, str]:
    """An anonymous label per student id: stable for one secret and assignment, distinct within the class (a
    longer digest where six hex digits would repeat)."""
    digests = {s: hmac.new(secret, f"{assignment}\0{s}".encode(), hashlib.sha256).hexdigest() for s in ids}
    width = 6
    while len({d[:width] for d in digests.values()}) < len(digests):
        width += 2
    return {s: LABEL_PREFIX + d[:width] for s, d in digests.items()}


def _roster(course: Course, assignment: str) -> dict[str, str]:
    """student id -> name ("First Last", or "") of every submission of ``assignment`` in the gradebook."""
    from nbgrader.api import Gradebook

    with Gradebook(course.db_url, course.course_id) as gb:
        subs = gb.find_assignment(assignment).submissions
        return {
            sub.student.id: " ".join(n for n in (sub.student.first_name, sub.student.last_name) if n).strip()
            for sub in subs
        }


def collect(course: Course, assignment: str, blind: bool = False) -> Written:
    """The written answers of ``assignment`` in the graded ``course``, by question (see the module docstring)."""
    from course.section import section

    if assignment not in course.notebooks:
        raise GradingError(f"no assignment {assignment} in the gradebook; it has: {', '.join(course.notebooks)}")
    rubric_path = "rubric.toml"
    try:
        sec = section(assignment)
        rubric_path = sec.rubric.relative_to(sec.root).as_posix()
        entries = rubrics.load(sec)
    except KeyError:
        entries = {}  # an assignment that is not one of the book's sections: questions without rubrics
    except rubrics.RubricError as err:
        raise GradingError(str(err)) from None
    questions, title = [], ""
    for notebook in course.notebooks[assignment]:
        if not course.path("release", assignment, notebook).is_file():
            raise MissingRelease(
                f"the course has no release notebook {assignment}/{notebook}.ipynb, which holds the questions: "
                "run make release"
            )
        nb = course.release(assignment, notebook)
        title = title or title_of(nb)
        questions += questions_of(nb, notebook, entries)
    roster = _roster(course, assignment)
    if blind:
        shown = labels(blind_secret(course.root), assignment, list(roster))
        students = sorted((Student(s, n, shown[s]) for s, n in roster.items()), key=lambda s: s.shown)
    else:
        students = [Student(s, roster[s], f"{s} ({roster[s]})" if roster[s] else s) for s in sorted(roster)]
    answers: dict[tuple[str, str], Answer] = {}
    for student in students:
        for notebook in course.notebooks[assignment]:
            path = course.path("autograded", assignment, notebook, student=student.id)
            try:
                found = answers_in(nbformat.read(path, as_version=4))
            except FileNotFoundError:
                continue  # Written.answer says: no graded notebook
            except Exception as err:  # noqa: BLE001 (one unreadable notebook must not stop the export)
                found = None
                note = f"the graded notebook could not be read ({type(err).__name__})"
            for q in questions:
                if q.notebook == notebook:
                    answers[student.id, q.grade_id] = (
                        _answer(found.get(q.grade_id)) if found is not None else Answer(None, note)
                    )
    return Written(assignment, title or assignment, questions, students, answers, blind, rubric_path)
