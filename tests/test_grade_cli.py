"""The grading command (autograder.grade, autograder.report): layout, zips, rebuild, outputs, nbgrader's tools.

The pure parts (finding submissions, extracting zips, rebuilding the notebook to
run, cleaning outputs) are checked directly; a small class is then graded by the
command line into a copy of a built course, and nbgrader's own ``export`` and
``generate_feedback`` are run on the result. Last, a real Jupyter server runs nbgrader's formgrader on a copy
of the graded course: the test uses its pages and JSON API as the browser does, finds the model answer and rubric
under each written answer (and none in the feedback), gives written answers their points, and grades again.
"""

from __future__ import annotations

import copy
import csv
import datetime
import json
import shutil
import socket
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zipfile
from html import escape as html_escape
from pathlib import Path

import nbformat
import pytest

from autograder import gradebook, release, report, rubrics, submissions
from autograder.grading import cli
from autograder.grading.journal import Journal
from autograder.grading.options import GradeOptions
from autograder.grading.outputs import clean_outputs, integrity_changes, name_exercises, stub_exercises
from autograder.grading.rebuild import RECOVER, rebuild, untrusted_is_answer, untrusted_meta
from autograder.grading.results import Result
from autograder.nbcourse import Course, GradingError
from autograder.sandboxed import protocol
from course.section import section
from tests.support import corpus, once
from tests.test_rubrics import needles, plain_runs

SLUG = corpus.SLUG
needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap is not installed (apt-get install bubblewrap)"
)
EXERCISES = ["test_attention_pooling", "test_sharp_similarity", "test_query_jacobian", "test_averaging_similarity"]


# ---------------------------------------------------------------- pure parts


def cell(kind, source, **nbgrader):
    new = nbformat.v4.new_code_cell if kind == "code" else nbformat.v4.new_markdown_cell
    return new(source, metadata={"nbgrader": nbgrader} if nbgrader else {})


def release_notebook():
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        cell("code", "import torch", grade_id="setup", locked=True, solution=False, grade=False, schema_version=3),
        cell(
            "code",
            "# YOUR CODE HERE\nraise NotImplementedError()",
            grade_id="f",
            solution=True,
            grade=False,
            locked=False,
            schema_version=3,
        ),
        cell(
            "code",
            "assert f() == 1",
            grade_id="test_f",
            grade=True,
            solution=False,
            locked=True,
            points=2,
            schema_version=3,
        ),
        cell(
            "markdown",
            "YOUR ANSWER HERE",
            grade_id="why",
            grade=True,
            solution=True,
            locked=False,
            points=1,
            schema_version=3,
        ),
        cell("code", "print('a demo')"),
    ]
    return nb


def test_rebuild_takes_only_the_answers_and_reports_the_rest():
    release = release_notebook()
    sub = copy.deepcopy(release)
    sub.cells[1].source = "def f():\n    return 1"
    sub.cells[3].source = "Because."
    sub.cells[2].source = "pass"  # an edited test
    sub.cells[4].source = "import os; os.remove('/important')"  # an edited plain cell
    forged = cell(
        "code", "def f():\n    return 2", grade_id="f", solution=True, grade=False, locked=False, schema_version=3
    )
    sub.cells.append(forged)  # a second answer cell f, after the first
    sub.cells.insert(0, cell("code", "x = 1", grade_id="test_f", solution=True))  # poses as test_f's answer
    sub.metadata["kernelspec"] = {"name": "evil", "display_name": "Evil", "language": "python"}
    nb, notes, tampered = rebuild(release, sub)
    assert [c.source for c in nb.cells] == [
        "import torch",
        "def f():\n    return 1",  # the first answer f
        "assert f() == 1",  # the instructor's test, not 'pass' nor the impostor
        "Because.",
        "print('a demo')",  # plain cells are the instructor's too
    ]
    assert [c.metadata for c in nb.cells] == [c.metadata for c in release.cells]
    assert any("'f' appears 2 times" in n for n in notes) and any("kernelspec" in n for n in notes)
    # The impostor says test_f is an answer: its role changed (its missing "grade" key is no edit: issue 37).
    assert len(tampered) == 1 and tampered[0].startswith("test_f (source, metadata solution changed)")


def test_rebuild_does_not_call_changed_tags_tampering():
    """Tags are not nbgrader's metadata: the book tags test cells raises-exception (so that Run All goes on), and
    a student whose JupyterLab drops, keeps or adds tags has tampered with nothing; the course's tags are run."""
    release = release_notebook()
    release.cells[2].metadata["tags"] = ["raises-exception"]
    for tags in ([], ["raises-exception", "raises-exception"], ["hide-input"]):
        sub = copy.deepcopy(release)
        sub.cells[2].metadata["tags"] = tags
        sub.cells[0].metadata["tags"] = tags
        nb, notes, tampered = rebuild(release, sub)
        assert tampered == [] and notes == [], tags
        assert nb.cells[2].metadata["tags"] == ["raises-exception"] and "tags" not in nb.cells[0].metadata


def test_rebuild_falls_back_to_the_stub_for_deleted_or_retyped_answers():
    release = release_notebook()
    deleted = copy.deepcopy(release)
    del deleted.cells[1]
    retyped = copy.deepcopy(release)
    retyped.cells[1] = cell("markdown", "def f():\n    return 1", **retyped.cells[1].metadata.nbgrader)
    for sub, why in ((deleted, "is missing"), (retyped, "changed type")):
        nb, notes, tampered = rebuild(release, sub)
        assert nb.cells[1].source == release.cells[1].source and nb.cells[1].cell_type == "code"
        assert any(why in n for n in notes) and tampered == []


def test_rebuild_reads_malformed_metadata_that_nbgraders_helpers_raise_on(tmp_path):
    """Why grade.py reads a submission's cells itself (its module docstring): nbformat reads a cell whose
    nbgrader metadata is not a mapping, and nbgrader.utils then raises, where rebuild() carries on."""
    from nbgrader.utils import is_locked, is_solution

    release = release_notebook()
    for index, nbgrader in ((1, "f"), (1, [1]), (1, None), (2, "test_f"), (2, ["grade"])):
        data = json.loads(nbformat.writes(release))
        data["cells"][index]["metadata"]["nbgrader"] = nbgrader
        path = tmp_path / "nb.ipynb"
        path.write_text(json.dumps(data))
        sub = submissions.read_submission(path)
        for helper in (is_solution, is_locked):
            with pytest.raises(AttributeError):
                helper(sub.cells[index])
        nb, notes, tampered = rebuild(release, sub)
        assert [c.source for c in nb.cells] == [c.source for c in release.cells]
        if index == 1:  # the answer cell f: its stub is graded
            assert (notes, tampered) == (["answer cell 'f' is missing: its stub was graded", RECOVER], []), nbgrader
        else:  # the locked test cell: as if deleted
            assert (notes, tampered) == ([], ["test_f (deleted)"]), nbgrader
    list_metadata = nbformat.from_dict({"cell_type": "code", "source": "", "metadata": ["nbgrader"], "outputs": []})
    with pytest.raises(TypeError):
        is_solution(list_metadata)
    assert untrusted_meta(list_metadata) == {} and not untrusted_is_answer(list_metadata)


def test_invalid_files_are_named_for_what_they_are(tmp_path):
    cases = {"empty": b"", "json": b"{'cells': ", "list": b"[1, 2]", "cells": b'{"cells": [1], "nbformat": 4}'}
    reasons = {}
    for name, content in cases.items():
        (tmp_path / name).write_bytes(content)
        with pytest.raises(submissions.InvalidNotebook) as err:
            submissions.read_submission(tmp_path / name)
        reasons[name] = str(err.value)
    assert reasons["empty"] == "the file is empty"
    assert reasons["json"].startswith("not valid JSON")
    assert reasons["list"].startswith("JSON, but not a notebook")
    (tmp_path / "link").symlink_to(tmp_path / "json")
    with pytest.raises(submissions.InvalidNotebook, match="symbolic link"):
        submissions.read_submission(tmp_path / "link")


def test_clean_outputs_keeps_only_known_fields_of_known_outputs():
    raw = [
        {"output_type": "stream", "name": "stdout", "text": "hi\n", "extra": 1},
        {"output_type": "display_data", "data": {"text/html": "<script>x()</script>", "text/plain": "fig"}},
        {"output_type": "error", "ename": "E", "evalue": "v", "traceback": ["a", 3]},
        {"output_type": "execute_result", "data": {"text/plain": ["4", "2"]}, "execution_count": "1"},
        {"output_type": "unknown"},
        "not a dict",
    ]
    out = clean_outputs(raw)
    assert [o.output_type for o in out] == ["stream", "display_data", "error", "execute_result"]
    assert out[0] == {"output_type": "stream", "name": "stdout", "text": "hi\n"}
    assert out[1].data == {"text/plain": "fig"}
    assert out[2].traceback == ["a", ""] and out[3].data == {"text/plain": "42"} and out[3].execution_count is None
    assert clean_outputs({"output_type": "stream"}) == []


def test_pass_rates_and_histogram_count_what_is_scored_so_far():
    points = {"t1": 2.0, "t2": 1.0, "essay": 1.0}

    def result(student, status, penalty=0.0, **ex):
        total = sum(v or 0 for v in ex.values()) - penalty
        waiting = tuple(g for g, v in ex.items() if v is None)
        return Result(
            student=student,
            assignment="a",
            notebook="nb",
            status=status,
            reason="",
            score=total,
            max_score=4.0,
            exercises=ex,
            max_points=points,
            seconds=0.0,
            waiting=waiting,
            seconds_late=0.0,
            late_penalty=penalty,
        )

    results = [
        result("ann", "graded", t1=2.0, t2=0.0, essay=None),
        result("bob", "graded", t1=2.0, t2=1.0, essay=None),
        result("cy", "missing", t1=0.0, t2=0.0, essay=None),
    ]
    assert report.scored(results) == ["t1", "t2"]  # the essay waits for a person
    assert report.pass_rates(results) == {"t1": 2 / 3, "t2": 1 / 3}  # the missing notebook passes nothing
    assert report.percentages(results) == [200 / 3, 100.0, 0.0]
    # A grader gives ann's essay its point, and bob was late and lost one point.
    results[0] = result("ann", "graded", t1=2.0, t2=0.0, essay=1.0)
    results[1] = result("bob", "graded", penalty=1.0, t1=2.0, t2=1.0, essay=None)
    assert report.scored(results) == ["t1", "t2", "essay"]
    assert report.pass_rates(results)["essay"] == 1.0  # of the essays graded so far
    assert report.percentages(results) == [75.0, 200 / 3, 0.0]


def test_failures_name_the_check_that_failed_the_same_way_for_everyone():
    def error(ename, evalue):
        return nbformat.v4.new_output("error", ename=ename, evalue=evalue, traceback=[])

    check = "scores differs from the reference (largest error at index (0, 1))\n  expected: -50\n  got:      50"
    nb = nbformat.v4.new_notebook(
        cells=[
            cell("code", "answer", grade_id="f", solution=True, grade=False),
            cell("code", "test", grade_id="test_f", grade=True, solution=False, points=1),
            cell("code", "test", grade_id="test_g", grade=True, solution=False, points=1),
            cell("code", "test", grade_id="test_h", grade=True, solution=False, points=1),
            cell("code", "answer with tests", grade_id="k", grade=True, solution=True, points=1),
        ]
    )
    nb.cells[0].outputs = [error("NameError", "name 'x' is not defined")]  # an answer cell: not a test
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", text="hi\n"), error("AssertionError", check)]
    nb.cells[2].outputs = [error("NotImplementedError", "")]
    nb.cells[3].outputs = [error("CheckFailed", "w differs from the reference in the masked keys\n  where: (0, 2)")]
    nb.cells[4].outputs = [error("ValueError", "bad")]
    assert gradebook.failures(nb) == {
        "test_f": "scores differs from the reference",
        "test_g": "NotImplementedError",
        "test_h": "w differs from the reference in the masked keys",  # a qkv.checks.CheckFailed
    }
    assert (
        gradebook.failure_summary(error("TypeError", "f() takes 2 arguments\nmore"))
        == "TypeError: f() takes 2 arguments"
    )

    points = {"test_f": 1.0, "test_g": 1.0}

    def result(student, **failed):
        return Result(
            student=student,
            assignment="a",
            notebook="nb",
            status="graded",
            reason="",
            score=0.0,
            max_score=2.0,
            exercises={},
            max_points=points,
            failures=failed,
        )

    results = [
        result("ann", test_g="NotImplementedError", test_f="x wrong"),
        result("bob", test_f="x wrong"),
        result("cy", test_f="y wrong"),
        result("dee"),
    ]
    assert report.common_failures(results, top=1) == {
        "test_f": [("x wrong", 2)],
        "test_g": [("NotImplementedError", 1)],
    }
    assert report.common_failures(results)["test_f"] == [("x wrong", 2), ("y wrong", 1)]


def test_an_unwritten_stub_is_named_by_its_exercise_from_the_release_not_the_submission():
    release = nbformat.v4.new_notebook(
        cells=[
            cell(
                "code", "# Exercise 1 (3 points): write f.\ndef f(x):\n    raise NotImplementedError()", solution=True
            ),
            cell("code", "# Exercise 2 (1 point): write C.\nclass C:\n    def m(self):\n        pass", solution=True),
            cell("code", "def helper():\n    pass", solution=True),  # no header line: not an exercise
            cell("code", "# Exercise 9: a test cell, not a stub\ndef g():\n    pass", grade=True, solution=False),
        ]
    )
    exercises = stub_exercises(release)
    assert exercises == {"f": "1", "C": "2"}

    def error(evalue):
        return nbformat.v4.new_output("error", ename="NotImplementedError", evalue=evalue, traceback=["x"])

    rest = ": replace `raise NotImplementedError()` in its cell with your code."
    run = nbformat.v4.new_notebook(
        cells=[
            cell("code", "# Exercise 7 (forged by the student)\ndef f(x):\n    raise NotImplementedError()"),
            cell("code", "test", grade_id="test_f", grade=True, solution=False, points=1),
        ]
    )
    run.cells[0].outputs = [error("f is not written yet" + rest)]
    run.cells[1].outputs = [error("C is not written yet" + rest), error("helper is not written yet" + rest)]
    run.cells[1].outputs.append(nbformat.v4.new_output("error", ename="NotImplementedError", evalue="no CUDA"))
    name_exercises(run, exercises)
    assert run.cells[0].outputs[0].evalue == "Exercise 1 (f) is not written yet" + rest  # the release's number
    named = run.cells[1].outputs[0]
    assert named.evalue == "Exercise 2 (C) is not written yet" + rest
    assert " ".join(named.traceback) == f"NotImplementedError: {named.evalue}"
    assert all(len(line) <= 83 for line in named.traceback)
    assert run.cells[1].outputs[1].evalue == "helper is not written yet" + rest  # not an exercise: as it was
    assert run.cells[1].outputs[2].evalue == "no CUDA"  # torch's own NotImplementedError: untouched


def test_integrity_changes_are_read_from_test_cells_once_each_where_first_found():
    def tampered(*lines):
        text = "\n".join(["the answers changed objects that the hidden tests rely on:", *lines, "(found before)"])
        return nbformat.v4.new_output("error", ename=protocol.TAMPERED, evalue=text, traceback=[])

    nb = nbformat.v4.new_notebook(
        cells=[
            cell("code", "answer", grade_id="f", solution=True, grade=False),
            cell("code", "test", grade_id="test_f", grade=True, solution=False, points=1),
            cell("code", "test", grade_id="test_g", grade=True, solution=False, points=1),
        ]
    )
    assert integrity_changes(nb) == ([], None)
    nb.cells[0].outputs = [tampered("- forged in an answer cell")]  # not a test cell: not the sandbox's report
    nb.cells[1].outputs = [tampered("- qkv.checks.check_close was replaced")]
    nb.cells[2].outputs = [tampered("- qkv.checks.check_close was replaced", "- builtins.max was replaced")]
    assert integrity_changes(nb) == (
        ["qkv.checks.check_close was replaced", "builtins.max was replaced"],
        "test_f",
    )


def test_the_report_shows_what_students_wrote_as_text_never_as_markup(tmp_path):
    points = {"test_f": 1.0, "essay": 1.0}
    script = "<script>alert('grades')</script>"

    def result(student, score, reason="", **failed):
        ex = {"test_f": score, "essay": None}
        return Result(
            student=student,
            assignment=SLUG,
            notebook=SLUG,
            status="graded",
            reason=reason,
            score=score,
            max_score=2.0,
            exercises=ex,
            max_points=points,
            seconds=1.0,
            waiting=("essay",),
            seconds_late=0.0,
            late_penalty=0.0,
            failures=failed,
        )

    results = [
        result(script, 0.0, reason=f"kernelspec {script} changed", test_f=f"expected 1, got {script}"),
        result("ann & bob", 1.0),
    ]
    page = report.write_report(results, tmp_path).read_text()
    assert "<script>" not in page and "alert('grades')" not in page
    escaped = "&lt;script&gt;alert(&#39;grades&#39;)&lt;/script&gt;"
    assert f"<tr><td>{escaped}</td><td>{SLUG}</td><td>0 / 2</td><td>graded</td><td>kernelspec {escaped} changed" in page
    assert f"<td>test_f</td><td>1</td><td>expected 1, got {escaped} <b>(1)</b></td>" in page
    assert "<tr><td>ann &amp; bob</td>" in page
    # The rest of the page: counts, pass rates, and the written answers that wait for a person.
    assert "<p>2 notebooks graded.</p>" in page and "<tr><td>graded</td><td>2</td></tr>" in page
    assert "<tr><td>test_f</td><td>50%</td></tr>" in page and "2 written answers have no score yet" in page
    assert "<tr><td>essay</td><td>2</td></tr>" in page and "handed in after the due date" not in page


def test_read_timestamp_reads_nbgraders_file_and_refuses_odd_ones(tmp_path):
    assert submissions.read_timestamp(tmp_path) == (None, "")
    (tmp_path / "timestamp.txt").write_text("2026-12-01 18:30:00.250000 CET\n")
    stamp, note = submissions.read_timestamp(tmp_path)
    assert (stamp, note) == (datetime.datetime(2026, 12, 1, 17, 30, 0, 250000), "")  # naive UTC, as nbgrader keeps
    (tmp_path / "timestamp.txt").write_text("2026-12-01T17:30:00+00:00")
    assert submissions.read_timestamp(tmp_path)[0] == datetime.datetime(2026, 12, 1, 17, 30)
    for content, why in (("yesterday, honest", "not a time"), ("1" * 2000, "over 1024 bytes")):
        (tmp_path / "timestamp.txt").write_text(content)
        stamp, note = submissions.read_timestamp(tmp_path)
        assert stamp is None and why in note and "graded as on time" in note
    (tmp_path / "timestamp.txt").unlink()
    (tmp_path / "timestamp.txt").symlink_to("/etc/hostname")
    assert "not a plain file" in submissions.read_timestamp(tmp_path)[1]


def fake_course(tmp_path):
    return Course(tmp_path, None, "", "", {"a1": ["nb"], "a2": ["nb2"]})


def test_discover_gives_every_student_every_handed_in_assignment(tmp_path):
    root = tmp_path / "class"
    handed_in = {"ann": ["a1/nb.ipynb", "a2/nb2.ipynb"], "bob": ["a1/x.txt", "a2/Copy of nb2.ipynb"], "cy": []}
    handed_in["dee"] = ["a1/nb (1).ipynb", "a1/nb (2).ipynb"]
    for student, files in handed_in.items():
        (root / student).mkdir(parents=True)
        for f in files:
            (root / student / f).parent.mkdir(parents=True, exist_ok=True)
            (root / student / f).write_text("{}")
    (root / ".hidden").mkdir()
    subs = {(s.student, s.assignment): s for s in submissions.discover(root, fake_course(tmp_path))}
    assert sorted(subs) == [(s, a) for s in ("ann", "bob", "cy", "dee") for a in ("a1", "a2")]
    assert subs["ann", "a1"].path == root / "ann" / "a1" / "nb.ipynb" and not subs["ann", "a1"].renamed
    assert subs["bob", "a1"].path is None and "found: x.txt" in subs["bob", "a1"].missing
    # The one notebook of a folder, under another name (Colab's "Copy of", a second download's "(1)"), is graded,
    # and the student is told the name to use; two such notebooks are not guessed between.
    assert subs["bob", "a2"].path == root / "bob" / "a2" / "Copy of nb2.ipynb"
    assert "graded Copy of nb2.ipynb" in subs["bob", "a2"].renamed and "as nb2.ipynb" in subs["bob", "a2"].renamed
    assert subs["dee", "a1"].path is None and "Hand in your notebook for a1 as nb.ipynb" in subs["dee", "a1"].missing
    assert subs["cy", "a2"].path is None and "no folder cy/a2/" in subs["cy", "a2"].missing
    with pytest.raises(submissions.GradingError, match="ASSIGNMENT one of: a1, a2"):
        submissions.discover(tmp_path / "class" / "ann" / "a1", fake_course(tmp_path))


def test_find_root_accepts_one_wrapping_folder(tmp_path):
    (tmp_path / "wrap" / "ann" / "a1").mkdir(parents=True)
    assert submissions.find_root(tmp_path, ["a1"]) == tmp_path / "wrap"
    assert submissions.find_root(tmp_path / "wrap", ["a1"]) == tmp_path / "wrap"


def test_extract_zip_skips_unsafe_entries_and_refuses_bombs(tmp_path):
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("class/ann/a1/nb.ipynb", "{}")
        zf.writestr("../escaped.txt", "x")
        zf.writestr("/absolute.txt", "x")
        link = zipfile.ZipInfo("class/ann/a1/link.ipynb")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(link, "/etc/passwd")
    dest = tmp_path / "out"
    dest.mkdir()
    warnings = submissions.extract_zip(archive, dest)
    assert sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file()) == ["class/ann/a1/nb.ipynb"]
    assert len(warnings) == 3 and not (tmp_path / "escaped.txt").exists()
    with zipfile.ZipFile(tmp_path / "bomb.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("a/b/c.ipynb", b"0" * 10_000)
        zf.writestr("a/b/d.ipynb", b"0")
    for limits, why in (
        ({"files": 1, "bytes": 10**6, "file_bytes": 10**6}, "entries"),
        ({"files": 10, "bytes": 10**6, "file_bytes": 1000}, "size"),
    ):
        target = tmp_path / why
        target.mkdir()
        with pytest.raises(submissions.GradingError, match=why):
            submissions.extract_zip(tmp_path / "bomb.zip", target, limits)
    (tmp_path / "notzip.zip").write_text("hello")
    with pytest.raises(submissions.GradingError, match="not a readable zip"):
        submissions.extract_zip(tmp_path / "notzip.zip", tmp_path)


def test_refuses_to_grade_without_bwrap(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("QKV_BWRAP", str(tmp_path / "no-bwrap"))
    (tmp_path / "class" / "ann" / SLUG).mkdir(parents=True)
    code = cli.main([str(tmp_path / "class"), "--course", str(tmp_path / "course"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "bubblewrap" in err and "Nothing was graded" in err
    assert not (tmp_path / "course").exists()


# ---------------------------------------------------------------- a class, graded from the command line


@pytest.fixture(scope="module")
def template():
    return corpus.course_template((SLUG,))


def make_class(root: Path, course_dir: Path) -> None:
    corpus.build(root, course_dir, only_good=True)
    solved = corpus.solved_notebook(course_dir / "release" / SLUG / f"{SLUG}.ipynb", SLUG)
    wrong = corpus.with_answer(
        solved, "sharp_similarity", corpus.mutant_source(SLUG, "sharp_similarity", "positive_sign")
    )
    (root / "partly" / SLUG).mkdir(parents=True)
    nbformat.write(wrong, str(root / "partly" / SLUG / f"{SLUG}.ipynb"))


@pytest.fixture(scope="module")
def graded_class(template, tmp_path_factory):
    def produce(root):
        course_dir, subs, out = root / "course", root / "class", root / "out"
        shutil.copytree(template, course_dir)
        make_class(subs, course_dir)
        args = [str(subs), "--course", str(course_dir), "--jobs", "2", "--out", str(out), "--deadline", "30"]
        return cli.main([*args, "--quiet"])

    folder = once.shared_dir(tmp_path_factory) / "grading-cli"
    return folder, corpus.run_once(folder, produce)


def read_csv(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


@needs_bwrap
@pytest.mark.slow
def test_cli_writes_grades_csv_report_and_feedback(graded_class):
    root, code = graded_class
    assert code == 0
    rows = {r["student"]: r for r in read_csv(root / "out" / "grades.csv")}
    header = list(next(iter(rows.values())))
    assert header == [*report.FIELDS, *report.LATE_FIELDS, *EXERCISES, "answer_exact_lookup", "answer_search_engine"]
    assert [(r["score"], r["max_score"], r["status"]) for r in rows.values()] == [("8", "10", "graded")] * 2 + [
        ("6", "10", "graded")
    ]
    assert [rows["partly"][e] for e in EXERCISES] == ["3", "0", "2", "1"]
    assert rows["good"]["answer_exact_lookup"] == ""  # waits for manual grading
    assert [(r["late_penalty"], r["seconds_late"], r["ungraded"]) for r in rows.values()] == [("0", "0", "2")] * 3
    assert read_csv(root / "out" / "failures.csv") == [
        {
            "student": "partly",
            "assignment": SLUG,
            "notebook": SLUG,
            "exercise": "test_sharp_similarity",
            "failure": "the scores are never positive",  # the visible check that names this mistake
        }
    ]
    html = (root / "out" / "report.html").read_text()
    assert "<td>test_sharp_similarity</td><td>67%</td>" in html and "partly" in html
    assert "<td>test_sharp_similarity</td><td>1</td><td>the scores are never positive <b>(1)</b></td>" in html
    assert (root / "out" / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    hidden_headers = [  # each hidden test starts with a comment line "# Hidden: ..."
        html_escape(p.read_text().splitlines()[0]) for p in section(SLUG).hidden_tests().values()
    ]
    for student in ("good", "good_too", "partly"):
        feedback = (root / "course" / "feedback" / student / SLUG / f"{SLUG}.html").read_text()
        assert "Score" in feedback
        leaked = [h for h in hidden_headers if h in feedback]
        assert not leaked, f"{student}'s feedback shows hidden test code: {leaked}"
    assert "the scores are never positive" in feedback  # partly's failed check, message and all


@needs_bwrap
@pytest.mark.slow
def test_nbgrader_export_and_generate_feedback_run_on_the_result(graded_class, tmp_path):
    root, _ = graded_class
    # A copy: the class is shared by the workers, and generate_feedback --force rewrites the feedback that another
    # test (the formgrader's) may be reading at that moment
    course_dir = tmp_path / "course"
    shutil.copytree(root / "course", course_dir)
    nbgrader = release.nbgrader_bin()
    env = release.venv_env()
    export = subprocess.run(
        [nbgrader, "export", "--log-level=ERROR"], cwd=course_dir, env=env, capture_output=True, text=True
    )
    assert export.returncode == 0, export.stderr
    scores = {r["student_id"]: float(r["score"]) for r in read_csv(course_dir / "grades.csv")}
    assert scores == {"good": 8.0, "good_too": 8.0, "partly": 6.0}
    feedback = subprocess.run(
        [nbgrader, "generate_feedback", SLUG, "--force", "--log-level=ERROR"],
        cwd=course_dir,
        env=env,
        capture_output=True,
        text=True,
    )
    assert feedback.returncode == 0, feedback.stderr
    assert sorted(p.parent.parent.name for p in (course_dir / "feedback").glob(f"*/{SLUG}/{SLUG}.html")) == [
        "good",
        "good_too",
        "partly",
    ]


@needs_bwrap
@pytest.mark.slow
def test_a_zip_of_the_class_grades_the_same(graded_class, template, tmp_path):
    root, _ = graded_class
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for path in sorted((root / "class").rglob("*.ipynb")):
            zf.write(path, "collected/" + str(path.relative_to(root / "class")))
        zf.writestr("../../escaped.txt", "x")
    shutil.copytree(template, tmp_path / "course")
    code = cli.main(
        [
            str(archive),
            "--course",
            str(tmp_path / "course"),
            "--jobs",
            "2",
            "--out",
            str(tmp_path / "out"),
            "--deadline",
            "30",
            "--quiet",
            "--no-feedback",
        ]
    )
    assert code == 0
    assert read_csv(tmp_path / "out" / "grades.csv") == read_csv(root / "out" / "grades.csv")
    assert not (tmp_path / "course" / "feedback").exists()  # --no-feedback


@needs_bwrap
@pytest.mark.slow
def test_a_regrade_keeps_the_graders_scores_and_late_work_is_marked(template, tmp_path):
    """The instructor's loop: grade, grade the written answers in the formgrader, grade again (a late
    resubmission, say). The grader's scores survive and count; lateness comes from nbgrader's timestamp.txt
    and the due date in the gradebook, and the penalty from nbgrader's late-submission plugin."""
    from nbgrader.api import Gradebook

    course_dir, subs, out = tmp_path / "course", tmp_path / "class", tmp_path / "out"
    shutil.copytree(template, course_dir)
    (course_dir / "nbgrader_config_local.py").write_text('c.LateSubmissionPlugin.penalty_method = "zero"\n')
    make_class(subs, course_dir)
    due = datetime.datetime(2026, 12, 1, 12, 0)
    (subs / "partly" / SLUG / "timestamp.txt").write_text("2026-12-01 15:00:00 UTC")  # three hours late
    (subs / "good_too" / SLUG / "timestamp.txt").write_text("2026-12-01 13:00:00 +0200")  # 11:00 UTC: on time
    (subs / "good" / SLUG / "timestamp.txt").write_text("last tuesday")
    args = [str(subs), "--course", str(course_dir), "--jobs", "2", "--out", str(out), "--quiet", "--no-feedback"]
    db = f"sqlite:///{course_dir / 'gradebook.db'}"
    with Gradebook(db) as gb:
        gb.update_or_create_assignment(SLUG, duedate=due)
    assert cli.main(args) == 0
    rows = {r["student"]: r for r in read_csv(out / "grades.csv")}
    assert (rows["partly"]["score"], rows["partly"]["late_penalty"], rows["partly"]["seconds_late"]) == (
        "0",
        "6",
        "10800",
    )
    assert "3.0 h after the due date" in rows["partly"]["reason"]
    assert (rows["good_too"]["score"], rows["good_too"]["seconds_late"]) == ("8", "0")
    assert rows["good"]["score"] == "8" and "'last tuesday', not a time" in rows["good"]["reason"]

    # A grader gives good's two written answers 1 and 0 points (as the formgrader does), then the class is
    # graded again: the scores stay in the gradebook and count in grades.csv.
    with Gradebook(db) as gb:
        for grade_cell in gb.find_submission_notebook(SLUG, SLUG, "good").grades:
            if grade_cell.name.startswith("answer"):
                grade_cell.manual_score = 1.0 if grade_cell.name == "answer_exact_lookup" else 0.0
                grade_cell.needs_manual_grade = False
        gb.db.commit()
    assert cli.main(args) == 0
    rows = {r["student"]: r for r in read_csv(out / "grades.csv")}
    good = rows["good"]
    assert (good["score"], good["answer_exact_lookup"], good["answer_search_engine"], good["ungraded"]) == (
        "9",
        "1",
        "0",
        "0",
    )
    assert rows["good_too"]["ungraded"] == "2" and rows["good_too"]["answer_exact_lookup"] == ""
    with Gradebook(db) as gb:
        scores = {g.name: g.manual_score for g in gb.find_submission_notebook(SLUG, SLUG, "good").grades}
        assert scores["answer_exact_lookup"] == 1.0 and scores["answer_search_engine"] == 0.0
        assert gb.find_submission(SLUG, "partly").total_seconds_late == 10800
    page = (out / "report.html").read_text()
    assert "1 notebook was handed in after the due date (6 points taken off in all)" in page
    assert "<h2>Waiting for a person</h2>" in page and "<tr><td>answer_exact_lookup</td><td>2</td></tr>" in page


# ---------------------------------------------------------------- nbgrader's formgrader on the result

TOKEN = "formgrader-test"


class Formgrader:
    """A Jupyter server (with nbgrader's extensions) in ``root``, and requests to it."""

    def __init__(self, root: Path, log: Path):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.base = f"http://127.0.0.1:{port}"
        runtime = root.parent / "jupyter"
        env = release.venv_env() | {
            "JUPYTER_RUNTIME_DIR": str(runtime / "runtime"),
            "JUPYTER_CONFIG_DIR": str(runtime / "config"),
        }
        cmd = [str(Path(sys.executable).with_name("jupyter")), "server", "--no-browser", "--allow-root"]
        cmd += [f"--port={port}", "--ServerApp.port_retries=0", "--ServerApp.ip=127.0.0.1"]
        cmd += [f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={root}"]
        self.log = log
        self.proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=open(log, "w"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 90
        while True:
            try:
                if self.get("/formgrader/api/status") == {"status": True}:
                    return
            except (urllib.error.URLError, ConnectionError):
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                pytest.fail(f"the Jupyter server did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.3)

    def request(self, path: str, method: str = "GET", body=None) -> tuple[int, str]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data, {"Authorization": f"token {TOKEN}"}, method=method)
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, resp.read().decode()

    def get(self, path: str):
        return json.loads(self.request(path)[1])

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@needs_bwrap
@pytest.mark.slow
def test_the_formgrader_shows_the_graded_class_and_its_scores_survive_a_regrade(graded_class, tmp_path):
    root, _ = graded_class
    course_dir = tmp_path / "course"
    shutil.copytree(root / "course", course_dir)
    server = Formgrader(course_dir, tmp_path / "server.log")
    try:
        listed = server.get(f"/formgrader/api/submitted_notebooks/{SLUG}/{SLUG}")
        assert {s["student"]: s["score"] for s in listed} == {"good": 8.0, "good_too": 8.0, "partly": 6.0}
        assert all(s["needs_manual_grade"] for s in listed)  # the written answers wait for a person
        partly = next(s for s in listed if s["student"] == "partly")

        status, page = server.request(f"/formgrader/submissions/{partly['id']}/")
        assert status == 200 and f"partly/{SLUG}/{SLUG}" in page
        for gid in ("test_sharp_similarity", "answer_exact_lookup", "answer_search_engine"):
            assert f'class="score tabbable" id="{gid}"' in page  # a score box per graded cell
        # Under each written answer, before the next one, the grader reads its model answer and rubric.
        entries = rubrics.load(section(SLUG))
        boxes = sorted((page.index(f'class="score tabbable" id="{gid}"'), gid) for gid in entries)
        for k, (at, gid) in enumerate(boxes):
            end = boxes[k + 1][0] if k + 1 < len(boxes) else len(page)
            shown = page[at:end]
            assert rubrics.TITLE in shown, f"no model answer under {gid}"
            assert (
                plain_runs(entries[gid].answer)[0] in shown and plain_runs(entries[gid].criteria[-1].text)[0] in shown
            )

        grades = {g["name"]: g for g in server.get(f"/formgrader/api/grades?submission_id={partly['id']}")}
        assert (grades["test_sharp_similarity"]["auto_score"], grades["answer_exact_lookup"]["auto_score"]) == (0, None)
        for gid, points in (("answer_exact_lookup", 1), ("answer_search_engine", 0.5)):
            status, body = server.request(f"/formgrader/api/grade/{grades[gid]['id']}", "PUT", {"manual_score": points})
            assert status == 200 and json.loads(body)["manual_score"] == points
    finally:
        server.close()

    # The students' feedback (the grading run's and nbgrader's own) never shows a model answer or a rubric.
    secret = needles(section(SLUG))
    for student in ("good", "good_too", "partly"):
        autograded = nbformat.read(course_dir / "autograded" / student / SLUG / f"{SLUG}.ipynb", as_version=4)
        assert sum(rubrics.TAG in c.metadata.get("tags", []) for c in autograded.cells) == len(entries)
        feedback = (course_dir / "feedback" / student / SLUG / f"{SLUG}.html").read_text()
        assert "Score" in feedback and not [n for n in secret if n in feedback], f"{student}'s feedback shows them"
    again = subprocess.run(
        [release.nbgrader_bin(), "generate_feedback", SLUG, "--force", "--log-level=ERROR"],
        cwd=course_dir,
        env=release.venv_env(),
        capture_output=True,
        text=True,
    )
    assert again.returncode == 0, again.stderr
    feedback = (course_dir / "feedback" / "partly" / SLUG / f"{SLUG}.html").read_text()
    assert rubrics.TITLE not in feedback and not [n for n in secret if n in feedback]

    out = tmp_path / "out"
    args = [str(root / "class"), "--course", str(course_dir), "--jobs", "2", "--out", str(out), "--quiet"]
    assert cli.main([*args, "--no-feedback"]) == 0
    rows = {r["student"]: r for r in read_csv(out / "grades.csv")}
    assert (rows["partly"]["score"], rows["partly"]["answer_search_engine"], rows["partly"]["ungraded"]) == (
        "7.5",
        "0.5",
        "0",
    )
    assert rows["good"]["score"] == "8" and rows["good"]["ungraded"] == "2"


@needs_bwrap
@pytest.mark.slow
def test_a_tampered_notebook_scores_zero_unless_the_instructor_keeps_its_score(template, tmp_path, capsys):
    course_dir, subs = tmp_path / "course", tmp_path / "class"
    shutil.copytree(template, course_dir)
    solved = corpus.solved_notebook(course_dir / "release" / SLUG / f"{SLUG}.ipynb", SLUG)
    edited = corpus.with_answer(
        solved, "sharp_similarity", corpus.mutant_source(SLUG, "sharp_similarity", "positive_sign")
    )
    corpus.find_cell(edited, "test_sharp_similarity").source = "pass"  # silence the test of a wrong answer
    (subs / "edited" / SLUG).mkdir(parents=True)
    nbformat.write(edited, str(subs / "edited" / SLUG / f"{SLUG}.ipynb"))
    args = [str(subs), "--course", str(course_dir), "--jobs", "1", "--quiet", "--no-feedback"]

    assert cli.main([*args, "--out", str(tmp_path / "zero")]) == 0
    said = capsys.readouterr().out  # where everything went, and what is left to do
    assert (
        "graded 1 notebook in" in said
        and "1 tampered" in said
        and f"grades: {tmp_path / 'zero' / 'grades.csv'}" in said
    )
    assert f"report: {tmp_path / 'zero' / 'report.html'}" in said and "feedback:" not in said  # --no-feedback
    assert "2 written answers wait for a grader" in said
    (row,) = read_csv(tmp_path / "zero" / "grades.csv")
    assert (row["status"], row["score"]) == ("tampered", "0")
    assert "scores zero" in row["reason"] and "test_sharp_similarity (source changed)" in row["reason"]

    assert cli.main([*args, "--out", str(tmp_path / "keep"), "--tampered", "keep"]) == 0
    (row,) = read_csv(tmp_path / "keep" / "grades.csv")
    assert (row["status"], row["score"], row["test_sharp_similarity"]) == (
        "tampered",
        "6",
        "0",
    )  # the course's test ran
    assert "replaced by the course's" in row["reason"]
    with pytest.raises(GradingError, match="tampered must be one of zero, keep"):
        GradeOptions(tampered="forgive")

    # Tampered and then too slow: the timeout is the status, and the notebook still scores zero (the tests that ran
    # before the deadline would otherwise keep their points).
    slow = corpus.with_answer(edited, "averaging_similarity", "import time\n\nwhile True:\n    time.sleep(0.1)\n")
    slow_class = tmp_path / "slow"
    (slow_class / "slow" / SLUG).mkdir(parents=True)
    nbformat.write(slow, str(slow_class / "slow" / SLUG / f"{SLUG}.ipynb"))
    slow_args = [str(slow_class), "--course", str(course_dir), "--jobs", "1", "--quiet", "--no-feedback"]
    assert cli.main([*slow_args, "--deadline", "8", "--out", str(tmp_path / "slow_out")]) == 0
    (row,) = read_csv(tmp_path / "slow_out" / "grades.csv")
    assert (row["status"], row["score"]) == ("timeout", "0") and "scores zero" in row["reason"]


# ---------------------------------------------------------------- the journal of an interrupted run (issue 15)


def test_the_journal_keeps_whole_lines_of_the_same_submissions_only(tmp_path):
    def result(student, score):
        return Result(
            student=student,
            assignment=SLUG,
            notebook=SLUG,
            status="graded",
            reason="",
            score=score,
            max_score=10.0,
            exercises={"t": score, "w": None},
            max_points={"t": 10.0},
        )

    journal = Journal(tmp_path / Journal.NAME)
    journal.add("tok-a", result("a", 3.0))
    journal.add("tok-b", result("b", 4.0))
    journal.close()
    with open(journal.path, "ab") as fh:  # a kill in the middle of a line
        fh.write(b'{"key": ["c", "x", "x"], "token": "tok-c", "result": {"stud')
    tokens = {("a", SLUG, SLUG): "tok-a", ("b", SLUG, SLUG): "changed", ("c", "x", "x"): "tok-c"}
    kept = journal.finished(tokens)
    assert kept == {("a", SLUG, SLUG): result("a", 3.0)}  # b's file changed since; c's line was torn
    journal.add("tok-d", result("d", 5.0))  # the next line starts on a line of its own, after the torn one
    journal.close()
    assert list(journal.finished({("d", SLUG, SLUG): "tok-d"}).values()) == [result("d", 5.0)]
    journal.remove()
    assert not journal.path.exists() and Journal(None).finished(tokens) == {}
