"""Written answers out for grading by question, and for Gradescope: part of ``make export`` (:mod:`autograder.lms`).

For an assignment of a graded course that has written questions (markdown answer cells graded by a person),
:func:`collect` gathers every student's answers and :func:`write` writes into ``OUT/written/ASSIGNMENT/``:

* ``by-question/``: ``index.html``, and per question ``question-N-GRADE_ID.html`` and ``.pdf``: the question, its
  model answer and rubric (``rubric.toml``), then every student's answer, students sorted by id (or, ``blind``, by
  an anonymous label); self-contained, to hand to graders (:mod:`.pages`, :mod:`.pdf`);
* ``by-student/STUDENT.pdf``: each student's written answers, one question per page, in Gradescope's template
  layout, and ``template.pdf``, the template to upload (:mod:`.pdf` says why this layout);
* ``blind-key.csv`` (``blind`` only): which label is which student, beside ``by-question/``, not in it.

:mod:`.answers` gathers the answers from the graded notebooks, and :mod:`.markdown` makes a student's Markdown
into HTML that cannot run or fetch anything. Drawing the PDFs takes fpdf2 about a tenth of a second per student and
question, so an assignment whose answers, names, questions and rubrics are those of the last export (and this
code the same) is not drawn again: ``.export.json`` in its folder records what was.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import json
import re
from pathlib import Path

from autograder.nbcourse import Course
from autograder.written import answers, pages, pdf

__all__ = ["Exported", "answers", "collect", "write"]

KEY_FIELDS = ("label", "student", "name")


def collect(course: Course, assignment: str, blind: bool = False) -> answers.Written:
    """The written answers of ``assignment`` in the graded ``course`` (:func:`answers.collect`)."""
    return answers.collect(course, assignment, blind=blind)


RECORD = ".export.json"
#: The files whose change makes every assignment's files drawn again.
CODE = (*Path(__file__).parent.glob("*.py"), *pages.TEMPLATES.glob("written*"))


@dataclasses.dataclass
class Exported:
    """What :func:`write` wrote (or, ``unchanged``, found written already) for one assignment."""

    assignment: str
    folder: Path
    questions: int
    students: int
    continued: dict[str, list[str]]  # student -> grade_ids whose answer ran onto continuation pages
    key: Path | None
    unchanged: bool = False


def file_name(student: str, taken: set[str]) -> str:
    """A file name for a student id: letters, digits and ``._@+-`` kept, anything else ``_``, unique in ``taken``."""
    name = re.sub(r"[^A-Za-z0-9._@+-]", "_", student).lstrip(".") or "_"
    base, n = name, 2
    while name in taken:
        name, n = f"{base}-{n}", n + 1
    taken.add(name)
    return name


def _clear(folder: Path, patterns: tuple[str, ...]) -> None:
    """Remove the files of an earlier export (only those this module writes), so none is left from it."""
    for pattern in patterns:
        for path in folder.glob(pattern):
            if path.is_file():
                path.unlink()


def write_key(written: answers.Written, path: Path) -> Path:
    """``blind-key.csv``: each anonymous label with its student's id and name, in the order of the labels."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(KEY_FIELDS)
        writer.writerows((s.shown, s.id, s.name) for s in written.students)
    return path


def digest(written: answers.Written, mathjax: bool) -> str:
    """What the files of ``written`` are drawn from: its content, the MathJax choice and this package's code."""
    h = hashlib.sha256()
    for path in sorted(CODE):
        h.update(path.read_bytes())
    content = {
        "written": dataclasses.asdict(written)
        | {"answers": sorted((*k, a.text, a.note) for k, a in written.answers.items())},
        "mathjax": mathjax,
    }
    h.update(json.dumps(content, sort_keys=True, default=str).encode())
    return h.hexdigest()


def _read_record(path: Path) -> dict:
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def write(written: answers.Written, out: Path, mathjax: Path | None = None) -> Exported:
    """Write the files of ``written`` (:func:`answers.collect`) under ``out/written/ASSIGNMENT`` (see the module
    docstring); ``mathjax``: MathJax's ``es5`` folder, for the pages' math."""
    assignment, blind = written.assignment, written.blind
    folder = Path(out) / "written" / assignment
    by_question, by_student = folder / "by-question", folder / "by-student"
    key = folder / "blind-key.csv"
    record, stamp = folder / RECORD, digest(written, mathjax is not None)
    shown_key = key if blind else None
    last = _read_record(record)
    if last.get("digest") == stamp and (folder / "template.pdf").is_file() and (by_question / "index.html").is_file():
        n, m = len(written.questions), len(written.students)
        return Exported(assignment, folder, n, m, last.get("continued", {}), shown_key, unchanged=True)
    record.unlink(missing_ok=True)  # an export cut short leaves no record, so the next one draws everything
    for path in (by_question, by_student):
        path.mkdir(parents=True, exist_ok=True)
    _clear(by_question, ("question-*.html", "question-*.pdf"))
    _clear(by_student, ("*.pdf",))
    for page in pages.write_pages(written, by_question, mathjax):
        (by_question / f"{page.stem}.pdf").write_bytes(pdf.question_pdf(written, page.question))
    (folder / "template.pdf").write_bytes(pdf.template_pdf(written))
    continued, taken = {}, set()
    for student_id, (data, placed) in pdf.student_pdfs(written).items():
        (by_student / f"{file_name(student_id, taken)}.pdf").write_bytes(data)
        if placed.continued:
            continued[student_id] = placed.continued
    if blind:
        write_key(written, key)
    elif key.exists():
        key.unlink()  # the files now show ids: a key of labels that no file uses would only mislead
    record.write_text(json.dumps({"digest": stamp, "continued": continued}, indent=1) + "\n")
    return Exported(assignment, folder, len(written.questions), len(written.students), continued, shown_key)
