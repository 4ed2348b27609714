"""``run_autograder``'s work, once per submission: ``python -m autograder.gradescope.run [--root DIR]``.

Find the one notebook in ``submission/`` (whatever its name), grade it with the course's grading core
(:func:`autograder.grading.cli.grade`: the same rebuild, sandbox, Guard, hidden tests and limits as ``make grade``,
into a copy of the zip's course, as a class of one) and write Gradescope's ``results/results.json``
(:mod:`autograder.gradescope.results`). A submission without a notebook, with several, or whose notebook cannot
be read still gets a ``results.json``, which says so; so does a problem of the autograder itself (then the exit
status is 1 and the log, which Gradescope shows instructors, has the details).

Run as root (Gradescope does): the zip's course and the results are made readable by root alone before any
student code runs, and without bubblewrap (the default on Gradescope, :class:`~.settings.Settings`) student code
runs as an unprivileged user that can read neither.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

from autograder.gradescope import layout, ration
from autograder.gradescope import markdown as md
from autograder.gradescope import results as gs_results
from autograder.gradescope.settings import NAME, Settings
from autograder.nbcourse import GradingError, course_path

#: The student's name in the one-student class (Gradescope knows who it is).
STUDENT = "student"
#: Folders a submission may carry that hold no notebook of the student's (macOS archives, Jupyter's checkpoints).
IGNORED = ("__MACOSX", ".ipynb_checkpoints")


def find_notebook(folder: Path, slug: str) -> tuple[Path | None, str]:
    """The one ``.ipynb`` file under ``folder`` (hidden folders and :data:`IGNORED` left out, links not followed),
    or ``(None, why)`` for the student: none, or several."""
    found, others = [], []
    for top, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in IGNORED)
        for name in sorted(files):
            path = Path(top) / name
            if name.startswith("."):
                continue
            (found if name.lower().endswith(".ipynb") else others).append(path)
    shown = lambda paths: (
        ", ".join(str(p.relative_to(folder)) for p in paths[:10])
        + (  # noqa: E731
            f" and {len(paths) - 10} more" if len(paths) > 10 else ""
        )
    )
    if not found:
        what = f"found: {shown(others)}" if others else "the submission is empty"
        return (
            None,
            f"no notebook (.ipynb file) in the submission ({what}): hand in the section's notebook, {slug}.ipynb",
        )
    if len(found) > 1:
        return (
            None,
            f"{len(found)} notebooks in the submission ({shown(found)}): hand in one, the section's {slug}.ipynb",
        )
    if found[0].is_symlink():
        return None, f"{found[0].name} is a symbolic link, not a notebook: hand in the file itself"
    return found[0], ""


def protect(paths) -> None:
    """Make ``paths`` readable by root alone (as root: student code may run as another user)."""
    if os.geteuid() != 0:
        return
    for path in paths:
        if Path(path).exists():
            os.chmod(path, 0o700)


def options_of(settings: Settings):
    """The grading core's options for one Gradescope submission (limits as ``make grade``'s, or the settings')."""
    from autograder import sandbox as sb
    from autograder.grading.options import GradeOptions

    given = {"deadline": settings.deadline}
    if settings.memory_gib is not None:
        given["memory"] = int(settings.memory_gib * sb.GiB)
    given = {k: v for k, v in given.items() if v is not None}
    return GradeOptions(
        limits=sb.Limits(**given),
        fixed=tuple(given),
        tampered=settings.tampered,
        bubblewrap=settings.bubblewrap,
        feedback=False,
        progress=False,
        jobs=1,
    )


def grade(root: Path, settings: Settings, notebook: Path, allowance: ration.Allowance | None = None) -> dict:
    """Grade ``notebook`` with the grading core; Gradescope's results (``allowance``: whether it gets full
    feedback, None where feedback is not rationed)."""
    import nbformat

    from autograder import sandbox as sb
    from autograder.grading import cli
    from autograder.nbcourse import Course

    slug = settings.assignment
    source = root / layout.SOURCE / layout.COURSE
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="qkv-gradescope-") as tmp:  # mode 0700: root's alone
        tmp = Path(tmp)
        course_dir, submitted = tmp / "course", tmp / "class" / STUDENT / slug / f"{slug}.ipynb"
        shutil.copytree(source, course_dir)
        submitted.parent.mkdir(parents=True)
        shutil.copyfile(notebook, submitted)
        sb.check_hidden([source], settings.bubblewrap)  # the zip's own course, hidden tests in its gradebook
        [result] = cli.grade(submitted.parents[2], course_dir, tmp / "reports", options_of(settings))
        course = Course.load(course_dir)
        release = course.release(slug, slug)
        graded = nbformat.read(course.path("autograded", slug, slug, student=STUDENT), as_version=4)
    cells = gs_results.test_cells(release)
    maximum = sum(points for _, _, points in cells)
    summary = gs_results.summary_of(result.status, result.reason, result.score, maximum, len(result.waiting))
    extra = {
        "status": result.status,
        "reason": result.reason,
        "sandbox": "bubblewrap" if settings.bubblewrap else "without bubblewrap",
        "notebook_seconds": round(result.seconds, 3),
    }
    feedback = gs_results.notebook_feedback(graded)
    seconds = time.monotonic() - started
    return gs_results.build(
        cells, result.exercises, feedback, summary, settings, seconds, extra, score=result.score, allowance=allowance
    )


def not_graded(root: Path, settings: Settings, status: str, why: str) -> dict:
    """The results of a submission that could not be graded: every test zero, ``why`` as the output."""
    import nbformat

    slug = settings.assignment
    release = nbformat.read(course_path(root / layout.SOURCE / layout.COURSE, "release", slug, slug), as_version=4)
    cells = gs_results.test_cells(release)
    maximum = sum(points for _, _, points in cells)
    summary = gs_results.summary_of(status, why, 0.0, maximum, 0)
    feedback = {gid: gs_results.not_graded(why) for gid, _, _ in cells}
    return gs_results.build(cells, {}, feedback, summary, settings, 0.0, {"status": status, "reason": why})


def failed(why: str) -> dict:
    """The results when the autograder itself could not run (no settings, a broken course): zero, and why."""
    said = md.code_block(why) if "\n" in why else md.escape(why)
    return {
        "score": 0.0,
        "output": md.paragraphs(
            "The autograder could not grade this submission:",
            said,
            "This is a problem of the autograder, not of your notebook; your instructor sees this run's log.",
        ),
        "output_format": md.FORMAT,
        "extra_data": {"status": "autograder error", "reason": why},
        "tests": [],
    }


def allowance_of(root: Path, settings: Settings) -> ration.Allowance | None:
    """Whether this submission gets full feedback, from Gradescope's metadata (None: feedback is not rationed);
    the log says what the decision rests on."""
    if settings.full_feedback is None:
        return None
    metadata, problem = ration.read_metadata(root / ration.METADATA)
    got = ration.allowance(metadata, settings.full_feedback, settings.feedback_window_hours, problem)
    said = "full feedback" if got.full else f"scores only until {ration.when(got.returns)}"
    said += f" ({got.used} of {got.limit} full-feedback submissions in {got.window()} before this one)"
    if got.problem:
        said += f"; {got.problem}, so full feedback"
    if got.note:
        said += f"; {got.note}"
    print(f"run_autograder: {said}", flush=True)
    return got


def container_limit() -> int | None:
    """The memory limit of this container in bytes (cgroup v2 or v1), None where there is none or it is unknown."""
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 2**60:
            return int(text)
        return None
    return None


def check_memory(settings: Settings) -> None:
    """Say in the log when this container has less memory than the section needs (``settings.container_mb``):
    grading may then be killed, and Gradescope would say no more than 'Killed'."""
    limit = container_limit()
    if limit is not None and limit < settings.container_mb * 10**6:
        print(
            f"run_autograder: WARNING: this container has {limit / 10**6:.0f} MB of memory; grading "
            f"{settings.assignment} needs {settings.container_mb} MB (README.md in the autograder's zip): raise the "
            "memory in the assignment's Autograder Settings",
            flush=True,
        )


def write(path: Path, data: dict) -> None:
    """Write ``data`` to ``path`` atomically, after checking it is in Gradescope's format."""
    problems = gs_results.check_format(data)
    if problems:
        raise ValueError(f"the results are not in Gradescope's format: {problems}")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def main(argv=None) -> int:
    """Grade ``ROOT/submission`` into ``ROOT/results/results.json``; the exit status (1: the autograder failed)."""
    parser = argparse.ArgumentParser(prog="python -m autograder.gradescope.run", description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path, default=None, help=f"default: ${layout.ROOT_ENV}, else /autograder")
    args = parser.parse_args(argv)
    root = Path(args.root or layout.root()).resolve()
    out = root / layout.RESULTS / layout.RESULTS_FILE
    protect(
        [root / layout.SOURCE / layout.COURSE, root / layout.RESULTS, root / layout.SUBMISSION, root / ration.METADATA]
    )
    try:
        settings = Settings.read(root / layout.SOURCE / NAME)
        if settings.train_smoke:
            os.environ["QKV_TRAIN_SMOKE"] = settings.train_smoke
        else:
            os.environ.pop("QKV_TRAIN_SMOKE", None)
        mode = "in bubblewrap" if settings.bubblewrap else "without bubblewrap (gradescope.json: bubblewrap false)"
        print(f"run_autograder: {settings.assignment}, student code {mode}", flush=True)
        check_memory(settings)
        notebook, why = find_notebook(root / layout.SUBMISSION, settings.assignment)
        if notebook is None:
            status = "missing"
            data = not_graded(root, settings, status, why)
        else:
            data = grade(root, settings, notebook, allowance_of(root, settings))
            status = data["extra_data"]["status"]
        print(f"run_autograder: {status}, {data['score']:g} points in {data['execution_time']} s", flush=True)
        write(out, data)
        return 0
    except Exception as err:  # noqa: BLE001 (whatever went wrong, Gradescope gets a results.json that says it)
        traceback.print_exc(file=sys.stdout)
        why = str(err) if isinstance(err, GradingError) else f"{type(err).__name__}: {err}"
        write(out, failed(why))
        return 1


if __name__ == "__main__":
    sys.exit(main())
