"""Grading on a dask.distributed cluster (autograder.cluster) and resuming an interrupted run (Journal).

Real engines, smallest class that proves each point: six students of section 11.1 from the bad-submission corpus
(two right answers, a wrong one, one whose answer returns an object equal to everything, one that leaves a thread
running, one missing). The local reference run is itself interrupted (its coordinator killed with SIGKILL) and
started again; the cluster run loses a worker (SIGKILL) mid-batch; both must give the same grades.csv, and the
corpus's expected status and points for each student.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from autograder import cluster, release
from autograder import sandbox as sb
from autograder.grading import cli
from autograder.grading.journal import Journal
from autograder.grading.options import GradeOptions
from autograder.nbcourse import Course, GradingError
from tests.support import corpus, once

ROOT = Path(__file__).resolve().parents[2]
STUDENTS = ("always_equal", "background_thread", "good", "good_too", "missing", "partly_wrong")
DEADLINE = 20.0
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")


def journal_lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    """The class graded on this machine by ``python -m autograder.grade``, killed (SIGKILL) after two notebooks
    were recorded, then started again (once for all xdist workers)."""

    def produce(root):
        template = corpus.course_template((corpus.SLUG,))
        course, subs = root / "course", root / "class"
        shutil.copytree(template, course)
        cases = corpus.build_some(subs, course, STUDENTS)
        journal = course / Journal.NAME
        code, env = snapshot(root / "code")
        cmd = [sys.executable, "-m", "autograder.grade", str(subs), "--course", str(course), "--out"]
        cmd += [str(course / "reports"), "--jobs", "1", "--quiet", "--no-feedback", "--deadline", str(DEADLINE)]
        first = subprocess.Popen(cmd, cwd=code, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        while first.poll() is None and journal_lines(journal) < 3:  # "missing" and two notebooks that ran
            time.sleep(0.05)
        first.send_signal(signal.SIGKILL)
        first.communicate()
        kept = journal_lines(journal)
        again = subprocess.run(cmd, cwd=code, env=env, capture_output=True, text=True)
        return {
            "killed": first.returncode,
            "kept": kept,
            "again": [again.returncode, again.stderr],
            "journal_left": journal.exists(),
            "grades": (course / "reports" / "grades.csv").read_text(),
            "cases": {s: [c.status, c.points] for s, c in cases.items()},
            "course": str(course),
        }

    return once.run_once(once.shared_dir(tmp_path_factory) / "cluster-local-run", produce)


def snapshot(folder: Path) -> tuple[Path, dict]:
    """A copy of the grader and of qkv to run the command from, and its environment: the journal keeps a result
    only for the same course version (Journal.token), which a checkout being edited meanwhile would change
    between the two runs."""
    for part in ("autograder", "course", "publish", "lib/qkv"):
        shutil.copytree(ROOT / part, folder / part, ignore=shutil.ignore_patterns("__pycache__"))
    return folder, {**release.venv_env(), "PYTHONPATH": f"{folder}:{folder / 'lib'}"}


def rows(grades_csv: str) -> dict[str, dict]:
    import csv
    import io

    return {r["student"]: r for r in csv.DictReader(io.StringIO(grades_csv))}


def check_against_cases(grades_csv: str, cases: dict) -> None:
    found = rows(grades_csv)
    assert sorted(found) == sorted(cases)  # exactly one result per submission
    for student, (status, points) in cases.items():
        got = {gid: float(found[student][gid]) for gid in points}
        assert (found[student]["status"], got) == (status, points), student


@needs_bwrap
@pytest.mark.slow
def test_a_killed_coordinator_started_again_finishes_the_class_counting_nothing_twice(local_run):
    from nbgrader.api import Gradebook

    assert local_run["killed"] == -signal.SIGKILL
    assert 3 <= local_run["kept"] < len(STUDENTS)  # killed mid-batch, with results already recorded
    code, stderr = local_run["again"]
    assert code == 0, stderr
    assert f"resuming an interrupted run: {local_run['kept']} of {len(STUDENTS)} notebooks" in stderr
    assert not local_run["journal_left"]  # a finished class leaves no journal: the next run grades afresh
    check_against_cases(local_run["grades"], local_run["cases"])
    course = Course.load(Path(local_run["course"]))
    with Gradebook(course.db_url, course.course_id) as gb:
        assert sorted(s.id for s in gb.students) == sorted(STUDENTS)
        for student, row in rows(local_run["grades"]).items():
            nb = gb.find_submission_notebook(corpus.SLUG, corpus.SLUG, student)
            assert sum(g.score or 0 for g in nb.grades) == float(row["score"]), student  # counted once


def _odd_worker(address: str, folder: Path) -> subprocess.Popen:
    """A ``dask worker`` that cannot grade for this course: no bubblewrap (``QKV_BWRAP`` names no program) and
    another version of the course (a copy of the grader and of qkv with one line added)."""
    for part in ("autograder", "lib/qkv"):
        shutil.copytree(ROOT / part, folder / part, ignore=shutil.ignore_patterns("__pycache__", "sections"))
    with open(folder / "lib" / "qkv" / "__init__.py", "a") as fh:
        fh.write("\n# another version of the course\n")
    env = {**release.venv_env(), "QKV_BWRAP": str(folder / "no-bwrap-here"), "PYTHONPATH": f"{folder}:{folder}/lib"}
    cmd = [sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", "1", "--no-nanny"]
    cmd += ["--name", "odd-worker", "--host", "127.0.0.1", "--no-dashboard"]
    return subprocess.Popen(cmd, cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@needs_bwrap
@pytest.mark.slow
def test_a_cluster_that_loses_a_worker_mid_batch_grades_as_the_local_run_and_odd_workers_are_refused(
    local_run, tmp_path
):
    from distributed import Client, LocalCluster

    template = corpus.course_template((corpus.SLUG,))
    course, subs = tmp_path / "course", tmp_path / "class"
    shutil.copytree(template, course)
    corpus.build_some(subs, course, STUDENTS)
    odd_cluster = LocalCluster(n_workers=0, processes=False, host="127.0.0.1", protocol="tcp", dashboard_address=":0")
    odd = _odd_worker(odd_cluster.scheduler_address, tmp_path / "odd")  # starts while the real cluster does
    killed: dict = {}
    try:
        with (
            LocalCluster(
                n_workers=2,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                protocol="tcp",
                dashboard_address=":0",
            ) as lc,
            Client(lc, set_as_default=False) as watcher,
        ):
            assert lc.scheduler_address.startswith("tcp://127.0.0.1:")
            pids = watcher.run(os.getpid)
            outcome: dict = {}

            def coordinator():
                try:
                    options = GradeOptions(
                        jobs=2,
                        limits=sb.Limits(deadline=DEADLINE),
                        feedback=False,
                        progress=False,
                        fixed=("deadline",),
                        cluster=lc.scheduler_address,
                    )
                    outcome["results"] = cli.grade(subs, course, options=options)
                except BaseException as err:  # noqa: BLE001 (reported by the assertion below)
                    outcome["error"] = err

            thread = threading.Thread(target=coordinator)
            thread.start()
            journal = course / Journal.NAME
            while thread.is_alive() and not killed:  # kill a worker while it runs a notebook, after a first result
                busy = {w: keys for w, keys in watcher.processing().items() if keys}
                if journal_lines(journal) >= 1 and busy:
                    victim = sorted(busy)[0]
                    killed = {"worker": victim, "tasks": list(busy[victim]), "done": journal_lines(journal)}
                    os.kill(pids[victim], signal.SIGKILL)
                time.sleep(0.05)
            thread.join()
            assert "error" not in outcome, outcome.get("error")
            assert killed and killed["done"] < len(STUDENTS), "no worker was killed mid-batch"
            assert killed["worker"] not in watcher.scheduler_info()["workers"]
        grades_csv = (course / "reports" / "grades.csv").read_text()
        assert grades_csv == local_run["grades"]
        check_against_cases(grades_csv, local_run["cases"])
        assert not journal.exists()

        # A worker without bubblewrap and with another version of the course: refused before any grade.
        with Client(odd_cluster, set_as_default=False) as c:
            c.wait_for_workers(1, timeout=120)
        again = tmp_path / "again"
        shutil.copytree(template, again)
        before = (again / "gradebook.db").read_bytes()
        with pytest.raises(GradingError) as refused:
            cli.grade(
                subs, again, options=GradeOptions(feedback=False, progress=False, cluster=odd_cluster.scheduler_address)
            )
        message = str(refused.value)
        assert "odd-worker" in message or "worker tcp://127.0.0.1:" in message
        assert "bubblewrap does not work there" in message and "course version" in message
        assert "nothing was graded" in message
        assert (again / "gradebook.db").read_bytes() == before and not (again / "reports").exists()
    finally:
        odd.kill()
        odd.wait()
        odd_cluster.close()


@needs_bwrap
def test_an_unreachable_scheduler_is_a_quick_clear_error_and_nothing_is_written(tmp_path, monkeypatch):
    import socket

    with socket.socket() as s:  # a loopback port where nothing listens
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT", 2.0)
    course = tmp_path / "course"
    started = time.monotonic()
    with pytest.raises(GradingError, match=rf"could not reach the dask scheduler at tcp://127.0.0.1:{port}"):
        cli.grade(tmp_path / "class", course, options=GradeOptions(cluster=f"tcp://127.0.0.1:{port}", progress=False))
    assert time.monotonic() - started < 15
    assert not course.exists()
    with pytest.raises(GradingError, match="scheduler's address"):
        cluster.connect("127.0.0.1:8786")


def test_differences_name_each_thing_a_worker_has_otherwise():
    ours = {"bubblewrap": "works", "course": "abc", "packages": {"torch": "2.5.1", "numpy": "2.1.0"}}
    assert cluster.differences(ours, ours) == []
    theirs = {"bubblewrap": "bwrap was not found", "course": "def", "packages": {"torch": "2.4.0"}}
    found = cluster.differences(ours, theirs)
    assert found[0] == "bubblewrap does not work there (bwrap was not found)"
    assert found[1].startswith("course version def instead of abc")
    assert found[2:] == ["numpy missing instead of 2.1.0", "torch 2.4.0 instead of 2.5.1"]
    here = cluster.fingerprint()
    assert here["course"] == cluster.course_version() and len(here["course"]) == 16
    assert set(cluster.PACKAGES) | {"python"} == set(here["packages"])


def test_a_task_lost_or_killing_its_workers_is_run_again_or_here_and_recorded_once(monkeypatch, tmp_path):
    """The coordinator's bookkeeping on a real (in-process) cluster: a task cancelled by the scheduler, as when the
    connection is lost, is submitted again; one that killed its workers (dask's ``KilledWorker``) runs in the
    coordinator's own sandbox; every notebook is recorded exactly once."""
    from types import SimpleNamespace

    from distributed import Client, Future, LocalCluster
    from distributed.scheduler import KilledWorker

    log = tmp_path / "calls"  # dask serialises the task, closure and all: the calls are counted in a file
    log.touch()

    def calls() -> list[str]:
        return log.read_text().split()

    def fake_run(expected, limits, prefix, cells):  # what a worker sends back, after a while
        with open(log, "a") as fh:
            fh.write(cells + "\n")
        time.sleep(2.0 if cells == "lost" and calls().count("lost") == 1 else 0.2)
        if cells == "killer":
            raise KilledWorker("killer", SimpleNamespace(address="tcp://127.0.0.1:1"), 3)
        return "ran", sb.RunResult(how="done", detail=cells)

    monkeypatch.setattr(cluster, "run_on_worker", fake_run)
    monkeypatch.setattr(cluster, "run_here", lambda limits, prefix, cells, boxes=None: sb.RunResult(detail="here"))
    items = [SimpleNamespace(prefix=[], cells=name) for name in ("lost", "killer", "plain", "other")]
    recorded: list[tuple[str, str]] = []
    with (
        LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0") as lc,
        Client(lc, set_as_default=False) as client,
    ):
        cancelled = []

        def lose_once():  # the scheduler forgets the first attempt of "lost" while it runs
            while not cancelled:
                if "lost" in calls():  # running: the scheduler drops it
                    client.cancel([Future("qkv-grade-lost-0", client)], force=True)
                    cancelled.append("qkv-grade-lost-0")
                time.sleep(0.02)

        watcher = threading.Thread(target=lose_once, daemon=True)
        watcher.start()
        here = cluster.run_all(
            client,
            items,
            lambda item: sb.Limits(),
            lambda item, run: recorded.append((item.cells, run.detail)),
            expected={},
            token_of=lambda item: item.cells,
        )
        watcher.join(5)
    assert cancelled == ["qkv-grade-lost-0"] and calls().count("lost") == 2  # the lost one ran again
    assert sorted(recorded) == [("killer", "here"), ("lost", "lost"), ("other", "other"), ("plain", "plain")]
    assert here == 1
