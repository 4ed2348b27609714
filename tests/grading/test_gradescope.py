"""The Gradescope autograder (autograder.gradescope): results.json, the notebook finder, the settings, the zip, and
the whole cycle.

The cycle: ``make gradescope``'s zip of 11.1 is unpacked into a temporary ``AUTOGRADER_ROOT`` as Gradescope unpacks
it, and ``run_autograder`` grades a solved, an unanswered, a wrong and a tampered notebook in turn (each under
another file name), then submissions without one notebook: each ``results.json`` follows Gradescope's format, and
its scores are ``make grade``'s for the same notebooks. It runs without bubblewrap, as on Gradescope, which needs
root and a Python the sandbox's user can read (tests/support/unwrapped.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
import zipfile
from pathlib import Path

import nbformat
import pytest

from autograder.gradescope import build as gs_build
from autograder.gradescope import layout
from autograder.gradescope import results as gs_results
from autograder.gradescope.run import find_notebook
from autograder.gradescope.settings import Settings
from autograder.grading import cli
from autograder.grading.options import GradeOptions
from autograder.nbcourse import GradingError
from course.section import section
from tests.support import corpus, doors, unwrapped

SLUG = corpus.SLUG
HERE = Path(gs_build.__file__).parent
TITLES = {
    "test_attention_pooling": "Exercise 1: attention pooling",
    "test_sharp_similarity": "Exercise 2: from soft to exact look-up",
    "test_query_jacobian": "Exercise 3: the gradient of attention is a covariance",
    "test_averaging_similarity": "Exercise 4: attention that ignores the query",
}


# ---------------------------------------------------------------- results.json


def release_notebook():
    nb = nbformat.v4.new_notebook()
    test = lambda gid, pts: nbformat.v4.new_code_cell(  # noqa: E731
        "pass", metadata={"nbgrader": {"grade": True, "solution": False, "grade_id": gid, "points": pts}}
    )
    nb.cells = [
        nbformat.v4.new_markdown_cell("# The section\n\n## Exercise 1: masks"),
        test("test_a", 2),
        nbformat.v4.new_markdown_cell("## Exercise 2: two tests"),
        test("test_b", 1),
        test("test_c", 1),
        nbformat.v4.new_markdown_cell(
            "Why?", metadata={"nbgrader": {"grade": True, "solution": True, "grade_id": "why", "points": 1}}
        ),
    ]
    return nb


def test_each_graded_test_cell_is_one_test_named_by_its_exercise():
    assert gs_results.test_cells(release_notebook()) == [
        ("test_a", "Exercise 1: masks", 2.0),
        ("test_b", "Exercise 2: two tests (test_b)", 1.0),
        ("test_c", "Exercise 2: two tests (test_c)", 1.0),
    ]  # the written answer is not a test: a person grades it


def scored(settings, points=None, feedback=None):
    cells = gs_results.test_cells(release_notebook())
    points = {"test_a": 2.0, "test_b": 0.0, "test_c": None} if points is None else points
    feedback = {"test_b": "CheckFailed: mask differs\n  hint: fill with -1e6"} if feedback is None else feedback
    return gs_results.build(cells, points, feedback, "Graded.", settings, 3.4)


def test_by_default_scores_show_at_once_and_feedback_after_the_due_date():
    data = scored(Settings(SLUG))
    assert gs_results.check_format(data) == []
    graded = [t for t in data["tests"] if "grade_id" in t["extra_data"]]
    assert [t["name"] for t in graded] == ["Exercise 1: masks", "Exercise 2: two tests (test_b)",
                                           "Exercise 2: two tests (test_c)"]  # fmt: skip
    assert [(t["score"], t["max_score"], t["status"]) for t in graded] == [
        (2.0, 2.0, "passed"),
        (0.0, 1.0, "failed"),
        (0.0, 1.0, "failed"),
    ]
    assert {t["visibility"] for t in graded} == {"visible"} and data["score"] == 2.0 and data["execution_time"] == 3
    feedback = {t["extra_data"]["feedback_of"]: t for t in data["tests"] if "feedback_of" in t["extra_data"]}
    assert set(feedback) == {"test_a", "test_b", "test_c"}
    assert {(t["visibility"], t["score"], t["max_score"]) for t in feedback.values()} == {("after_due_date", 0, 0)}
    assert "hint: fill with -1e6" in feedback["test_b"]["output"] and "hint" not in graded[1]["output"]
    assert sum(t["max_score"] for t in data["tests"]) == 4.0


def test_the_same_visibility_for_both_keeps_the_feedback_in_the_test():
    data = scored(Settings(SLUG, tests="after_published", output="after_published", stdout="visible"))
    assert gs_results.check_format(data) == [] and len(data["tests"]) == 3
    assert data["tests"][1]["output"].endswith("hint: fill with -1e6\n```")  # Markdown: in a code block
    assert {t["visibility"] for t in data["tests"]} == {"after_published"} and data["stdout_visibility"] == "visible"


def test_the_feedback_of_a_cell_is_what_nbgrader_shows_without_any_code():
    outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="visible tests passed\n"),
        nbformat.v4.new_output(
            "error",
            ename="CheckFailed",
            evalue="weights differ",
            traceback=["\x1b[31mCheckFailed\x1b[0m: weights differ", "  hint: softmax along the keys"],
        ),
    ]
    assert gs_results.cell_feedback(outputs) == (
        "visible tests passed\nCheckFailed: weights differ\n  hint: softmax along the keys"
    )
    flood = gs_results.cell_feedback([nbformat.v4.new_output("stream", name="stdout", text="x" * 10**6)])
    assert len(flood) < gs_results.MAX_OUTPUT + 100 and flood.endswith("(output truncated)")


@pytest.mark.parametrize(
    "change, problem",
    [
        ({"score": "8"}, "score '8' is not a number"),
        ({"score": True}, "is not a number"),
        ({"stdout_visibility": "soon"}, "stdout_visibility 'soon'"),
        ({"tests": [{"score": 1, "visibility": "later"}]}, "tests[0].visibility"),
        ({"tests": [{"score": 1, "max_score": "2"}]}, "tests[0].max_score is not a number"),
        ({"tests": [{"score": 1, "status": "ok"}]}, "tests[0].status"),
        ({"tests": [{"score": 1, "points": 1}]}, "fields Gradescope does not know: ['points']"),
        ({"output": 3}, "output is not a string"),
    ],
)
def test_the_format_check_names_what_gradescope_would_refuse(change, problem):
    data = {**scored(Settings(SLUG)), **change}
    assert any(problem in p for p in gs_results.check_format(data)), gs_results.check_format(data)
    assert gs_results.check_format([]) == ["results is list, not an object"]


# ---------------------------------------------------------------- the submission and the settings


def touch(path: Path, text: str = "{}") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_the_one_notebook_is_found_whatever_its_name_and_folder(tmp_path):
    only = touch(tmp_path / "work" / "My Notebook (1).IPYNB")
    touch(tmp_path / "work" / ".ipynb_checkpoints" / "My Notebook (1)-checkpoint.ipynb")
    touch(tmp_path / "__MACOSX" / "._x.ipynb")
    touch(tmp_path / ".hidden.ipynb")
    touch(tmp_path / "notes.txt")
    assert find_notebook(tmp_path, SLUG) == (only, "")


def test_no_notebook_or_two_is_said_to_the_student(tmp_path):
    assert find_notebook(tmp_path, SLUG) == (None, find_notebook(tmp_path, SLUG)[1])
    assert "the submission is empty" in find_notebook(tmp_path, SLUG)[1]
    touch(tmp_path / "answers.py")
    none, why = find_notebook(tmp_path, SLUG)
    assert none is None and "found: answers.py" in why and f"{SLUG}.ipynb" in why
    touch(tmp_path / "a.ipynb")
    touch(tmp_path / "b" / "c.ipynb")
    none, why = find_notebook(tmp_path, SLUG)
    assert none is None and why.startswith("2 notebooks") and "a.ipynb, b/c.ipynb" in why


def test_settings_are_checked_and_read_back(tmp_path):
    settings = Settings(SLUG, output="visible", deadline=60)
    (tmp_path / "gradescope.json").write_text(settings.to_json())
    assert Settings.read(tmp_path / "gradescope.json") == settings
    with pytest.raises(GradingError, match="output visibility must be one of hidden"):
        Settings(SLUG, output="later")
    with pytest.raises(GradingError, match="deadline must be a positive number"):
        Settings(SLUG, deadline=0)
    (tmp_path / "gradescope.json").write_text(json.dumps({"assignment": SLUG, "visibilty": "visible"}))
    with pytest.raises(GradingError, match="unknown settings \\['visibilty'\\]"):
        Settings.read(tmp_path / "gradescope.json")


def test_the_scripts_use_the_zips_names_and_parse():
    setup, run = (HERE / layout.SETUP).read_text(), (HERE / layout.RUN).read_text()
    for name in (layout.CONSTRAINTS, layout.REQUIREMENTS, layout.DEBIAN, layout.VENV, layout.COURSE, layout.CODE):
        assert name in setup, name
    for name in (f"{layout.CODE}/lib", layout.TRAINED, layout.DATA, layout.VENV, "autograder.gradescope.run"):
        assert name in run, name
    assert "AUTOGRADER_ROOT:-/autograder" in setup and "AUTOGRADER_ROOT:-/autograder" in run
    assert "download.pytorch.org/whl/cpu" in setup and "TORCH_INDEX_URL" in setup  # tests/unit: test_gradescope_setup
    assert layout.PYTHON_VERSION in setup
    for script in (setup, run):
        assert subprocess.run(["bash", "-n"], input=script, text=True).returncode == 0
    assert {"torch", "nbgrader", "pyseccomp", "jupytext"} <= set(gs_build.requirements())


# ---------------------------------------------------------------- the zip and the whole cycle


@pytest.fixture(scope="module")
def zip_path(template, tmp_path_factory):
    smoke = os.environ.get("QKV_TRAIN_SMOKE", "")
    settings = Settings(SLUG, train_smoke=smoke)
    return gs_build.build(section(SLUG), settings, tmp_path_factory.mktemp("zips"), course=template)


def test_the_zip_holds_the_grading_core_and_the_course_but_no_answer(zip_path, template):
    with zipfile.ZipFile(zip_path) as archive:
        names = archive.namelist()
        modes = {info.filename: info.external_attr >> 16 for info in archive.infolist()}
        settings = json.loads(archive.read("gradescope.json"))
    assert {layout.SETUP, layout.RUN, "gradescope.json", "constraints.txt", "requirements.txt"} <= set(names)
    assert {layout.README, layout.PYTHON_VERSION} <= set(names)
    assert modes[layout.RUN] & 0o111 and modes[layout.SETUP] & 0o111
    assert f"{layout.COURSE}/gradebook.db" in names and f"{layout.COURSE}/release/{SLUG}/{SLUG}.ipynb" in names
    assert "code/autograder/grading/cli.py" in names and "code/lib/qkv/checks.py" in names
    assert "code/autograder/gradescope/run.py" in names
    assert not [n for n in names if "/sections/" in n or n.startswith(("solutions", "code/solutions"))]
    assert not [n for n in names if "/source/" in n or "__pycache__" in n]  # no source notebook: no solution
    assert settings["assignment"] == SLUG and settings["output"] == "after_due_date"
    assert settings["bubblewrap"] is False


def tampered_notebook(solved):
    edited = corpus.with_answer(
        solved, "sharp_similarity", corpus.mutant_source(SLUG, "sharp_similarity", "positive_sign")
    )
    corpus.find_cell(edited, "test_sharp_similarity").source = "pass"
    return edited


def class_notebooks(template) -> dict[str, nbformat.NotebookNode]:
    release_path = template / "release" / SLUG / f"{SLUG}.ipynb"
    solved = corpus.solved_notebook(release_path, SLUG)
    wrong = corpus.with_answer(
        solved, "sharp_similarity", corpus.mutant_source(SLUG, "sharp_similarity", "positive_sign")
    )
    return {
        "solved": solved,
        "unanswered": nbformat.read(release_path, as_version=4),
        "wrong": wrong,
        "tampered": tampered_notebook(solved),
        # The other doors (issue 37) whose notebooks differ most from the release: the Colab notebook answered and
        # saved back in Colab's own format, and a jupytext conversion of the page (no checksums, random cell ids).
        "colab_saved": doors.solved("colab_saved", section(SLUG), release_path),
        "jupytext": doors.solved("jupytext", section(SLUG), release_path),
    }


@pytest.fixture(scope="module")
def autograder_root(zip_path):
    """The zip unpacked as Gradescope does, in a folder that the sandbox's user may traverse, with the permissions
    setup.sh leaves and a venv that user can run."""
    root = Path(tempfile.mkdtemp(prefix="qkv-gradescope-test-"))
    try:
        os.chmod(root, 0o755)
        python = unwrapped.python_for_sandbox_user(root / "python")
        if python is None:
            pytest.skip("needs root and a system Python of this version that the user nobody can run")
        with zipfile.ZipFile(zip_path) as archive:
            archive.extractall(root / layout.SOURCE)
        subprocess.run(["chmod", "-R", "a+rX", str(root / layout.SOURCE)], check=True)  # as setup.sh does
        shutil.copy2(HERE / layout.RUN, root / layout.RUN)  # where Gradescope puts it
        (root / layout.VENV).symlink_to(python.parent.parent)
        (root / layout.SUBMISSION).mkdir()
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run_autograder(root: Path, files: dict[str, object]) -> tuple[dict, float, str]:
    """Put ``files`` (name -> notebook or text) in ``submission/``, run ``run_autograder``; its results, seconds."""
    submission = root / layout.SUBMISSION
    shutil.rmtree(submission)
    submission.mkdir()
    for name, content in files.items():
        path = submission / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            path.write_text(content)
        else:
            nbformat.write(content, str(path))
    (root / layout.RESULTS / layout.RESULTS_FILE).unlink(missing_ok=True)
    env = {**os.environ, layout.ROOT_ENV: str(root)}
    started = time.monotonic()
    done = subprocess.run([str(root / layout.RUN)], env=env, capture_output=True, text=True, cwd="/", timeout=600)
    seconds = time.monotonic() - started
    log = done.stdout + done.stderr
    assert done.returncode == 0, log
    data = json.loads((root / layout.RESULTS / layout.RESULTS_FILE).read_text())
    assert gs_results.check_format(data) == [], data
    return data, seconds, log


@pytest.fixture(scope="module")
def make_grade(template, tmp_path_factory):
    """``make grade``'s results for the class's notebooks (in bubblewrap, as make grade grades)."""
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed: make grade's scores cannot be had here")
    tmp = tmp_path_factory.mktemp("make-grade")
    shutil.copytree(template, tmp / "course")
    for student, nb in class_notebooks(template).items():
        path = tmp / "class" / student / SLUG / f"{SLUG}.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(nb, str(path))
    options = GradeOptions(jobs=1, feedback=False, progress=False)
    return {r.student: r for r in cli.grade(tmp / "class", tmp / "course", tmp / "reports", options)}


@pytest.mark.slow
def test_run_autograder_scores_each_notebook_as_make_grade_does(autograder_root, template, make_grade):
    hidden = [line.strip() for line in section(SLUG).hidden_test("test_sharp_similarity").read_text().splitlines()]
    hidden = [line for line in hidden if len(line) > 30 and not line.startswith("#")]
    times = {}
    for student, nb in class_notebooks(template).items():
        data, times[student], log = run_autograder(autograder_root, {f"{student} homework.ipynb": nb})
        expected = make_grade[student]
        assert data["score"] == expected.score, (student, data["output"], log)
        assert data["extra_data"]["status"] == expected.status and data["extra_data"]["reason"] == expected.reason
        assert data["extra_data"]["sandbox"] == "without bubblewrap" and "without bubblewrap" in log
        graded = {t["extra_data"]["grade_id"]: t for t in data["tests"] if "grade_id" in t["extra_data"]}
        assert list(graded) == list(TITLES) and {g: t["name"] for g, t in graded.items()} == TITLES
        assert {g: t["score"] for g, t in graded.items()} == {g: expected.exercises[g] for g in TITLES}, student
        assert {g: t["max_score"] for g, t in graded.items()} == {g: expected.max_points[g] for g in TITLES}
        feedback = {
            t["extra_data"]["feedback_of"]: t["output"] for t in data["tests"] if "feedback_of" in t["extra_data"]
        }
        assert not [line for text in feedback.values() for line in hidden if line in text], student
        if student == "wrong":
            assert (
                "hint:" in feedback["test_sharp_similarity"] and graded["test_sharp_similarity"]["status"] == "failed"
            )
        if student == "unanswered":
            assert "Exercise 1 (attention_pooling) is not written yet" in feedback["test_attention_pooling"]
        if student == "tampered":
            assert data["score"] == 0 and r"test\_sharp\_similarity (source changed)" in data["output"]  # Markdown
        if student in ("solved", "colab_saved", "jupytext"):
            assert data["score"] == 8.0 and "2 written answer(s) wait for a person" in data["output"], student
            assert data["extra_data"]["reason"] == "", student
    print("\nrun_autograder seconds per submission:", {k: round(v, 1) for k, v in times.items()})


@pytest.mark.slow
def test_a_submission_without_one_readable_notebook_gets_results_that_say_so(autograder_root):
    none, _, _ = run_autograder(autograder_root, {"answers.py": "print(1)\n"})
    assert none["score"] == 0 and none["extra_data"]["status"] == "missing"
    assert none["output"].startswith("Not graded (missing): 0 of 8 points.\n\nNo notebook (.ipynb file) in the ")
    assert "(found: answers.py)" in none["output"]
    assert [t["score"] for t in none["tests"]] == [0.0] * 8 and sum(t["max_score"] for t in none["tests"]) == 8
    two, _, _ = run_autograder(autograder_root, {"a.ipynb": "{}", "b.ipynb": "{}"})
    assert (
        two["extra_data"]["status"] == "missing" and "2 notebooks in the submission (a.ipynb, b.ipynb)" in two["output"]
    )
    broken, _, _ = run_autograder(autograder_root, {"hw.ipynb": '{"cells": ['})
    assert broken["extra_data"]["status"] == "invalid notebook" and broken["score"] == 0
    assert "Not valid JSON" in broken["output"]


def test_run_autograder_without_its_environment_still_writes_results(tmp_path):
    shutil.copy2(HERE / layout.RUN, tmp_path / layout.RUN)
    done = subprocess.run([str(tmp_path / layout.RUN)], env={**os.environ, layout.ROOT_ENV: str(tmp_path)})
    assert done.returncode == 1
    data = json.loads((tmp_path / layout.RESULTS / layout.RESULTS_FILE).read_text())
    assert gs_results.check_format(data) == [] and data["score"] == 0 and "setup.sh" in data["output"]


@pytest.mark.slow
def test_a_section_that_shows_a_trained_model_carries_its_weights_and_data():
    seen = gs_build.recorded("bahdanau-attention")  # loads the weights from the cache (the suite's smoke ones)
    assert len(seen["trained"]) == 1 and Path(seen["trained"][0]).is_file()
    assert Path(seen["trained"][0]).name.startswith("bahdanau")
    assert [d["relpath"] for d in seen["data"]] == ["fra-eng/fra.txt"]
    assert gs_build.recorded(SLUG) == {"trained": [], "data": []}  # 11.1 loads nothing


def test_a_course_of_another_section_is_refused(template):
    assert len(gs_build.course_files(template, SLUG)) == 3  # config, gradebook, release: the section alone
    with pytest.raises(GradingError, match="not the section attention-pooling alone"):
        gs_build.course_files(template, "attention-pooling")
