"""Grading limits per section: a notebook's ``grading:`` front matter, read from the trusted release.

The rules (``autograder/grade.py``'s docstring): a section's ``deadline_s`` and
``memory_gib`` replace the grader's defaults for that section; a ``--deadline``
or ``--memory`` given on the command line holds for every section; a
submission's own ``grading:`` metadata is never read; an invalid block in a
release stops the run before any grade is written. The end-to-end tests build
a course from a copy of the book whose 11.2 (attention pooling) says
``deadline_s: 2`` beside 11.1 on the default, and grade a class whose first
answer in each sleeps 5 seconds.
"""

from __future__ import annotations

import csv
import dataclasses
import shutil
from pathlib import Path

import nbformat
import pytest

from autograder import release
from autograder import sandbox as sb
from autograder.grading import cli, schedule
from autograder.grading.limits import FIXABLE, LIMIT_FIELDS, notebook_limits, section_limits
from autograder.grading.options import GradeOptions
from autograder.grading.schedule import LOCAL_WINDOW, grade_here
from autograder.nbcourse import Course, GradingError
from course import notebooks as nbs
from course.section import LIMIT_KEYS, Section, section
from tests.support import corpus, once

QUICK = corpus.SLUG  # 11.1: on the grader's defaults
TIGHT = "attention-pooling"  # 11.2: its front matter says deadline_s: 2 (in a copy of the book)
BLOCK = "grading:\n  deadline_s: 2\n"
needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap is not installed (apt-get install bubblewrap)"
)


# ---------------------------------------------------------------- the rule, directly


def test_every_key_a_section_may_set_is_a_limit_of_the_sandbox():
    assert set(LIMIT_FIELDS) == set(LIMIT_KEYS)
    fields = {f.name for f in dataclasses.fields(sb.Limits)}
    assert set(FIXABLE) <= fields and set(FIXABLE) == {"deadline", "memory"}


def test_a_sections_block_replaces_the_defaults_and_the_command_line_wins():
    block = {"deadline_s": 300, "memory_gib": 4.5}
    base = sb.Limits()
    assert section_limits({}, base) == base
    mine = section_limits(block, base)
    assert (mine.deadline, mine.memory) == (300.0, int(4.5 * sb.GiB))
    assert dataclasses.replace(mine, deadline=base.deadline, memory=base.memory) == base  # nothing else changes
    instructor = sb.Limits(deadline=30.0)
    fixed = section_limits(block, instructor, fixed=("deadline",))
    assert (fixed.deadline, fixed.memory) == (30.0, int(4.5 * sb.GiB))  # --deadline given; --memory not
    both = section_limits(block, sb.Limits(deadline=30.0, memory=sb.GiB), fixed=("deadline", "memory"))
    assert (both.deadline, both.memory) == (30.0, sb.GiB)


def test_the_command_line_fixes_exactly_the_limits_it_was_given(monkeypatch, tmp_path, capsys):
    calls = []
    monkeypatch.setattr(cli, "grade", lambda submissions, course, out, options: calls.append(options) or [])
    common = [str(tmp_path), "--course", str(tmp_path), "--quiet", "--no-feedback"]
    assert cli.main(common) == 0
    assert calls[-1].limits == sb.Limits() and calls[-1].fixed == ()
    assert cli.main([*common, "--deadline", "30"]) == 0
    assert calls[-1].limits == sb.Limits(deadline=30.0) and calls[-1].fixed == ("deadline",)
    assert cli.main([*common, "--memory", "1.5", "--deadline", "30"]) == 0
    limits, fixed = calls[-1].limits, calls[-1].fixed
    assert (limits.deadline, limits.memory, sorted(fixed)) == (30.0, int(1.5 * sb.GiB), ["deadline", "memory"])
    for bad, why in (("0", "must be above zero, not 0"), ("soon", "'soon' is not a number")):
        with pytest.raises(SystemExit) as exit:
            cli.main([*common, "--deadline", bad])
        assert exit.value.code == 2 and why in capsys.readouterr().err
    # The run's options refuse to fix a limit no section sets, before anything else.
    with pytest.raises(GradingError, match=r"fixed names limits a section may set \(deadline, memory\)"):
        GradeOptions(fixed=("cpu",))


def fake_course(root: Path, grading) -> Course:
    nb = nbformat.v4.new_notebook()
    nb.metadata["grading"] = grading
    (root / "release" / "a").mkdir(parents=True)
    nbformat.write(nb, str(root / "release" / "a" / "a.ipynb"))
    return Course(root, None, "", "", {"a": ["a"]})


def test_an_invalid_block_in_a_release_names_the_file_and_what_to_do(tmp_path):
    course = fake_course(tmp_path, {"deadline_s": "soon"})
    with pytest.raises(GradingError) as err:
        notebook_limits(course, "a", "a", sb.Limits())
    said = str(err.value)
    assert said.startswith(f"{tmp_path / 'release' / 'a' / 'a.ipynb'}: grading: deadline_s must be a positive number")
    assert "book/a.md" in said and "make release" in said and "Nothing was graded" in said


# ---------------------------------------------------------------- a class, graded


def book_with_block(root: Path) -> Section:
    """A copy of TIGHT's book notebook whose front matter holds BLOCK, as a section rooted at ``root``."""
    text = section(TIGHT).path.read_text(encoding="utf-8")
    assert text.startswith("---\n") and "\ngrading:" not in text, "the section has a grading: block of its own"
    copy = Section(TIGHT, root)
    copy.path.parent.mkdir(parents=True)
    copy.path.write_text("---\n" + BLOCK + text.removeprefix("---\n"), encoding="utf-8")
    return copy


def sleepy(course_dir: Path, slug: str) -> nbformat.NotebookNode:
    """The solved release notebook of ``slug`` whose first answer sleeps 5 s before answering."""
    nb = corpus.solved_notebook(course_dir / "release" / slug / f"{slug}.ipynb", slug)
    first = next(c for c in nb.cells if nbs.role(c) == "stub")
    first.source = "import time\n\ntime.sleep(5)\n\n" + first.source
    return nb


#: What each student puts in their notebooks' own metadata (the grader must ignore all of it).
FORGED = {
    "plain": {},
    "forger": {QUICK: {"deadline_s": 1}, TIGHT: {"deadline_s": 600}},
    "garbage": {QUICK: "no limits please", TIGHT: {"deadline_s": -1, "cpus": 64}},
}


def write_class(root: Path, course_dir: Path, students=FORGED, slugs=(QUICK, TIGHT)) -> None:
    for student, forged in students.items():
        for slug in slugs:
            nb = sleepy(course_dir, slug)
            if slug in forged:
                nb.metadata["grading"] = forged[slug]
            (root / student / slug).mkdir(parents=True)
            nbformat.write(nb, str(root / student / slug / f"{slug}.ipynb"))


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """A course released from the book with TIGHT's block (kept unused in ``released/``), and FORGED's class
    graded by the command line with the default limits into a copy of it; returns the folder and the results."""

    def produce(root: Path):
        built = root / "released"
        release.release(built, [section(QUICK), book_with_block(root / "book-copy")])
        shutil.copytree(built, root / "course")
        write_class(root / "class", built)
        args = [str(root / "class"), "--course", str(root / "course"), "--out", str(root / "out")]
        code = cli.main([*args, "--jobs", "2", "--quiet", "--no-feedback"])
        return {"code": code, "rows": read_rows(root / "out" / "grades.csv")}

    folder = once.shared_dir(tmp_path_factory) / "grading-limits"
    return folder, once.run_once(folder, produce)


def read_rows(path: Path) -> dict:
    """grades.csv, by STUDENT/ASSIGNMENT."""
    with open(path, newline="") as fh:
        return {f"{r['student']}/{r['assignment']}": r for r in csv.DictReader(fh)}


@needs_bwrap
@pytest.mark.slow
def test_the_block_travels_from_the_front_matter_to_the_release(graded):
    root, _ = graded
    for step in ("source", "release"):
        tight = nbformat.read(root / "released" / step / TIGHT / f"{TIGHT}.ipynb", as_version=4)
        quick = nbformat.read(root / "released" / step / QUICK / f"{QUICK}.ipynb", as_version=4)
        assert tight.metadata.get("grading") == {"deadline_s": 2}, step
        assert "grading" not in quick.metadata, step


@needs_bwrap
@pytest.mark.slow
def test_the_sections_deadline_holds_whatever_the_submission_says(graded):
    root, outcome = graded
    rows = outcome["rows"]
    release = nbformat.read(root / "released" / "release" / QUICK / f"{QUICK}.ipynb", as_version=4)
    auto = sum(corpus.points_of_tests(release).values())  # every test passes: the notebook is solved
    total = sum(float(c.metadata.nbgrader.get("points", 0)) for c in release.cells if "nbgrader" in c.metadata)
    assert 0 < auto < total, "11.1 should have auto-graded tests and written answers"
    assert outcome["code"] == 0 and sorted(rows) == sorted(f"{s}/{a}" for s in FORGED for a in (QUICK, TIGHT))
    for student in FORGED:
        tight, quick = rows[f"{student}/{TIGHT}"], rows[f"{student}/{QUICK}"]
        assert (tight["status"], tight["score"]) == ("timeout", "0"), student
        assert "ran past the 2 s deadline" in tight["reason"], student
        # 11.1 on the default 120 s: the 5 s sleep is harmless, and the answers get their points.
        assert (quick["status"], quick["score"], quick["max_score"]) == ("graded", f"{auto:g}", f"{total:g}"), student


@needs_bwrap
@pytest.mark.slow
def test_a_deadline_given_on_the_command_line_holds_for_every_section(graded, tmp_path):
    root, _ = graded
    shutil.copytree(root / "released", tmp_path / "course")
    write_class(tmp_path / "class", tmp_path / "course", {"plain": {}}, (TIGHT,))
    args = [str(tmp_path / "class"), "--course", str(tmp_path / "course"), "--out", str(tmp_path / "out")]
    assert cli.main([*args, "--deadline", "60", "--jobs", "1", "--quiet", "--no-feedback"]) == 0
    (row,) = read_rows(tmp_path / "out" / "grades.csv").values()
    assert (row["student"], row["assignment"], row["status"]) == ("plain", TIGHT, "graded")


@needs_bwrap
@pytest.mark.slow
def test_an_invalid_block_in_the_release_stops_the_run_before_any_grade(graded, tmp_path, capsys):
    from nbgrader.api import Gradebook

    root, _ = graded
    course_dir = tmp_path / "course"
    shutil.copytree(root / "released", course_dir)
    path = course_dir / "release" / TIGHT / f"{TIGHT}.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.metadata["grading"] = {"deadline_s": 2, "gpus": 1}
    nbformat.write(nb, str(path))
    # Each student misses one assignment: a result that needs no run, which the grader would record at once.
    write_class(tmp_path / "class", course_dir, {"plain": {}}, (QUICK,))
    write_class(tmp_path / "class", course_dir, {"other": {}}, (TIGHT,))
    args = [str(tmp_path / "class"), "--course", str(course_dir), "--out", str(tmp_path / "out"), "--quiet"]
    assert cli.main(args) == 2
    said = capsys.readouterr().err
    assert f"grade: {path}: unknown key(s) ['gpus'] in the front matter's grading:" in said
    assert f"book/{TIGHT}.md" in said and "Nothing was graded" in said
    assert not (tmp_path / "out").exists() and not (course_dir / "autograded").exists()
    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}") as gb:
        assert [s for a in gb.assignments for s in a.submissions] == []


def test_local_grading_prepares_notebooks_only_as_sandboxes_have_room(monkeypatch):
    """The local path (no --cluster) reads and prepares a submission only when a sandbox has room for it: however
    large the class, at most LOCAL_WINDOW per sandbox are prepared and not yet recorded, so the coordinator's memory
    stays flat. Every submission is recorded exactly once, those that cannot run at once and without a sandbox."""
    import threading
    from types import SimpleNamespace

    prepared, recorded, in_flight = [], [], []
    lock = threading.Lock()

    def fake_prepare(sub, course):
        with lock:
            prepared.append(sub)
        status = "missing" if sub % 7 == 0 else None
        return SimpleNamespace(sub=SimpleNamespace(assignment="a", notebook="n", id=sub), prefix=[], cells=sub,
                               status=status)  # fmt: skip

    class FakeBox:
        def __init__(self, limits, bubblewrap=True):
            assert bubblewrap, "the local path uses bubblewrap unless asked not to"
            self.limits = limits

        def run(self, cells, prefix):
            with lock:
                in_flight.append(len(prepared) - len(recorded))
            return sb.RunResult(how="done", detail=str(cells))

        def close(self):
            pass

    monkeypatch.setattr(schedule, "prepare_safely", fake_prepare)
    monkeypatch.setattr(sb, "Sandbox", FakeBox)
    jobs, n = 2, 200
    grade_here(
        range(n),
        course=None,
        jobs=jobs,
        per_notebook={("a", "n"): sb.Limits()},
        record=lambda prep, run: recorded.append((prep.sub.id, None if run is None else run.detail)),
    )
    assert sorted(i for i, _ in recorded) == list(range(n))  # each once
    assert all((run is None) == (i % 7 == 0) for i, run in recorded)  # "missing" ones never reach a sandbox
    assert all(run == str(i) for i, run in recorded if run is not None)
    assert in_flight and max(in_flight) <= LOCAL_WINDOW * jobs + 1  # +1: the one being prepared
