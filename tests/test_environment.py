"""The pinned environment: constraints.txt (pip, used by make) and environment.yml (conda) agree."""

import tomllib
from pathlib import Path

import yaml

from autograder.envfile import pins, render

ROOT = Path(__file__).resolve().parent.parent
CONSTRAINTS = (ROOT / "constraints.txt").read_text()


def test_environment_yml_pins_exactly_the_constraints():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    assert pins("\n".join(pip_section)) == pins(CONSTRAINTS), "regenerate with: python -m autograder.envfile"
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
