"""The pinned environment: constraints.txt (pip, used by make) and environment.yml (conda) agree."""

import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

from publish.envfile import pins, render

ROOT = Path(__file__).resolve().parent.parent
CONSTRAINTS = (ROOT / "constraints.txt").read_text()


def test_environment_yml_pins_exactly_the_constraints():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    assert pins("\n".join(pip_section)) == pins(CONSTRAINTS), "regenerate with: python -m publish.envfile"
    assert "python=3.11" in env["dependencies"]
    assert (ROOT / "environment.yml").read_text() == render(CONSTRAINTS)


def test_every_direct_dependency_is_pinned():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    direct = project["dependencies"] + project["optional-dependencies"]["dev"]
    pinned = pins(CONSTRAINTS)
    for requirement in direct:
        name = requirement.split("<")[0].split(">")[0].split("=")[0].split("[")[0].strip().lower().replace("_", "-")
        assert name in pinned, f"{name} is a dependency but has no exact pin in constraints.txt"


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
