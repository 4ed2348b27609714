"""End to end: a class of bad submissions (tests.support.corpus) graded by the sandboxed grader.

Every submission gets exactly one result with the status and points its case
expects; the attacks find nothing and change nothing; the good students' grades
are those they get when graded alone; grading the same folder again gives the
same grades.
"""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
from pathlib import Path

import nbformat
import pytest

from autograder import sandbox as sb
from autograder.grading import cli
from autograder.grading.options import GradeOptions
from autograder.grading.results import STATUSES, Result
from autograder.nbcourse import Course
from autograder.sandboxed import protocol
from course import notebooks as nbs
from tests.support import corpus, once

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("bwrap") is None, reason="bubblewrap is not installed (apt-get install bubblewrap)"
    ),
]
LIMITS = sb.Limits(deadline=15, grace=20)


def grade_into(course, submissions):
    return cli.grade(submissions, course, options=GradeOptions(jobs=2, limits=LIMITS, feedback=False, progress=False))


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def graded(template, tmp_path_factory):
    def produce(root):
        course, subs = root / "course", root / "submissions"
        shutil.copytree(template, course)
        cases = corpus.build(subs, course)
        good = subs / "good" / corpus.SLUG / f"{corpus.SLUG}.ipynb"
        before = digest(good)
        first = grade_into(course, subs)
        after_first = digest(good)
        second = grade_into(course, subs)
        return {
            "cases": [dataclasses.asdict(c) for c in cases],
            "first": [dataclasses.asdict(r) for r in first],
            "second": [dataclasses.asdict(r) for r in second],
            "course": str(course),
            "digests": [before, after_first, digest(good)],
        }

    data = once.run_once(once.shared_dir(tmp_path_factory) / "grading-corpus", produce)
    return {
        "cases": {c["student"]: corpus.Case(**c) for c in data["cases"]},
        "first": {r["student"]: Result(**r) for r in data["first"]},
        "second": {r["student"]: Result(**r) for r in data["second"]},
        "course": Path(data["course"]),
        "digests": tuple(data["digests"]),
    }


def test_every_submission_has_exactly_one_result_as_its_case_expects(graded):
    cases, results = graded["cases"], graded["first"]
    assert sorted(results) == sorted(cases)
    wrong = []
    for name, case in cases.items():
        r = results[name]
        got = {gid: r.exercises.get(gid) for gid in case.points}
        if r.status != case.status or got != case.points or case.reason not in r.reason:
            wrong.append(f"{name} ({case.what}): {r.status} {got} {r.reason!r}; expected {case.status} {case.points}")
    assert not wrong, "\n".join(wrong)


def test_statuses_are_the_documented_ones_and_zero_means_a_reason(graded):
    for r in graded["first"].values():
        assert r.status in STATUSES
        assert r.max_score == 10.0  # the instructor's points, whatever the submission claims
        if r.status != "graded":
            assert r.reason
        if r.status in ("missing", "invalid notebook"):
            assert r.score == 0 and all(p == 0 for p in r.exercises.values())


def test_outputs_show_that_each_attack_failed(graded):
    course = graded["course"]
    for name, case in graded["cases"].items():
        if not case.shows:
            continue
        nb = nbformat.read(course / "autograded" / name / corpus.SLUG / f"{corpus.SLUG}.ipynb", as_version=4)
        for gid, text in case.shows.items():
            cell = next(c for c in nb.cells if nbs.grade_id(c) == gid)
            shown = "".join(o.get("text", "") + o.get("evalue", "") + o.get("ename", "") for o in cell.outputs)
            assert text.lower() in shown.lower(), f"{name}: {gid} shows {shown[-300:]!r}"


def test_nothing_was_written_outside_the_sandbox(graded):
    course = graded["course"]
    before, after_first, after_second = graded["digests"]
    assert before == after_first == after_second  # another student's submission is untouched
    assert not (course / "stolen.txt").exists()
    assert not (course / "gradebook.db").read_bytes().endswith(b"owned")
    autograded = course / "autograded" / "good" / corpus.SLUG / f"{corpus.SLUG}.ipynb"
    assert nbformat.read(autograded, as_version=4).cells  # still a notebook


def test_grading_again_gives_the_same_grades(graded):
    first, second = graded["first"], graded["second"]
    assert sorted(first) == sorted(second)
    for name in first:
        a, b = first[name], second[name]
        assert (a.status, a.score, a.exercises, a.reason) == (b.status, b.score, b.exercises, b.reason), name


def test_the_gradebook_holds_exactly_the_results(graded):
    from nbgrader.api import Gradebook

    course = Course.load(graded["course"])
    with Gradebook(course.db_url, course.course_id) as gb:
        assert sorted(s.id for s in gb.students) == sorted(graded["cases"])
        for name, r in graded["second"].items():
            nb = gb.find_submission_notebook(corpus.SLUG, corpus.SLUG, name)
            assert {g.name: g.auto_score for g in nb.grades} == r.exercises, name


def test_good_students_get_what_they_get_alone(graded, template, tmp_path):
    course, subs = tmp_path / "course", tmp_path / "submissions"
    shutil.copytree(template, course)
    corpus.build(subs, course, only_good=True)
    alone = {r.student: r for r in grade_into(course, subs)}
    assert sorted(alone) == ["good", "good_too"]
    for name, r in alone.items():
        crowd = graded["first"][name]
        assert (
            (crowd.status, crowd.score, crowd.exercises)
            == (r.status, r.score, r.exercises)
            == (
                "graded",
                sum(corpus.FULL.values()),
                {**corpus.FULL, "answer_exact_lookup": None, "answer_search_engine": None},
            )
        )


# ---------------------------------------------------------------- answers that silence the checks (issue 17)


@pytest.fixture(scope="module")
def integrity(tmp_path_factory):
    """The integrity corpus (tests.support.corpus.build_integrity: 11.3, masked_softmax answered wrong and the
    checks silenced in every way it lists), graded once."""
    template = corpus.course_template((corpus.INTEGRITY_SLUG,))

    def produce(root):
        course, subs = root / "course", root / "submissions"
        shutil.copytree(template, course)
        cases = corpus.build_integrity(subs, course)
        results = grade_into(course, subs)
        return {
            "cases": [dataclasses.asdict(c) for c in cases],
            "results": [dataclasses.asdict(r) for r in results],
            "course": str(course),
        }

    data = once.run_once(once.shared_dir(tmp_path_factory) / "integrity-corpus", produce)
    return {
        "cases": {c["student"]: corpus.Case(**c) for c in data["cases"]},
        "results": {r["student"]: Result(**r) for r in data["results"]},
        "course": Path(data["course"]),
    }


def test_silenced_checks_end_as_zero_naming_what_changed_and_honest_answers_are_graded_as_before(integrity):
    cases, results = integrity["cases"], integrity["results"]
    assert sorted(results) == sorted(cases)
    assert set(corpus.SILENCERS) <= set(cases)  # every way of silencing the checks is tried
    wrong = []
    for name, case in cases.items():
        r = results[name]
        got = {gid: r.exercises.get(gid) for gid in case.points}
        if r.status != case.status or got != case.points or case.reason not in r.reason:
            wrong.append(f"{name} ({case.what}): {r.status} {got} {r.reason!r}; expected {case.status} {case.points}")
        if case.flagged is not None and bool(r.flags) != case.flagged:
            wrong.append(f"{name}: flags {list(r.flags)}, expected {'some' if case.flagged else 'none'}")
    assert not wrong, "\n".join(wrong)


def test_no_silenced_answer_scores_above_its_honest_part(integrity):
    results = integrity["results"]
    honest = {"later_cell": results["wrong_next"].score}
    for name, r in results.items():
        if name in corpus.SILENCERS or name == "later_cell":
            assert r.score <= honest.get(name, results["plain_softmax"].score), (name, r.score)
            assert r.status == "tampered" and "the answers changed objects the hidden tests rely on" in r.reason
    assert results["plain_softmax"].score > 0  # the bound above means something: the honest part earns points


def test_the_feedback_says_what_changed_and_names_an_unwritten_exercise(integrity):
    course = integrity["course"]
    slug = corpus.INTEGRITY_SLUG
    for name, case in integrity["cases"].items():
        nb = nbformat.read(course / "autograded" / name / slug / f"{slug}.ipynb", as_version=4)
        errors = {
            nbs.grade_id(c): [o for o in c.outputs if o.output_type == "error"]
            for c in nb.cells
            if c.cell_type == "code"
        }
        for gid, text in case.shows.items():
            assert any(text in o.evalue for o in errors[gid]), f"{name}: {gid} shows {errors[gid]}"
        if case.status == "tampered":
            found = [o for outs in errors.values() for o in outs if o.ename == protocol.TAMPERED]
            assert found and all(corpus.SILENCED_NAMES[name] in o.evalue for o in found), name
            assert corpus.SILENCED_NAMES[name] in integrity["results"][name].reason
    nb = nbformat.read(course / "autograded" / "unanswered" / slug / f"{slug}.ipynb", as_version=4)
    stub_errors = [
        o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.get("ename") == "NotImplementedError"
    ]
    assert stub_errors and all(o.evalue.startswith("Exercise ") for o in stub_errors)
    assert {o.evalue.split(" is not written yet")[0] for o in stub_errors} >= {
        "Exercise 1 (masked_softmax)",
        "Exercise 2 (DotProductAttention)",
    }
