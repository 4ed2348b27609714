"""Write environment.yml, the course's environment for conda (and for Binder), from one rule: install constraints.txt.

``python -m publish.envfile`` writes it; ``tests/unit/tooling/test_environment.py`` checks that it is exactly what this
module renders, and that pip, reading its ``pip:`` section as conda hands it over, gets every pin of constraints.txt.

Why environment.yml does not repeat the pins. It used to copy every ``name==version`` line of constraints.txt into
its ``pip:`` section. It need not: conda passes the ``pip:`` lines to pip verbatim, as a requirements file, and a
requirements file may name a constraints file. conda writes that file (``condaenv.*.requirements.txt``) into the
folder of environment.yml and runs ``pip install -U -r`` with that folder as the working directory
(``conda/env/installers/pip.py``); pip resolves ``-c constraints.txt`` relative to the requirements file and
``-e .[dev]`` relative to the working directory, so both name files beside environment.yml, at the repository's
root. The ``pip:`` section is therefore two lines, ``-c constraints.txt`` and ``-e .[dev]``, and pip installs the
same versions as make's ``pip install -c constraints.txt -e '.[dev]'`` (pip itself stays conda's: a constraint
never upgrades it). Recent mamba and micromamba write the requirements file to the same place
(mamba-org/mamba#2728, #2880), and Binder's repo2docker treats a ``-c`` line as a local file and installs the
``pip:`` section only once the repository is in the image.

Two limits. The folder of environment.yml must be writable: otherwise conda writes the requirements file to a
temporary folder, where ``-c constraints.txt`` is not found. And environment.yml must be used from a checkout, not
from a URL, as ``-e .[dev]`` already required. micromamba 0.24 and older (mamba-org/mamba#1726) wrote the
requirements file to /tmp; with those, create the environment, then run ``pip install -c constraints.txt -e
'.[dev]'`` in it.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PIN = re.compile(r"^([A-Za-z0-9_.\-\[\]]+)==([^\s;#]+)")
PYTHON = "3.11"  # the Makefile's PYTHON (python3.11); constraints.txt pins packages, not the interpreter
PIP_LINES = ("-c constraints.txt", "-e .[dev]")
#: The public repository's environment (Binder, a student with conda): the student's extra, not the grader's tools.
PUBLIC_PIP_LINES = ("-c constraints.txt", "-e .[course]")


def pins(text: str) -> dict[str, str]:
    """``name -> version`` of every ``name==version`` line (names normalised as pip does)."""
    out = {}
    for line in text.splitlines():
        m = PIN.match(line.strip().removeprefix("- "))
        if m:
            out[re.sub(r"[-_.]+", "-", m.group(1)).lower()] = m.group(2)
    return out


def render(pip_lines: tuple[str, ...] = PIP_LINES) -> str:
    """The text of environment.yml (the public repository's: ``render(PUBLIC_PIP_LINES)``)."""
    lines = [
        "# Conda environment of the course: Python, then pip installs constraints.txt's exact versions (the same",
        "# command as make's bootstrap). Written by `python -m publish.envfile`;",
        "# tests/unit/tooling/test_environment.py checks it.",
        "#   conda env create -f environment.yml && conda activate qkv-course",
        "name: qkv-course",
        "channels:",
        "  - conda-forge",
        "dependencies:",
        f"  - python={PYTHON}",
        "  - pip",
        "  - pip:",
        *(f"      - {line}" for line in pip_lines),
    ]
    return "\n".join(lines) + "\n"


def main():
    (ROOT / "environment.yml").write_text(render(), encoding="utf-8")


if __name__ == "__main__":
    main()
