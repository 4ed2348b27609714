"""autograder/written: written answers by question (HTML and PDF) and per student in Gradescope's layout.

These tests build the answers of a small class by hand (:func:`class_of`); ``tests/grading/test_written_export.py``
takes them from a class graded by ``make grade``.
"""

from __future__ import annotations

import csv
import io

import markupsafe
import pytest
from pypdf import PdfReader

from autograder import rubrics
from autograder.written import answers, file_name, markdown, pages, pdf, write
from autograder.written.answers import Answer, Question, Student, Written

HOSTILE = (
    "Hello <script>alert(1)</script> **bold** $x^2 < y$\n\n"
    "![tracker](http://evil.example/x.png) [js](javascript:alert(1)) [file](/etc/passwd) [d2l](https://d2l.ai)\n\n"
    "<img src=x onerror=alert(3)>"
)


def rubric(gid: str, answer: str, *criteria: tuple[float, str]) -> rubrics.Rubric:
    return rubrics.Rubric(gid, answer, tuple(rubrics.Criterion(p, t) for p, t in criteria))


QUESTIONS = [
    Question(
        "answer_lookup",
        1,
        "nb",
        "How does a **classical index** find the nearest key, for $m$ keys?",
        1.0,
        rubric("answer_lookup", "A B-tree or a hash table: $O(\\log m)$.", (0.5, "Names an index."), (0.5, "Cost.")),
    ),
    Question("answer_engine", 2, "nb", "Design a search engine with attention.", 2.0, None),
]


def class_of(texts: dict[str, dict[str, str | None]], blind: bool = False) -> Written:
    """A class: student id -> grade_id -> answer (``None``: left unanswered), in the order given."""
    students = [Student(s, f"Name {s.title()}", f"anon-{i:06x}" if blind else s) for i, s in enumerate(texts)]
    found = {
        (s, gid): Answer(text) if text is not None else Answer(None, "no answer")
        for s, by in texts.items()
        for gid, text in by.items()
    }
    return Written("queries-keys-values", "11.1 Queries, Keys, and Values", QUESTIONS, students, found, blind)


CLASS = {
    "ann": {"answer_lookup": "Ann uses a **B-tree** in $O(\\log m)$.", "answer_engine": "Ann trains on clicks."},
    "ben": {"answer_lookup": HOSTILE, "answer_engine": None},
    "cat": {"answer_lookup": "Cat hashes the keys.", "answer_engine": "Cat embeds the documents."},
}


def pdf_pages(data: bytes) -> list[str]:
    return [" ".join(page.extract_text().split()) for page in PdfReader(io.BytesIO(data)).pages]


# ---------------------------------------------------------------- Markdown, safely


def test_an_answers_html_is_escaped_and_fetches_nothing():
    html = markdown.to_html(HOSTILE)
    assert "<script" not in html and "<img" not in html  # raw HTML is text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&lt;img src=x onerror=alert(3)&gt;" in html
    assert "<strong>bold</strong>" in html  # Markdown still works
    assert "[image: tracker]" in html and "evil.example" not in html  # an image is never loaded
    assert '<a href="https://d2l.ai">d2l</a>' in html  # a web link stays a link...
    assert "javascript:" not in html.replace("[js](javascript:alert(1))", "")  # ...any other is its text
    assert 'href="/etc/passwd"' not in html and "[file](/etc/passwd)" in html
    assert '<span class="math">\\(x^2 &lt; y\\)</span>' in html  # TeX for MathJax, escaped


def test_the_pdfs_html_keeps_tex_as_tex_and_loads_no_image():
    html = markdown.to_pdf_html(
        "Inline $x < y$ and\n\n$$\\sum_i a_i$$\n\n![local](/etc/passwd) ![web](https://a.b/c.png)"
    )
    assert f'<font face="{markdown.PDF_MONO}" color="{markdown.PDF_MATH_COLOUR}">$x &lt; y$</font>' in html
    assert "$$\\sum_i a_i$$" in html
    assert "<img" not in html and "[image: web]" in html and "a.b/c.png" not in html  # fpdf2 would fetch it
    assert "![local](/etc/passwd)" in html  # or read a local file: not even a link


def test_a_very_long_answer_is_cut_and_says_how_much():
    text = "word " * (markdown.MAX_CHARS // 5 + 100)
    shown = markdown.clipped(text)
    assert len(shown) < len(text) and shown.startswith(text[: markdown.MAX_CHARS])
    assert f"cut: {len(text) - markdown.MAX_CHARS:,} more characters" in shown
    assert markdown.clipped("short") == "short"


# ---------------------------------------------------------------- gathering the answers


def test_the_question_is_its_numbered_item_without_the_discussions_introduction():
    cell = (
        "## Discussion\n\nAnswer in a few sentences each; these answers are read by your instructor.\n\n"
        "1. Suppose a database stores pairs. How does a classical index do it,\n"
        "   and what breaks in floating point? See {eq}`eq-roofline`.\n\n"
        "**Your answer to question 1:**"
    )
    assert answers.question_text(cell) == (
        1,
        "Suppose a database stores pairs. How does a classical index do it,\n"
        "and what breaks in floating point? See `eq-roofline`.",
    )
    number, text = answers.question_text("Some prose.\n\nWhat would you change first?")
    assert (number, text) == (None, "What would you change first?")  # unnumbered: its last paragraph


def test_the_answer_cells_of_a_malformed_notebook_are_read_without_an_error():
    nb = {
        "cells": [
            {"cell_type": "markdown", "metadata": [], "source": "metadata is a list"},
            {"cell_type": "markdown", "metadata": {"nbgrader": "a string"}, "source": "nbgrader is a string"},
            {"cell_type": "code", "metadata": {"nbgrader": {"solution": True, "grade_id": "x"}}, "source": "code"},
            {
                "cell_type": "markdown",
                "metadata": {"nbgrader": {"solution": True, "grade_id": "x"}},
                "source": ["a", "b"],
            },
            {"cell_type": "markdown", "metadata": {"nbgrader": {"solution": True, "grade_id": "x"}}, "source": "again"},
        ]
    }
    assert answers.answers_in(nb) == {"x": "ab"}  # the first markdown answer cell of that grade_id
    assert answers.answers_in({"cells": "not a list"}) == {} and answers.answers_in([]) == {}


def test_blind_labels_are_stable_secret_distinct_and_per_assignment():
    ids = [f"student{i}" for i in range(20_000)]  # six hex digits repeat among this many: longer labels then
    first = answers.labels(b"secret", "queries-keys-values", ids)
    assert first == answers.labels(b"secret", "queries-keys-values", ids)  # stable
    assert len(set(first.values())) == len(ids)  # distinct
    assert all(label.startswith(answers.LABEL_PREFIX) for label in first.values())
    small = answers.labels(b"secret", "queries-keys-values", ids[:3])
    assert all(len(label) == len(answers.LABEL_PREFIX) + 6 for label in small.values())
    assert small != answers.labels(b"other secret", "queries-keys-values", ids[:3])  # no label without the secret
    assert small != answers.labels(b"secret", "attention-pooling", ids[:3])  # nor across assignments


def test_the_blind_secret_is_made_once_and_private(tmp_path):
    secret = answers.blind_secret(tmp_path)
    assert secret == answers.blind_secret(tmp_path) and len(secret) == 64
    assert (tmp_path / answers.SECRET_FILE).stat().st_mode & 0o077 == 0


# ---------------------------------------------------------------- the pages by question


def fake_mathjax(tmp_path):
    folder = tmp_path / "mathjax-es5"
    for name in pages.MATHJAX_FILES:
        path = folder / name / "font.woff" if not name.endswith((".js", "LICENSE")) else folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("/* MathJax */")
    return folder


def test_each_question_page_has_the_rubric_then_every_answer_in_order(tmp_path):
    written = class_of(CLASS)
    made = pages.write_pages(written, tmp_path / "out", fake_mathjax(tmp_path))
    assert [p.stem for p in made] == ["question-1-answer_lookup", "question-2-answer_engine"]
    assert [p.answered for p in made] == [3, 2]
    one = (tmp_path / "out" / "question-1-answer_lookup.html").read_text()
    assert "classical index" in one and "A B-tree or a hash table" in one and "Names an index." in one
    order = [one.index(t) for t in ("Model answer", " ann</h3>", "Ann uses a", " ben</h3>", " cat</h3>", "Cat hashes")]
    assert order == sorted(order)  # the rubric on top, then students in order, each answer under its student
    assert "Ann trains on clicks" not in one  # another question's answer
    assert one.count("<script") == 2 and 'src="mathjax/config.js"' in one  # MathJax and its settings only
    assert f'content="{markupsafe.escape(pages.CSP)}"' in one and "script-src 'self';" in pages.CSP
    two = (tmp_path / "out" / "question-2-answer_engine.html").read_text()
    assert "(no answer)" in two and "has no entry <code>[answer_engine]</code>" in two
    assert (tmp_path / "out" / "mathjax" / "config.js").is_file()
    index = (tmp_path / "out" / "index.html").read_text()
    assert 'href="question-1-answer_lookup.html"' in index and "3 of 3" in index


def test_blind_pages_name_no_student(tmp_path):
    written = class_of(CLASS, blind=True)
    pages.write_pages(written, tmp_path)
    for page in ("question-1-answer_lookup.html", "question-2-answer_engine.html", "index.html"):
        text = (tmp_path / page).read_text()
        assert not any(f" {s}</h3>" in text or f"Name {s.title()}" in text for s in CLASS), page
    assert "anon-000001" in (tmp_path / "question-1-answer_lookup.html").read_text()
    assert "<script" not in (tmp_path / "question-1-answer_lookup.html").read_text()  # no MathJax given: none


# ---------------------------------------------------------------- the PDFs


def test_the_pdf_by_question_holds_the_rubric_and_every_answer_in_order():
    written = class_of(CLASS)
    text = " ".join(pdf_pages(pdf.question_pdf(written, QUESTIONS[0])))
    order = [text.index(t) for t in ("classical index", "Model answer", "Names an index.", "1. ann", "Ann uses a",
                                     "2. ben", "<script>alert(1)</script>", "3. cat", "Cat hashes")]  # fmt: skip
    assert order == sorted(order)
    assert "$x^2 < y$" in text  # TeX as TeX


def test_each_student_pdf_has_a_cover_then_one_page_per_question_in_order():
    written = class_of(CLASS)
    made = pdf.student_pdfs(written)
    assert list(made) == ["ann", "ben", "cat"]
    ann = pdf_pages(made["ann"][0])
    assert len(ann) == 1 + len(QUESTIONS)
    assert "Name Ann" in ann[0] and "Student ID ann" in ann[0] and "page 2 Question 1" in ann[0]
    assert ann[1].startswith("Question 1") and "classical index" in ann[1] and "Ann uses a B-tree" in ann[1]
    assert ann[2].startswith("Question 2") and "Ann trains on clicks" in ann[2] and "B-tree" not in ann[2]
    assert not any("ann" in page.split() or "Name Ann" in page for page in ann[1:])  # identity on the cover only
    ben = pdf_pages(made["ben"][0])
    assert "(no answer)" in ben[2] and "Cat" not in " ".join(ben)
    template = pdf_pages(pdf.template_pdf(written))
    assert len(template) == len(ann) and [p.split()[:2] for p in template[1:]] == [p.split()[:2] for p in ann[1:]]
    assert "Ann" not in " ".join(template) and "Student ID" in template[0]


def test_an_answer_longer_than_its_page_goes_on_after_the_last_question():
    long = " ".join(f"Sentence {i} of a long answer about indexes." for i in range(400))
    written = class_of({"ann": {"answer_lookup": long, "answer_engine": "Short answer."}})
    data, placed = pdf.student_pdfs(written)["ann"]
    text = pdf_pages(data)
    assert placed.continued == ["answer_lookup"]
    assert len(text) > 1 + len(QUESTIONS)
    assert text[1].startswith("Question 1 ") and "Sentence 0 of" in text[1] and pdf.CONTINUED in text[1]
    assert text[2].startswith("Question 2 ") and "Short answer." in text[2]  # the template's page 3 is still Q2
    rest = " ".join(text[3:])
    assert text[3].startswith("Question 1 (continued)") and "Sentence 399 of" in rest


# ---------------------------------------------------------------- writing a class's files


def test_write_draws_once_per_content_and_keeps_the_blind_key_apart(tmp_path):
    written = class_of(CLASS, blind=True)
    done = write(written, tmp_path)
    folder = tmp_path / "written" / "queries-keys-values"
    assert done.folder == folder and not done.unchanged and done.key == folder / "blind-key.csv"
    with open(done.key, newline="") as fh:
        assert [tuple(r.values()) for r in csv.DictReader(fh)] == [
            (f"anon-{i:06x}", s, f"Name {s.title()}") for i, s in enumerate(CLASS)
        ]
    assert sorted(p.name for p in (folder / "by-student").iterdir()) == ["ann.pdf", "ben.pdf", "cat.pdf"]
    assert (folder / "template.pdf").is_file() and (folder / "by-question" / "question-2-answer_engine.pdf").is_file()
    stamp = (folder / "by-student" / "ann.pdf").stat().st_mtime_ns
    assert write(written, tmp_path).unchanged
    assert (folder / "by-student" / "ann.pdf").stat().st_mtime_ns == stamp
    changed = class_of({**CLASS, "cat": {"answer_lookup": "Cat changed her mind.", "answer_engine": None}})
    again = write(changed, tmp_path)
    assert not again.unchanged and again.key is None and not (folder / "blind-key.csv").exists()
    assert "Cat changed her mind." in " ".join(pdf_pages((folder / "by-student" / "cat.pdf").read_bytes()))


@pytest.mark.parametrize(
    ("student", "name"), [("ann", "ann"), ("a/../b", "a_.._b"), (".hidden", "hidden"), ("ünï", "_n_")]
)
def test_a_student_id_becomes_a_safe_file_name(student, name):
    assert file_name(student, set()) == name
    assert file_name("ann", {"ann"}) == "ann-2"
