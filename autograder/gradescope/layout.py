"""The names inside a Gradescope autograder zip, once (``setup.sh`` and ``run_autograder`` spell the same ones;
``tests/grading/test_gradescope.py`` checks that they do).

Gradescope unpacks the zip into ``$AUTOGRADER_ROOT/source`` (``/autograder/source``), puts the student's files in
``submission/`` and reads ``results/results.json``; ``setup.sh`` makes the virtual environment ``venv/`` beside
them::

    setup.sh, run_autograder     Gradescope's two scripts
    README.md                    what to set on Gradescope for the section, TORCH_INDEX_URL (gradescope.guide)
    gradescope.json              the instructor's settings (autograder.gradescope.settings)
    requirements.txt             what grading imports; constraints.txt pins every version
    python-version.txt           the oldest Python 3.11 that every pinned package accepts (setup.sh checks it)
    debian-packages.txt          the Debian packages the section needs (libseccomp2, a data set's package...)
    code/                        the grading core: autograder/ (without the hidden tests' sources), course/, lib/qkv
    course/                      the section's nbgrader course: nbgrader_config.py, gradebook.db (its hidden tests),
                                 release/SLUG/SLUG.ipynb; no source notebook, so no solution
    trained/                     the trained weights the section loads (grading never trains)
    data/                        the data files the section reads, where no Debian package brings them
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT_ENV, DEFAULT_ROOT = "AUTOGRADER_ROOT", "/autograder"
SETUP, RUN, README = "setup.sh", "run_autograder", "README.md"
REQUIREMENTS, CONSTRAINTS, DEBIAN = "requirements.txt", "constraints.txt", "debian-packages.txt"
PYTHON_VERSION = "python-version.txt"
CODE, COURSE, TRAINED, DATA = "code", "course", "trained", "data"
SOURCE, SUBMISSION, RESULTS, VENV = "source", "submission", "results", "venv"
RESULTS_FILE = "results.json"


def root() -> Path:
    """Gradescope's folder: ``$AUTOGRADER_ROOT``, else ``/autograder``."""
    return Path(os.environ.get(ROOT_ENV) or DEFAULT_ROOT)
