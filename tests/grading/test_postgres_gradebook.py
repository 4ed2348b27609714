"""The gradebook on a real PostgreSQL server (tests.support.postgres: initdb in a temporary folder, an unprivileged
user, a free loopback port): a class graded into it while two graders write scores, nbgrader's export and
feedback on it, and a database that is down or refuses the login failing fast with nothing written.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import threading
import time
import warnings
from pathlib import Path

import nbformat
import pytest

from autograder import gradebook, release
from autograder import sandbox as sb
from autograder.grading import cli
from autograder.grading.options import GradeOptions
from autograder.nbcourse import GradingError
from tests.support import corpus, postgres

pytestmark = pytest.mark.skipif(postgres.missing() is not None, reason=str(postgres.missing()))
STUDENTS = ("good", "missing", "partly_wrong", "always_equal")
#: The written answers of 11.1, which only a person grades: each grader scores one of them.
WRITTEN = ("answer_exact_lookup", "answer_search_engine")


@pytest.fixture(scope="module")
def server():
    with postgres.server() as running:
        yield running


def digest(folder: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(folder)).encode() + path.read_bytes())
    return h.hexdigest()


class Grader(threading.Thread):
    """A person in the formgrader: scores one written answer of every submission it finds, again and again (as
    the formgrader's API does: nbgrader's Gradebook, one commit per score), until told to stop; remembers the
    last score it gave each student."""

    def __init__(self, url: str, grade_id: str, points: tuple[float, ...]):
        super().__init__(daemon=True)
        self.url, self.grade_id, self.points = url, grade_id, points
        self.given: dict[str, float] = {}
        self.writes = 0
        self.stop = threading.Event()
        self.error: BaseException | None = None

    def one_pass(self, gb, turn: int) -> None:
        from nbgrader.api import MissingEntry

        for student in STUDENTS:
            try:
                nb = gb.find_submission_notebook(corpus.SLUG, corpus.SLUG, student)
            except MissingEntry:
                continue  # not graded yet
            score = self.points[turn % len(self.points)]
            found = next(g for g in nb.grades if g.name == self.grade_id)
            found.manual_score = score
            gb.db.commit()
            self.given[student] = score
            self.writes += 1

    def run(self) -> None:
        from nbgrader.api import Gradebook

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with Gradebook(self.url, "qkv-attention") as gb:
                    turn = 0
                    while not self.stop.is_set():
                        self.one_pass(gb, turn)
                        turn += 1
                        time.sleep(0.02)
                    self.one_pass(gb, turn)  # the last word, after grading ended
        except BaseException as err:  # noqa: BLE001 (reported by the test)
            self.error = err


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_a_class_graded_into_postgresql_while_two_graders_score_loses_no_score(server, tmp_path):
    from nbgrader.api import Gradebook

    template = corpus.course_template((corpus.SLUG,))
    course, subs = tmp_path / "course", tmp_path / "class"
    shutil.copytree(template, course)
    cases = corpus.build_some(subs, course, STUDENTS)
    url = server.url()
    # nbgrader's own commands (export, generate_feedback, the formgrader) read the database from the course config.
    (course / "nbgrader_config_local.py").write_text(f'c.CourseDirectory.db_url = "{url}"\n')
    # The graders' formgrader opens a gradebook that exists (nbgrader creates its tables on first use, which two
    # processes must not do at once): the course as a first grading run leaves it; this run updates it again.
    assert gradebook.copy_structure(f"sqlite:///{course / 'gradebook.db'}", url) > 0
    graders = [Grader(url, WRITTEN[0], (1.0, 0.5)), Grader(url, WRITTEN[1], (0.0, 1.0, 0.5))]
    for g in graders:
        g.start()
    try:
        options = GradeOptions(jobs=2, limits=sb.Limits(deadline=20), feedback=True, progress=False, db=url)
        results = cli.grade(subs, course, options=options)
    finally:
        for g in graders:
            g.stop.set()
        for g in graders:
            g.join(60)
    assert [g.error for g in graders] == [None, None]
    assert all(g.writes > len(STUDENTS) for g in graders)  # they wrote while grading ran, not only after it

    by_student = {r.student: r for r in results}
    assert sorted(by_student) == sorted(STUDENTS)
    for student, case in cases.items():
        got = {gid: by_student[student].exercises.get(gid) for gid in case.points}
        assert (by_student[student].status, got) == (case.status, case.points), student

    with Gradebook(url, "qkv-attention") as gb:  # every grader's last score is there, and every autograded one
        for student in STUDENTS:
            nb = gb.find_submission_notebook(corpus.SLUG, corpus.SLUG, student)
            grades = {g.name: g for g in nb.grades}
            for g in graders:
                assert grades[g.grade_id].manual_score == g.given[student], (student, g.grade_id)
            auto = {gid: grades[gid].auto_score for gid in cases[student].points}
            assert auto == cases[student].points, student
    assert not (course / "gradebook.db").read_bytes().count(b"partly_wrong")  # the SQLite gradebook was not used

    # nbgrader's export and feedback, on the PostgreSQL gradebook (through nbgrader_config_local.py).
    env = release.venv_env()
    export = subprocess.run(
        [release.nbgrader_bin(), "export", "--log-level=ERROR"], cwd=course, env=env, capture_output=True, text=True
    )
    assert export.returncode == 0, export.stderr
    exported = (course / "grades.csv").read_text()
    for student in STUDENTS:
        assert student in exported
    feedback = sorted(p.parent.parent.name for p in (course / "feedback").glob(f"*/{corpus.SLUG}/*.html"))
    assert feedback == sorted(s for s in STUDENTS if s != "missing") or feedback == sorted(STUDENTS)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_a_database_that_is_down_or_refuses_the_login_fails_fast_and_writes_nothing(server, tmp_path):
    template = corpus.course_template((corpus.SLUG,))
    course, subs = tmp_path / "course", tmp_path / "class"
    shutil.copytree(template, course)
    release_nb = course / "release" / corpus.SLUG / f"{corpus.SLUG}.ipynb"
    (subs / "good" / corpus.SLUG).mkdir(parents=True)
    nbformat.write(corpus.solved_notebook(release_nb, corpus.SLUG), subs / "good" / corpus.SLUG / release_nb.name)
    before = digest(course), digest(subs)
    down = f"postgresql://{postgres.USER}:{postgres.PASSWORD}@127.0.0.1:{postgres.free_port()}/{postgres.DATABASE}"
    for url, why in ((down, "Connection refused"), (server.url(password="wrong"), "password authentication failed")):
        started = time.monotonic()
        with pytest.raises(GradingError) as err:
            cli.grade(subs, course, options=GradeOptions(feedback=False, progress=False, db=url))
        assert time.monotonic() - started < 10
        message = str(err.value)
        assert why in message and "Nothing was graded" in message, message
        assert postgres.PASSWORD not in message and "wrong" not in message.split("@")[0]  # no password shown
    assert (digest(course), digest(subs)) == before
    with pytest.raises(GradingError, match="SQLite or PostgreSQL"):
        gradebook.check_database("mysql://someone@localhost/db")
