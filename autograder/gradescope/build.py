"""``make gradescope``: one Gradescope autograder zip per section, ``_build/gradescope/<slug>.zip``.

``python -m autograder.gradescope.build [--section SLUG]... [--out DIR] [--course DIR] [--tests VIS]
[--output VIS] [--stdout VIS] [--bubblewrap] [--tampered keep] [--deadline S] [--memory GIB]``

Each zip (its layout: :mod:`autograder.gradescope.layout`) holds Gradescope's ``setup.sh`` and ``run_autograder``,
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

from autograder.gradescope import layout
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


def requirements() -> list[str]:
    """What ``setup.sh`` installs with pip (constraints.txt pins each): qkv's dependencies and the grader's."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return sorted({*project["dependencies"], *GRADING_PACKAGES})


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
            layout.REQUIREMENTS: "\n".join(requirements()) + "\n",
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
