"""Every marker and name that the grading sandbox and its coordinator share: the only place they are spelled.

Standard library only: the sandbox side (this package) and the coordinator side (``autograder.grading``,
``autograder.sandbox``), the assembler and the rubrics all import it, and an import-linter contract
(``pyproject.toml``) keeps this package from importing anything of the repository but ``qkv``.

The wire format is newline-delimited JSON: :func:`send` writes one message; the zygote reads the parent's with
descriptors attached (``SCM_RIGHTS``), and everything a child sends is untrusted data to the parent.
"""

from __future__ import annotations

import json
import socket

#: nbgrader's delimiter words (``ClearSolutions``, ``ClearHiddenTests`` in ``autograder/nbgrader_config.py``).
SOLUTION_WORDS = ("BEGIN SOLUTION", "END SOLUTION")
HIDDEN_WORDS = ("BEGIN HIDDEN TESTS", "END HIDDEN TESTS")
#: The markers as lines of a cell: around a model answer, and around a test cell's hidden part (the gradebook's
#: copy of a test cell keeps the hidden markers; the sandbox runs what follows ``BEGIN_HIDDEN`` as hidden).
BEGIN_SOLUTION, END_SOLUTION = (f"### {w}" for w in SOLUTION_WORDS)
BEGIN_HIDDEN, END_HIDDEN = (f"### {w}" for w in HIDDEN_WORDS)
#: nbgrader's stub text for a cleared code answer, and for a cleared written answer.
CODE_STUB = "# YOUR CODE HERE\nraise NotImplementedError()"
TEXT_STUB = "YOUR ANSWER HERE"
#: The ``ename`` of the error output that reports a change to what the hidden tests rely on; the coordinator gives a
#: notebook with one the status ``tampered``.
TAMPERED = "TamperingDetected"

#: Where the sandbox sees this package (bound read-only), and the module it runs: ``python -m sandboxed``.
GRADER_IN_SANDBOX = "/opt/qkv-grader"
PACKAGE = "sandboxed"

#: The parent's requests to the zygote (the ``op`` of a message).
OP_PREFIX, OP_JOB = "prefix", "job"
#: The zygote's option that names its writable folder when no bubblewrap contains it (``autograder.sandbox``'s
#: mode without bubblewrap): that folder replaces ``/tmp`` and ``/dev/shm``, and the child's filter refuses more.
SCRATCH_OPTION = "--scratch"


def send(sock: socket.socket, message: dict, dumps=json.dumps) -> None:
    """Write ``message`` as one JSON line (``dumps`` lets the sandbox pass a copy bound before student code)."""
    sock.sendall((dumps(message) + "\n").encode("utf-8", "replace"))
