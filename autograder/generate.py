"""``nbgrader generate_assignment`` for several assignments in one process (``python -m autograder.generate A B ...``).

Run in the course folder. Each ``nbgrader`` command starts a Python, imports nbgrader and opens the gradebook, which
takes most of a release's time; this module does that once and then calls nbgrader's own Python API
(``NbGraderAPI.generate_assignment``, what the formgrader calls) for every assignment, with the course's
``nbgrader_config.py``. It exits with status 1 at the first assignment that fails, printing nbgrader's log and error.
"""

from __future__ import annotations

import sys


def main(argv=None) -> int:
    assignments = sys.argv[1:] if argv is None else list(argv)
    if not assignments:
        print("usage: python -m autograder.generate ASSIGNMENT [ASSIGNMENT ...] (in the course folder)")
        return 2
    from nbgrader.apps import NbGraderAPI
    from nbgrader.apps.nbgraderapp import NbGraderApp

    app = NbGraderApp()
    app.initialize(["--log-level=WARN"])  # reads nbgrader_config.py from this folder, as the nbgrader command does
    api = NbGraderAPI(app.coursedir, parent=app)
    for assignment in assignments:
        result = api.generate_assignment(assignment, force=True, create=True)
        if not result["success"]:
            print(
                f"nbgrader generate_assignment {assignment} failed:\n{result.get('log', '')}{result.get('error', '')}"
            )
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
