"""``make gradescope``: one Gradescope autograder zip per section, ``_build/gradescope/<slug>.zip``.

``python -m autograder.gradescope.build [--section SLUG]... [--out DIR] [--course DIR] [--tests VIS]
[--output VIS] [--stdout VIS] [--bubblewrap] [--tampered keep] [--deadline S] [--memory GIB]
[--full-feedback N [--feedback-window-hours H]]``

Each zip (its layout: :mod:`autograder.gradescope.layout`) holds Gradescope's ``setup.sh`` and ``run_autograder``,
a README.md that says what to set on Gradescope for the section (:mod:`~.guide`: memory, timeout, visibility),
the grading core's code (``autograder/`` without the hidden tests' sources, ``course/``, ``lib/qkv``), the
section's nbgrader course as ``make release`` builds it (its gradebook holds the hidden tests; no source notebook,
so no solution), the pins (``constraints.txt``) and what to install, and the trained weights and data files the
section loads (found by running the section's training recipes, its front matter's ``trains:``, which load them from
the cache or train them once here), so that grading on Gradescope never trains and never downloads.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path

from autograder.gradescope import guide, layout, memory
from autograder.gradescope.settings import NAME, VISIBILITIES, Settings
from autograder.nbcourse import Course, GradingError, course_path
from course.section import Section, section
from course.section import sections as all_sections

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "_build" / "gradescope"
HERE = Path(__file__).resolve().parent
#: What grading imports beyond qkv's own dependencies (``pyproject.toml``), at constraints.txt's versions.
GRADING_PACKAGES = ("nbgrader", "pyseccomp", "jupytext", "pyyaml", "jinja2", "python-dateutil", "copydetect")
#: The Debian packages every zip installs: libseccomp, which the sandbox's seccomp filter loads (and bubblewrap for a
#: zip that grades in it). Data sets travel as files in the zip, a Debian package's too.
BASE_DEBIAN = ("libseccomp2",)
#: The folders of the grading core, from the repository, and what of them stays out of a zip.
CODE_TREES = ("autograder", "course", "lib/qkv")
LEFT_OUT = ("autograder/sections",)
#: Runs a section's training recipes with every trained weight file and data file they load recorded; prints one
#: line ``RECORDED <json>``. (``Fitted`` is what ``fit_or_load`` returns, loading or training; ``_find`` is where
#: every data loader finds its file.)
RECORDER = """
import importlib, json, sys
import qkv.data._fetch as fetch
import qkv.recipes.weights as trained
seen = {"trained": [], "data": []}
real_fitted, real_find = trained.Fitted, fetch._find
def fitted(*args, **kwargs):
    made = real_fitted(*args, **kwargs)
    seen["trained"].append(str(made.path))
    return made
def find(file, data_dir):
    place = real_find(file, data_dir)
    seen["data"].append({"relpath": file.relpath, "path": str(place[1])})
    return place
trained.Fitted, fetch._find = fitted, find
for recipe in sys.argv[1:]:
    module, _, function = recipe.partition(":")
    getattr(importlib.import_module(module), function)()
print("RECORDED " + json.dumps(seen))
"""


def recipes(slug: str) -> tuple[str, ...]:
    """The training recipes whose models the section's notebook loads (its front matter's ``trains:``)."""
    from course.section import section

    return section(slug).trains


def recorded(slug: str) -> dict:
    """``{"trained": [weight files], "data": [{"relpath", "path"}]}`` that the section's recipes load
    (nothing for a section without any); raises :class:`GradingError` when a recipe fails."""
    todo = recipes(slug)
    if not todo:
        return {"trained": [], "data": []}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))}
    done = subprocess.run([sys.executable, "-c", RECORDER, *todo], capture_output=True, text=True, cwd=ROOT, env=env)
    line = next((x for x in done.stdout.splitlines()[::-1] if x.startswith("RECORDED ")), None)
    if done.returncode or line is None:
        raise GradingError(f"the training recipes of {slug} ({', '.join(todo)}) failed:\n{done.stderr[-3000:]}")
    seen = json.loads(line.removeprefix("RECORDED "))
    seen["trained"] = sorted(set(seen["trained"]))
    seen["data"] = list({d["path"]: d for d in seen["data"]}.values())
    return seen


#: What the hidden tests may import that no distribution provides: the course's own code and the tests' helpers.
OWN_MODULES = {"qkv", "autograder", "course", "solutions", "_common", "_shared"}


def hidden_test_packages(sec: Section) -> set[str]:
    """The distributions that the hidden tests of ``sec`` import beyond the standard library and the course's own
    code (``hypothesis``, for one: a test that grades with it must find it on Gradescope); a module that no installed
    distribution provides is a :class:`GradingError` that names it."""
    import ast
    import importlib.metadata

    modules: set[str] = set()
    for path in [*sec.hidden_tests().values(), sec.hidden_common, sec.shared_helpers]:
        if not path.exists():
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                modules.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules.add(node.module.split(".")[0])
    third = sorted(m for m in modules if m not in sys.stdlib_module_names and m not in OWN_MODULES)
    provided = importlib.metadata.packages_distributions()
    unknown = [m for m in third if m not in provided]
    if unknown:
        raise GradingError(f"the hidden tests of {sec.slug} import {unknown}, which no installed distribution provides")
    return {provided[m][0] for m in third}


def requirements(sec: Section | None = None) -> list[str]:
    """What ``setup.sh`` installs with pip (constraints.txt pins each): qkv's dependencies, the grader's and what the
    hidden tests of ``sec`` import."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extra = hidden_test_packages(sec) if sec is not None else set()
    return sorted({*project["dependencies"], *GRADING_PACKAGES, *extra}, key=str.lower)


#: The Python the course pins (setup.sh installs ``python3.11``).
PYTHON = (3, 11)


def python_floor(constraints: Path = ROOT / "constraints.txt") -> str:
    """The oldest ``3.11.x`` that the ``Requires-Python`` of every pinned package installed here accepts (one
    package's floor is enough to make an older Python 3.11 fail to install the environment: soupsieve 4.1.3 asks
    for Python 3.11 at patch level 5 or later, newer than Debian 12's (patch 2) and Ubuntu 22.04's (patch 0));
    raises :class:`GradingError` when no 3.11 release would do."""
    import importlib.metadata

    from packaging.specifiers import SpecifierSet
    from packaging.utils import canonicalize_name
    from packaging.version import Version

    pinned = {}
    for line in constraints.read_text(encoding="utf-8").splitlines():
        name, sep, version = line.split("#")[0].strip().partition("==")
        if sep:
            pinned[canonicalize_name(name)] = version.strip()
    floor, why = 0, "none"
    for dist in importlib.metadata.distributions():
        name, needs = canonicalize_name(dist.metadata["Name"] or ""), dist.metadata.get("Requires-Python")
        if name not in pinned or not needs:
            continue
        accepted = SpecifierSet(needs)
        patch = next((p for p in range(100) if Version(f"{PYTHON[0]}.{PYTHON[1]}.{p}") in accepted), None)
        if patch is None:
            raise GradingError(f"{name} {pinned[name]} needs Python {needs}: no Python 3.11 installs the pins")
        if patch > floor:
            floor, why = patch, f"{name} {dist.version}: Requires-Python {needs}"
    return f"{PYTHON[0]}.{PYTHON[1]}.{floor}\n# {why}\n"


def code_files() -> list[tuple[Path, str]]:
    """``(file, name in the zip)`` of the grading core's code: :data:`CODE_TREES` less :data:`LEFT_OUT` and caches."""
    found = []
    for tree in CODE_TREES:
        for path in sorted((ROOT / tree).rglob("*")):
            rel = path.relative_to(ROOT).as_posix()
            if not path.is_file() or "__pycache__" in path.parts or path.suffix == ".pyc":
                continue
            if any(rel == out or rel.startswith(out + "/") for out in LEFT_OUT):
                continue
            found.append((path, f"{layout.CODE}/{rel}"))
    return found


def course_files(course: Path, slug: str) -> list[tuple[Path, str]]:
    """The section's nbgrader course: config, gradebook (with the hidden tests), release notebook. The course must
    hold that section alone (its gradebook would bring the other sections' hidden tests)."""
    course = Path(course).resolve()
    held = Course.load(course).notebooks
    if held != {slug: [slug]}:
        raise GradingError(f"{course} holds {sorted(held)}, not the section {slug} alone: build a course of it only")
    release = course_path(course, "release", slug, slug)
    return [
        (course / "nbgrader_config.py", f"{layout.COURSE}/nbgrader_config.py"),
        (course / "gradebook.db", f"{layout.COURSE}/gradebook.db"),
        (release, f"{layout.COURSE}/{release.relative_to(course).as_posix()}"),
    ]


def deadline_of(sec: Section, settings: Settings) -> float:
    """The seconds a notebook of ``sec`` may run: the settings', else the section's ``grading:`` block's, else the
    grader's default (as ``make grade``)."""
    from autograder.sandbox import Limits

    return settings.deadline or sec.limits.get("deadline") or Limits().deadline


def build(sec: Section, settings: Settings, out: Path = OUT, course: Path | None = None) -> Path:
    """Write ``out/<slug>.zip`` for the section ``sec``; returns its path. ``course``: a built nbgrader course of
    that section alone (default: one built now, as ``make release`` does)."""
    slug = sec.slug
    with tempfile.TemporaryDirectory(prefix="qkv-gradescope-build-") as tmp:
        if course is None:
            from autograder import release

            course = Path(tmp) / "course"
            release.release(course, [sec])
        files = code_files() + course_files(Path(course), slug)
        seen = recorded(slug)
        debian = list(BASE_DEBIAN) + (["bubblewrap"] if settings.bubblewrap else [])
        files += [(Path(p), f"{layout.TRAINED}/{Path(p).name}") for p in seen["trained"]]
        # every data file in the zip, a system package's too (Ubuntu may not have the package Debian has)
        files += [(Path(data["path"]), f"{layout.DATA}/{data['relpath']}") for data in seen["data"]]
        texts = {
            NAME: settings.to_json(),
            layout.README: guide.readme(settings, deadline_of(sec, settings)),
            layout.REQUIREMENTS: "\n".join(requirements(sec)) + "\n",
            layout.PYTHON_VERSION: python_floor(),
            layout.DEBIAN: "# Debian packages setup.sh installs for this section\n"
            + "\n".join(sorted(set(debian)))
            + "\n",
        }
        out.mkdir(parents=True, exist_ok=True)
        target = out / f"{slug}.zip"
        partial = target.with_name(target.name + ".part")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
            for script in (layout.SETUP, layout.RUN):
                info = zipfile.ZipInfo(script)
                info.external_attr, info.compress_type = 0o100755 << 16, zipfile.ZIP_DEFLATED
                archive.writestr(info, (HERE / script).read_text(encoding="utf-8"))
            archive.write(ROOT / "constraints.txt", layout.CONSTRAINTS)
            for name, text in texts.items():
                info = zipfile.ZipInfo(name)
                info.external_attr, info.compress_type = 0o100644 << 16, zipfile.ZIP_DEFLATED
                archive.writestr(info, text)
            for path, name in files:
                archive.write(path, name)
            archive.writestr(f"{layout.TRAINED}/", "")  # always there: run_autograder points the weights' cache at it
        os.replace(partial, target)
    return target


def main(argv=None) -> int:
    """The command line; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m autograder.gradescope.build", description=__doc__.split("\n")[0])
    parser.add_argument("--section", action="append", metavar="SLUG", help="this section only (repeatable)")
    parser.add_argument("--out", type=Path, default=OUT, help=f"where the zips go (default: {OUT.relative_to(ROOT)})")
    parser.add_argument("--course", type=Path, default=None, help="a built nbgrader course of the one --section")
    default = Settings("x")
    for field, what in (("tests", "each exercise's name and score"), ("output", "its feedback"), ("stdout", "the log")):
        parser.add_argument(
            f"--{field}", choices=VISIBILITIES, default=getattr(default, field), help=f"when students see {what}"
        )
    parser.add_argument("--bubblewrap", action="store_true", help="grade in bubblewrap (needs user namespaces)")
    parser.add_argument("--tampered", choices=("zero", "keep"), default="zero", help="as make grade --tampered")
    parser.add_argument("--deadline", type=float, default=None, help="seconds per notebook, for every section")
    parser.add_argument("--memory", type=float, default=None, help="GiB of address space, for every section")
    parser.add_argument(
        "--full-feedback",
        type=int,
        default=None,
        metavar="N",
        help="full feedback for a student's first N submissions in each window, scores only after (needs --output "
        "visible)",
    )
    parser.add_argument(
        "--feedback-window-hours",
        type=float,
        default=default.feedback_window_hours,
        metavar="H",
        help=f"the window of --full-feedback, in hours (default {default.feedback_window_hours:g})",
    )
    args = parser.parse_args(argv)
    try:
        chosen = [section(slug) for slug in args.section] if args.section else all_sections()
    except KeyError as err:
        parser.error(str(err.args[0]))
    if args.course is not None and len(chosen) != 1:
        parser.error("--course goes with one --section")
    smoke = os.environ.get("QKV_TRAIN_SMOKE", "").strip()
    if smoke and smoke != "0":
        print(f"gradescope: QKV_TRAIN_SMOKE={smoke}: the zips carry smoke-trained weights, for tests only", flush=True)
    try:
        for sec in chosen:
            settings = Settings(
                sec.slug,
                tests=args.tests,
                output=args.output,
                stdout=args.stdout,
                bubblewrap=args.bubblewrap,
                tampered=args.tampered,
                deadline=args.deadline,
                memory_gib=args.memory,
                train_smoke="" if smoke in ("", "0") else smoke,
                full_feedback=args.full_feedback,
                feedback_window_hours=args.feedback_window_hours,
                container_mb=memory.container_mb(sec.slug),
            )
            path = build(sec, settings, args.out, args.course)
            print(f"[gradescope] {path} ({path.stat().st_size / 2**20:.1f} MiB)", flush=True)
    except GradingError as err:
        print(f"gradescope: {err}", file=sys.stderr)
        return 2
    print("Upload a zip as the programming assignment's autograder (README.md, 'Grading on Gradescope').")
    return 0


if __name__ == "__main__":
    sys.exit(main())
