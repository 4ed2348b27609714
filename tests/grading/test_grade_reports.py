"""make grade's similarity report and make export's Canvas file, on a class of 11.1 graded by the command line.

The class: ``ann`` answers every stub as the reference does; ``ben`` leaves every stub as given but one,
``query_jacobian``, ann's answer with its variables renamed, two lines swapped and a comment of his own (holding
markup, which the report must show as text); ``fay`` writes her own ``query_jacobian``; four students hand in the
notebook unanswered. Only ann and ben's ``query_jacobian`` is alike; no grade changes for it. Then the class's
Canvas export (ben's login there is ``bjones``, and Canvas has a student who handed in nothing) gets its scores.

11.1's exercises have no reference in ``qkv``, so that class has no answer like it; a class of 11.3, its answers
written into the course as the grader writes them, has one (``reference.csv``, :mod:`autograder.reference`).
"""

from __future__ import annotations

import csv
import shutil

import nbformat
import pytest

from autograder import lms, reference, report, similarity
from autograder.grading import cli
from autograder.grading.results import Result
from autograder.nbcourse import Course
from tests.support import corpus, once
from tests.unit.autograder.test_reference import pasted, written_apart

SLUG = corpus.SLUG
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")

FAY = """
    outputs = weights @ keys  # (Q, d)
    centred = keys[None, :, :] - outputs[:, None, :]  # (Q, K, d): each key minus query i's output
    weighted = weights[:, :, None] * centred  # (Q, K, d)
    return beta * weighted.transpose(1, 2) @ centred  # (Q, d, K) @ (Q, K, d) -> (Q, d, d)
"""


def bens(reference: str) -> str:
    """ann's ``query_jacobian`` as ben hands it in: its variables renamed, the first two lines swapped, a comment
    with markup."""
    head, quotes, body = reference.rpartition('"""')
    for old, new in {"mean": "m", "second": "s2", "outer": "mm"}.items():
        body = body.replace(old, new)
    lines = body.split("\n")
    first = next(i for i, line in enumerate(lines) if line.strip())
    lines[first], lines[first + 1] = lines[first + 1], lines[first]
    lines.insert(first, "    # <b>my own</b> derivation")
    return head + quotes + "\n".join(lines)


def make_class(root, course_dir) -> None:
    release = course_dir / "release" / SLUG / f"{SLUG}.ipynb"
    solved = corpus.solved_notebook(release, SLUG)
    blank = nbformat.read(release, as_version=4)
    reference = corpus.find_cell(solved, "query_jacobian").source
    stub = corpus.find_cell(blank, "query_jacobian").source
    own = stub.split("    # YOUR CODE HERE")[0] + FAY.lstrip("\n")
    notebooks = {
        "ann": solved,
        "ben": corpus.with_answer(blank, "query_jacobian", bens(reference)),
        "fay": corpus.with_answer(blank, "query_jacobian", own),
        **{f"stub{i}": blank for i in range(4)},
    }
    for student, nb in notebooks.items():
        (root / student / SLUG).mkdir(parents=True)
        nbformat.write(nb, str(root / student / SLUG / f"{SLUG}.ipynb"))


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    template = corpus.course_template((SLUG,))

    def produce(root):
        course_dir, subs, out = root / "course", root / "class", root / "out"
        shutil.copytree(template, course_dir)
        make_class(subs, course_dir)
        args = [str(subs), "--course", str(course_dir), "--jobs", "2", "--out", str(out), "--deadline", "60"]
        return cli.main([*args, "--quiet", "--no-feedback"])

    folder = once.shared_dir(tmp_path_factory) / "grading-similarity"
    return folder, once.run_once(folder, produce)


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


@needs_bwrap
@pytest.mark.slow
def test_grading_lists_the_copied_pair_only_and_shows_it_side_by_side(graded):
    root, code = graded
    assert code == 0
    rows = read_csv(root / "out" / "similarity.csv")
    assert list(rows[0]) == list(similarity.FIELDS)
    assert [(r["grade_id"], r["student_a"], r["student_b"]) for r in rows] == [("query_jacobian", "ann", "ben")]
    assert float(rows[0]["similarity"]) >= similarity.THRESHOLD
    html = (root / "out" / "report.html").read_text(encoding="utf-8")
    assert "<h2>Answers alike</h2>" in html
    assert "&lt;b&gt;my own&lt;/b&gt; derivation" in html and "<b>my own</b>" not in html
    # Side by side, ben's renamed line marked as matching ann's; neither docstring nor signature is marked.
    assert '<td class="same">    s2 = torch.einsum(' in html
    assert '<td class="same">    second = torch.einsum(' in html
    assert '<td class="same">def query_jacobian' not in html and '<td class="same">    """' not in html
    # The grades are the grader's, whatever the report says: ben's copied answer keeps its points.
    grades = {r["student"]: r for r in read_csv(root / "out" / "grades.csv")}
    assert grades["ben"]["test_query_jacobian"] == grades["ann"]["test_query_jacobian"] != "0"


@needs_bwrap
@pytest.mark.slow
def test_a_class_of_a_section_without_qkv_components_has_no_answer_like_the_reference(graded):
    root, code = graded
    assert code == 0
    assert read_csv(root / "out" / "reference.csv") == []
    assert (root / "out" / "reference.csv").read_text().strip() == ",".join(reference.FIELDS)
    assert "like-reference" not in (root / "out" / "report.html").read_text(encoding="utf-8")


def test_an_answer_pasted_from_qkv_is_listed_beside_it_and_answers_written_apart_are_not(tmp_path):
    """11.3: ann hands in the reference answers (DotProductAttention's is qkv's own code), ben qkv's
    DotProductAttention renamed and reordered, with a comment holding markup; cho wrote DotProductAttention apart
    from it; four leave the stubs. Only ann's and ben's DotProductAttention are listed, each beside the reference."""
    slug = corpus.INTEGRITY_SLUG
    course_dir = tmp_path / "course"
    shutil.copytree(corpus.course_template((slug,)), course_dir)
    course = Course.load(course_dir)
    release = course.release_path(slug, slug)
    solved, blank = corpus.solved_notebook(release, slug), nbformat.read(release, as_version=4)
    dot = corpus.find_cell(solved, "DotProductAttention").source
    ben = pasted(dot).replace("    def forward(", "    # <b>mine</b>\n    def forward(")
    apart = next(v for s, v in written_apart() if s == slug and v.grade_id == "DotProductAttention")
    notebooks = {
        "ann": solved,
        "ben": corpus.with_answer(blank, "DotProductAttention", ben),
        "cho": corpus.with_answer(blank, "DotProductAttention", apart.apply(dot)),
        **{f"stub{i}": blank for i in range(4)},
    }
    results = []
    for student, nb in notebooks.items():
        path = course.path("autograded", slug, slug, student=student)
        path.parent.mkdir(parents=True)
        nbformat.write(nb, str(path))
        results.append(Result(
            student=student, assignment=slug, notebook=slug, status="graded", reason="", score=1.0, max_score=1.0,
            exercises={}, max_points={},
        ))  # fmt: skip
    found = reference.find(course, results)
    assert [(m.student, m.grade_id) for m in found.matches] == [
        ("ann", "DotProductAttention"),
        ("ben", "DotProductAttention"),
    ]
    assert found.matches[0].score == 1.0 and found.matches[1].score >= reference.THRESHOLD
    compared = {gid for _, gid, _ in found.compared}
    assert {"masked_softmax", "DotProductAttention", "AdditiveAttention"} == compared  # the three qkv has
    rows = read_csv(reference.write_csv(found.matches, tmp_path / "reference.csv"))
    assert [(r["student"], r["exercise"]) for r in rows] == [
        ("ann", "DotProductAttention"),
        ("ben", "DotProductAttention"),
    ]
    html = report.write_report(results, tmp_path, [], like_reference=found).read_text(encoding="utf-8")
    assert "This changes no grade and accuses no one." in html
    assert "&lt;b&gt;mine&lt;/b&gt;" in html and "<b>mine</b>" not in html
    assert '<td class="same">        s = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(size)</td>' in html


CANVAS = """Student,ID,SIS User ID,SIS Login ID,Section,Queries Keys Values (5001),Current Score,Final Score
    Points Possible,,,,,10.00,(read only),(read only)
"Abebe, Ann",201,S201,ann,Section 1,,,
"Jones, Ben",202,S202,bjones,Section 1,7.00,70.00,70.00
"Zhou, Zed",203,S203,zed,Section 2,,,
Stub0,210,S210,stub0,Section 2,,,
"""


@needs_bwrap
@pytest.mark.slow
def test_make_export_writes_the_graded_scores_into_canvass_file(graded, tmp_path, capsys):
    root, code = graded
    assert code == 0
    (tmp_path / "canvas.csv").write_text(CANVAS)
    (tmp_path / "map.csv").write_text("student,login\nben,bjones\n")
    args = ["--course", str(root / "course"), "--canvas", str(tmp_path / "canvas.csv"), "--out", str(tmp_path)]
    assert lms.main([*args, "--map", str(tmp_path / "map.csv")]) == 0
    said = capsys.readouterr().out
    grades = {r["student"]: r["score"] for r in read_csv(root / "out" / "grades.csv")}
    theirs = {r["student_id"]: float(r["score"]) for r in read_csv(tmp_path / "nbgrader-grades.csv")}
    rows = {r["SIS Login ID"] or r["Student"].strip(): r for r in read_csv(tmp_path / "canvas-import.csv")}
    column = "Queries Keys Values (5001)"
    assert rows["ann"][column] == grades["ann"] and float(grades["ann"]) == theirs["ann"] > 0
    assert rows["bjones"][column] == grades["ben"] and rows["bjones"]["Current Score"] == "70.00"
    assert rows["stub0"][column] == grades["stub0"] == "0"
    assert rows["zed"][column] == "" and rows["Points Possible"][column] == "10.00"
    assert "in the gradebook, not in Canvas (4): fay, stub1, stub2, stub3" in said
    assert "in Canvas, no submission in the gradebook (1): Zhou, Zed (zed)" in said
    assert "points possible, the course" not in said  # 10 points: 11.1's total
