"""The grading command (autograder.grading.cli): a small class graded by the command line into a copy of a built
course, and nbgrader's own ``export`` and ``generate_feedback`` run on the result. Last, a real Jupyter server runs
nbgrader's formgrader on a copy of the graded course: the test uses its pages and JSON API as the browser does, finds
the model answer and rubric under each written answer (and none in the feedback), gives written answers their points,
and grades again. The pure parts have their own files in the unit tier: ``test_grading_rebuild.py``,
``test_grading_outputs.py``, ``test_report.py`` and ``test_submissions.py``.
"""

from __future__ import annotations

import csv
import datetime
import json
import shutil
import socket
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

from autograder import release, report, rubrics
from autograder.grading import cli
from autograder.grading.journal import Journal
from autograder.grading.options import GradeOptions
from autograder.grading.results import Result
from autograder.nbcourse import GradingError
from course.section import section
from tests.grading.test_rubrics import needles, plain_runs
from tests.support import corpus, once

SLUG = corpus.SLUG
needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap is not installed (apt-get install bubblewrap)"
)
EXERCISES = ["test_attention_pooling", "test_sharp_similarity", "test_query_jacobian", "test_averaging_similarity"]


def test_refuses_to_grade_without_bwrap(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("QKV_BWRAP", str(tmp_path / "no-bwrap"))
    (tmp_path / "class" / "ann" / SLUG).mkdir(parents=True)
    code = cli.main([str(tmp_path / "class"), "--course", str(tmp_path / "course"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "bubblewrap" in err and "Nothing was graded" in err
    assert not (tmp_path / "course").exists()


# ---------------------------------------------------------------- a class, graded from the command line


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
    return folder, once.run_once(folder, produce)


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
