"""autograder.report: pass rates, the histogram, the class's failures and the report's escaping."""

from __future__ import annotations

import nbformat

from autograder import gradebook, report
from autograder.grading.results import Result
from tests.support import corpus
from tests.support.cells import cell

SLUG = corpus.SLUG


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
