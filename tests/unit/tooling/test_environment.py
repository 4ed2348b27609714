"""The pinned environment: constraints.txt (pip, used by make) and environment.yml (conda, Binder) agree."""

import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from publish.envfile import pins, render

ROOT = Path(__file__).resolve().parents[3]
CONSTRAINTS = (ROOT / "constraints.txt").read_text()


def test_environment_yml_is_what_the_generator_writes():
    text = (ROOT / "environment.yml").read_text()
    assert text == render(), "regenerate with: python -m publish.envfile"
    env = yaml.safe_load(text)
    assert "python=3.11" in env["dependencies"] and "pip" in env["dependencies"]
    makefile_python = re.search(r"^PYTHON \?= python(\S+)$", (ROOT / "Makefile").read_text(), re.M).group(1)
    assert f"python={makefile_python}" in env["dependencies"], "environment.yml and make must use the same Python"


# pip's own parser of requirements files, run in a child process: importing pip's internals here would import the
# standard library's distutils into the test process, which setuptools (imported later, e.g. by nbgrader) rejects.
_PIP_READS = """
import json, sys
from pip._internal.network.session import PipSession
from pip._internal.req.req_file import parse_requirements
lines = parse_requirements(sys.argv[1], session=PipSession())
print(json.dumps([[r.requirement, r.constraint, r.is_editable] for r in lines]))
"""


def _pip_reads(requirements: Path) -> list[tuple[str, bool, bool]]:
    """``(requirement, is a constraint, is editable)`` of every line pip reads from ``requirements`` (nested too)."""
    result = subprocess.run([sys.executable, "-c", _PIP_READS, str(requirements)], capture_output=True, text=True)
    assert result.returncode == 0, f"pip could not read {requirements.name}: {result.stderr}"
    return [tuple(line) for line in json.loads(result.stdout)]


def test_pip_reads_every_pin_of_constraints_txt_from_environment_yml(tmp_path):
    """conda hands the pip: lines to pip as a requirements file written beside environment.yml (its folder is also
    pip's working directory); pip must then see constraints.txt's pins, and the course installed editable."""
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_lines = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    folder = tmp_path / "checkout"  # what conda sees: environment.yml and constraints.txt side by side
    folder.mkdir()
    shutil.copy(ROOT / "environment.yml", folder)
    shutil.copy(ROOT / "constraints.txt", folder)
    requirements = folder / "condaenv.test.requirements.txt"
    requirements.write_text("\n".join(pip_lines))
    parsed = _pip_reads(requirements)
    constrained = pins("\n".join(req for req, constraint, _ in parsed if constraint))
    assert constrained == pins(CONSTRAINTS), "environment.yml must install exactly constraints.txt's versions"
    installs = [(req, editable) for req, constraint, editable in parsed if not constraint]
    assert installs == [(".[dev]", True)], f"environment.yml should install the course editable with [dev]: {installs}"
    # Nothing else pins a version: constraints.txt is the one list of versions.
    assert not [line for line in pip_lines if "==" in line], "pin versions in constraints.txt, not in environment.yml"


def _name(requirement: str) -> str:
    return re.split(r"[<>=\[;\s]", requirement, maxsplit=1)[0].strip().lower().replace("_", "-")


def _extra(name: str, extras: dict, project: str = "qkv") -> set[str]:
    """The names of what ``pip install '.[name]'`` installs directly, the extras it names of its own project
    (``qkv[course]``) followed."""
    out: set[str] = set()
    for requirement in extras[name]:
        if _name(requirement) == project:
            for inner in re.search(r"\[(.*)\]", requirement).group(1).split(","):
                out |= _extra(inner.strip(), extras, project)
        else:
            out.add(_name(requirement))
    return out


def test_every_direct_dependency_is_pinned():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    direct = {_name(r) for r in project["dependencies"]} | {d for extra in extras for d in _extra(extra, extras)}
    pinned = pins(CONSTRAINTS)
    for name in sorted(direct):
        assert name in pinned, f"{name} is a dependency but has no exact pin in constraints.txt"


def test_a_students_extra_installs_the_course_without_the_graders_tools():
    """The public tree installs ``.[course]`` (its Makefile, README and environment.yml): the book, JupyterLab and
    nbgrader, never the cluster, the PostgreSQL driver, the sandbox's seccomp binding or the similarity report;
    ``.[dev]``, the instructors' repository's, installs every extra."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    course = _extra("course", extras)
    assert {"jupyter-book", "jupyterlab", "nbgrader"} <= course
    assert not course & {"distributed", "psycopg", "pyseccomp", "copydetect", "pytest", "playwright"}, course
    assert _extra("dev", extras) == {d for name in extras if name != "dev" for d in _extra(name, extras)}
    from publish import envfile

    assert "-e .[course]" in envfile.render(envfile.PUBLIC_PIP_LINES)
    for template in ("Makefile", "README.md"):
        text = (ROOT / "publish" / "public" / template).read_text()
        assert "-e '.[course]'" in text and ".[dev]" not in text, f"publish/public/{template} installs another extra"


def test_required_pins():
    pinned = pins(CONSTRAINTS)
    assert pinned["torch"] == "2.13.0"
    assert pinned["jupyter-book"].startswith("1."), "jupyter-book must stay below 2 (v2 has no _config.yml)"
    assert "torchvision" not in pinned, "torchvision does not import beside the CPU torch build"


def _make_clean(tmp_path, layout):
    for name in layout:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    result = subprocess.run(
        ["make", "-f", str(ROOT / "Makefile"), "clean"], cwd=tmp_path, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    return sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()), result.stdout


@pytest.mark.skipif(shutil.which("make") is None, reason="GNU make is not installed")
def test_make_clean_keeps_a_course_that_holds_grades(tmp_path):
    graded = ["_build/course/gradebook.db", "_build/course/autograded/ann/a/a.ipynb", "_build/student/page.html"]
    left, said = _make_clean(tmp_path / "graded", graded)
    assert left == sorted(graded[:2]) and "gradebook.db holds your class's grades" in said
    left, _ = _make_clean(tmp_path / "fresh", ["_build/course/release/a/a.ipynb", "_build/student/page.html"])
    assert left == []  # no gradebook yet: everything goes
