"""make export's written answers, on a class of 11.1 graded by make grade's command line.

The class: ``ann`` (named Ann Abebe in the gradebook) answers both written questions, in Markdown with math and a
list; ``ben`` answers the first with markup that must stay text, and leaves the second as given; ``cat`` answers
both. Their code stubs stay unanswered, which grading does not need. ``make export`` then writes every student's
answer under its question, by question (HTML and PDF) and per student (PDF), and with ``--blind`` names nobody.
"""

from __future__ import annotations

import csv
import io
import re
import shutil

import markupsafe
import nbformat
import pytest
from pypdf import PdfReader

from autograder import lms, rubrics
from autograder.grading import cli
from course.section import section
from tests.support import corpus

SLUG = corpus.SLUG
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")

#: student -> (answer to question 1, answer to question 2); ``None``: the cell as given.
ANSWERS = {
    "ann": (
        "Ann would use a **hash table**, $O(1)$, or a *B-tree*, $O(\\log m)$; pooling costs $O(md)$.",
        "Queries are the search text, keys the documents:\n\n$$\\alpha = \\mathrm{softmax}(q^\\top k)$$\n\n"
        "- Ann trains on clicks\n- with a contrastive loss",
    ),
    "ben": ("Ben thinks <script>alert('owned')</script> an index <b>is</b> faster.", None),
    "cat": ("Cat scans every key: linear in m.", "Cat embeds the documents and ranks them."),
}
PHRASES = {
    "ann": ("Ann would use", "Ann trains on clicks"),
    "ben": ("Ben thinks", None),
    "cat": ("Cat scans every key", "Cat embeds the documents"),
}
Q1, Q2 = "question-1-answer_exact_lookup", "question-2-answer_search_engine"


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The class graded by the command line into a copy of the course, ann's name added to the gradebook."""
    from nbgrader.api import Gradebook

    root = tmp_path_factory.mktemp("written")
    course, subs = root / "course", root / "class"
    shutil.copytree(corpus.course_template((SLUG,)), course)
    blank = nbformat.read(course / "release" / SLUG / f"{SLUG}.ipynb", as_version=4)
    for student, texts in ANSWERS.items():
        nb = blank
        for gid, text in zip(("answer_exact_lookup", "answer_search_engine"), texts, strict=True):
            nb = corpus.with_answer(nb, gid, text) if text is not None else nb
        (subs / student / SLUG).mkdir(parents=True)
        nbformat.write(nb, str(subs / student / SLUG / f"{SLUG}.ipynb"))
    args = [str(subs), "--course", str(course), "--jobs", "2", "--out", str(root / "out"), "--deadline", "60"]
    assert cli.main([*args, "--quiet", "--no-feedback", "--no-similarity"]) == 0
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        gb.update_or_create_student("ann", first_name="Ann", last_name="Abebe")
    return course


def export(course, out, *extra, monkeypatch, capsys) -> str:
    monkeypatch.setattr(lms, "mathjax", lambda: None)  # the pages' MathJax is the unit tests'; no npm here
    assert lms.main(["--course", str(course), "--out", str(out), *extra]) == 0
    return capsys.readouterr().out


def pdf_pages(path) -> list[str]:
    return [" ".join(p.extract_text().split()) for p in PdfReader(io.BytesIO(path.read_bytes())).pages]


def in_order(text: str, *parts: str) -> bool:
    where = [text.find(p) for p in parts]
    return -1 not in where and where == sorted(where)


@needs_bwrap
@pytest.mark.slow
def test_export_writes_every_answer_under_its_question_and_a_pdf_per_student(graded, tmp_path, monkeypatch, capsys):
    said = export(graded, tmp_path, monkeypatch=monkeypatch, capsys=capsys)
    assert f"written answers of {SLUG}: 2 questions, 3 students, written" in said
    folder = tmp_path / "written" / SLUG
    model = rubrics.load(section(SLUG))["answer_exact_lookup"]
    one = (folder / "by-question" / f"{Q1}.html").read_text()
    assert "Suppose a database stores" in one and "<code>sharp_similarity</code>" in one  # the question
    assert markupsafe.escape(model.criteria[0].text) in one  # the rubric from rubric.toml
    assert in_order(one, "Model answer", "Rubric", "ann (Ann Abebe)", "Ann would use", " ben</h3>", "Ben thinks",
                    " cat</h3>", "Cat scans every key")  # fmt: skip
    assert "<script>alert" not in one and "&lt;script&gt;alert('owned')&lt;/script&gt;" in one
    assert "Ann trains on clicks" not in one  # question 2's answer is on question 2's page
    two = (folder / "by-question" / f"{Q2}.html").read_text()
    assert in_order(two, "ann (Ann Abebe)", "Ann trains", " ben</h3>", "(no answer)", " cat</h3>", "Cat embeds")
    text = " ".join(pdf_pages(folder / "by-question" / f"{Q1}.pdf"))
    assert in_order(text, "Suppose a database", "Model answer", "1. ann (Ann Abebe)", "Ann would use", "2. ben",
                    "<script>alert('owned')</script>", "3. cat", "Cat scans every key")  # fmt: skip
    assert "$O(\\log m)$" in text  # TeX as TeX
    assert sorted(p.name for p in (folder / "by-student").iterdir()) == ["ann.pdf", "ben.pdf", "cat.pdf"]
    for student, (first, second) in PHRASES.items():
        cover, page2, page3 = pdf_pages(folder / "by-student" / f"{student}.pdf")  # one page per question
        assert f"Student ID {student}" in cover
        assert page2.startswith("Question 1") and first in page2 and "Suppose a database" in page2
        assert page3.startswith("Question 2") and (second or "(no answer)") in page3
        others = [p for s, ps in PHRASES.items() if s != student for p in ps if p]
        assert first not in page3 and not any(p in page2 + page3 for p in others)
    assert "Name Ann Abebe" in pdf_pages(folder / "by-student" / "ann.pdf")[0]
    assert len(pdf_pages(folder / "template.pdf")) == 3


@needs_bwrap
@pytest.mark.slow
def test_blind_export_names_nobody_and_keeps_the_key_apart(graded, tmp_path, monkeypatch, capsys):
    said = export(graded, tmp_path, "--blind", monkeypatch=monkeypatch, capsys=capsys)
    folder = tmp_path / "written" / SLUG
    assert f"the key is {folder / 'blind-key.csv'}" in said
    with open(folder / "blind-key.csv", newline="") as fh:
        key = {row["student"]: row["label"] for row in csv.DictReader(fh)}
    assert sorted(key) == ["ann", "ben", "cat"] and all(label.startswith("anon-") for label in key.values())
    for name in (f"{Q1}.html", f"{Q2}.html", f"{Q1}.pdf", f"{Q2}.pdf", "index.html"):
        path = folder / "by-question" / name
        text = " ".join(pdf_pages(path)) if name.endswith(".pdf") else path.read_text()
        assert not re.search(r"\b(ann|ben|cat)\b|Abebe", text), name
    one = (folder / "by-question" / f"{Q1}.html").read_text()
    labels = sorted(key.values())  # in the order of their labels, which says nothing of the ids
    assert in_order(one, *labels)
    for student, (first, _) in PHRASES.items():
        assert in_order(one, f" {key[student]}</h3>", first)  # each answer under its student's label
    again = export(graded, tmp_path, "--blind", monkeypatch=monkeypatch, capsys=capsys)
    assert "unchanged since the last export" in again
    with open(folder / "blind-key.csv", newline="") as fh:
        assert {row["student"]: row["label"] for row in csv.DictReader(fh)} == key  # the same labels
