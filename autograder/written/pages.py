"""The web pages of written answers by question: ``index.html`` and one page per question, in one folder.

Each page holds the question's text, its model answer and rubric (from ``rubric.toml``), then every student's answer
in the assignment's order (:mod:`autograder.written.answers`), numbered, each under the student's id, name or label.
The folder is self-contained, to hand to graders as it is: its style sheet and, where the course has it, MathJax
(the book's vendored copy, :mod:`publish.vendor`; only the files these pages use), so the math reads as math with no
network. Without MathJax the TeX stays text, in a monospaced font.

What keeps a student's answer from acting in a grader's browser: the answer is escaped HTML
(:mod:`autograder.written.markdown`), and each page declares a Content-Security-Policy (:data:`CSP`) that runs only
the folder's own scripts, loads nothing from elsewhere and follows no ``javascript:`` link.
"""

from __future__ import annotations

import dataclasses
import functools
import shutil
from pathlib import Path

from markupsafe import Markup

from autograder.written import markdown
from autograder.written.answers import Question, Written

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"
#: Scripts from the folder only (MathJax and its settings), styles from the folder and MathJax's own, fonts and
#: images from the folder; no connection anywhere, no form, no inline script (so no ``javascript:`` link runs).
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; font-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'"
)
#: What the pages need of MathJax's ``es5`` folder: the TeX-to-CHTML bundle, its fonts, the ``safe`` extension.
MATHJAX_FILES = ("tex-chtml-full.js", "output/chtml/fonts/woff-v2", "ui/safe.js", "LICENSE")


@dataclasses.dataclass(frozen=True)
class Page:
    """One question's page: the question, the file name without suffix (also the PDF's), how many answered."""

    question: Question
    stem: str
    answered: int


def stem(question: Question) -> str:
    """The file name (without suffix) of a question's page and PDF: ``question-1-answer_exact_lookup``."""
    return f"question-{question.number}-{question.grade_id}"


@functools.cache
def _templates():
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals["points"] = lambda p: f"{p:g} point" + ("" if p == 1 else "s")
    return env


def copy_mathjax(source: Path, folder: Path) -> Path:
    """Copy what the pages use of MathJax's ``es5`` folder ``source`` (:data:`MATHJAX_FILES`) and the pages'
    MathJax settings into ``folder/mathjax``."""
    dest = folder / "mathjax"
    for name in MATHJAX_FILES:
        src, out = source / name, dest / name
        out.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, out, dirs_exist_ok=True)
        else:
            shutil.copyfile(src, out)
    shutil.copyfile(TEMPLATES / "written-mathjax.js", dest / "config.js")
    return dest


def write_pages(written: Written, folder: Path, mathjax: Path | None = None) -> list[Page]:
    """Write ``index.html``, ``written.css`` and one page per question of ``written`` into ``folder`` (MathJax
    from ``mathjax``, MathJax's ``es5`` folder, if given); returns the pages' :class:`Page` list."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(TEMPLATES / "written.css", folder / "written.css")
    if mathjax is not None:
        copy_mathjax(mathjax, folder)
    pages = []
    for q in written.questions:
        answered = sum(written.answer(s, q).text is not None for s in written.students)
        pages.append(Page(q, stem(q), answered))
    template = _templates().get_template("written_question.html.j2")
    for i, page in enumerate(pages):
        q = page.question
        entries = []
        for student in written.students:
            answer = written.answer(student, q)
            html = Markup(markdown.to_html(answer.text)) if answer.text is not None else None
            entries.append({"student": student, "answer": answer, "html": html})
        text = template.render(
            written=written,
            question=q,
            stem=page.stem,
            previous=pages[i - 1] if i > 0 else None,
            next=pages[i + 1] if i + 1 < len(pages) else None,
            question_html=Markup(markdown.to_html(q.text)),
            model_html=Markup(markdown.to_html(q.rubric.answer)) if q.rubric else None,
            rubric_path=written.rubric_path,
            entries=entries,
            mathjax=mathjax is not None,
            csp=CSP,
        )
        (folder / f"{page.stem}.html").write_text(text, encoding="utf-8")
    index = _templates().get_template("written_index.html.j2").render(written=written, pages=pages, csp=CSP)
    (folder / "index.html").write_text(index, encoding="utf-8")
    return pages
