"""``python -m autograder.grade``: the grading command (:mod:`autograder.grading`, whose modules hold the code)."""

from __future__ import annotations

import sys

from autograder.grading.cli import grade, main

__all__ = ["grade", "main"]

if __name__ == "__main__":
    sys.exit(main())
