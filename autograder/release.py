"""The nbgrader course, generated from the repository (``make release``).

``_build/course/source/<slug>/<slug>.ipynb`` is each section assembled by
:mod:`autograder.assemble` (book + solutions + hidden tests, inside nbgrader's
markers); ``nbgrader generate_assignment`` then writes
``_build/course/release/<slug>/<slug>.ipynb``, which must equal the book's
notebook cell for cell (``tests/grading/test_release.py``).

Each section's source folder also receives the course's policy for coding assistants (``AGENTS.md`` and its
copies, :mod:`course.assistants`, as course.toml chooses), which ``nbgrader generate_assignment`` copies into
the release folder beside the notebook, so that it reaches students with it (nbgrader's exchange hands them the
whole folder).

``make release`` also makes sure the trained models that sections show are in the trained-weights cache
(each section's front matter's ``trains:``, :attr:`course.section.Section.trains`): the grader binds that
folder read-only into its sandbox and never trains, so that
every submission loads the weights in a second instead of training for a minute.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

from autograder import assemble
from autograder.nbcourse import course_path
from course import assistants
from course import notebooks as nbs
from course.section import sections as all_sections
from course.student_notebook import differences, student_notebook

ROOT = nbs.ROOT
COURSE = ROOT / "_build" / "course"


def nbgrader_bin() -> str:
    return str(Path(sys.executable).with_name("nbgrader"))


def venv_env() -> dict:
    """The environment with this interpreter's bin folder first on PATH (nbgrader calls alembic by name)."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def write_sources(course: Path = COURSE, sections=None) -> list[Path]:
    """Assemble every section's nbgrader source notebook, with the policy for coding assistants beside it; return
    the notebooks' paths."""
    policy = assistants.chosen()  # before anything is written: a bad course.toml stops the release
    course.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(ROOT / "autograder" / "nbgrader_config.py", course / "nbgrader_config.py")
    paths = []
    for section in sections or all_sections():
        # From the student's notebook (its cell ids and metadata), so that nbgrader's release is that notebook.
        nb = assemble.solved(student_notebook(section), section.slug, markers=True, hidden=True)
        path = course_path(course, "source", section.assignment, section.slug)
        nbs.write_if_changed(nb, path, fmt="ipynb")
        assistants.write(path.parent, policy)
        paths.append(path)
    return paths


def release(course: Path = COURSE, sections=None) -> list[Path]:
    """Write the sources and run ``nbgrader generate_assignment`` for every section (all of them in one process,
    :mod:`autograder.generate`)."""
    sections = sections or all_sections()
    write_sources(course, sections)
    cmd = [sys.executable, "-m", "autograder.generate", *(section.assignment for section in sections)]
    env = venv_env()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(ROOT), env.get("PYTHONPATH"))))  # run from the course
    result = subprocess.run(cmd, cwd=course, capture_output=True, text=True, env=env)
    if result.returncode:
        raise SystemExit(f"{result.stdout}{result.stderr}")
    paths = [course_path(course, "release", section.assignment, section.slug) for section in sections]
    for section, path in zip(sections, paths):
        check_release(section, path)
        check_assistant_files(path.parent)
    return paths


def check_release(section, path: Path) -> None:
    """Stop unless nbgrader's release of ``section`` is the student's notebook that every other door gives
    (:func:`course.student_notebook.student_notebook`): a student from any door must be graded alike."""
    import nbformat

    found = differences(student_notebook(section), nbformat.read(path, as_version=4))
    if found:
        raise SystemExit(
            f"[release] {path} is not the student's notebook of {section.slug} that the book, Colab and "
            f"make notebooks give: {'; '.join(found)}. Every door must give one notebook "
            "(course/student_notebook.py); something between the book and nbgrader's release changed a cell."
        )


def check_assistant_files(folder: Path) -> None:
    """Stop unless nbgrader copied the policy for coding assistants from the source folder into the release
    ``folder`` (a setting of nbgrader's that leaves out ``.md`` files would keep it from students)."""
    missing = [name for name in assistants.FILE_NAMES if not (folder / name).is_file()]
    if missing:
        raise SystemExit(
            f"[release] {folder} lacks {', '.join(missing)}: nbgrader generate_assignment did not copy the policy "
            "for coding assistants from the source folder. Check CourseDirectory.include and CourseDirectory.ignore "
            "in the course's nbgrader_config_local.py: they must let .md files through."
        )


def warm_trained(sections=None) -> list:
    """Train (or load) the models of ``sections`` (default: every section), their front matter's ``trains:``
    (``"module:function"``), so that the grader, which must not train, finds their weights; returns what each
    recipe returned."""
    import importlib

    out = []
    for section in sections or all_sections():
        for recipe in section.trains:
            module, _, function = recipe.partition(":")
            out.append(getattr(importlib.import_module(module), function)())
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description="Generate the nbgrader course and release every section.")
    parser.add_argument("--course", type=Path, default=COURSE)
    parser.add_argument(
        "--no-warm", action="store_true", help="do not train or load the models the sections show (their trains:)"
    )
    parser.add_argument(
        "--only",
        action="append",
        metavar="SLUG",
        help="release only this section (repeat for several); default: every section of _toc.yml",
    )
    args = parser.parse_args(argv)
    try:
        policy = assistants.chosen()
    except assistants.PolicyError as err:
        parser.exit(2, f"[release] {err}\n")
    chosen = None
    if args.only:
        known = {s.slug: s for s in all_sections()}
        unknown = [slug for slug in args.only if slug not in known]
        if unknown:
            parser.error(f"unknown section(s) {', '.join(unknown)}; the book has {', '.join(known)}")
        chosen = [known[slug] for slug in args.only]
    for path in release(args.course, chosen):
        print(f"[release] {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    files = " and ".join(assistants.FILE_NAMES)
    print(f"[release] coding assistants: course.toml's {policy!r} policy, as {files} in every release folder")
    if not args.no_warm:
        warm_trained(chosen)


if __name__ == "__main__":
    main()
