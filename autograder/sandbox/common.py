"""What every part of the grading sandbox shares: its places, what it preloads, its limits, its results, its errors."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from autograder.sandboxed import protocol

#: The package that runs inside the sandbox (bound read-only as a folder, run with ``python -m``).
SANDBOXED = Path(__file__).resolve().parent.parent / "sandboxed"


SANDBOXED_IN_SANDBOX = f"{protocol.GRADER_IN_SANDBOX}/{protocol.PACKAGE}"


#: Where the folder of trained weights appears inside the sandbox, whatever its place on the host (the test suite
#: keeps its own under the repository's _build/, which student code must not learn of or see into).
TRAINED_IN_SANDBOX = "/opt/qkv-trained"


#: Imported once per sandbox, before any student code (what the course's notebooks import). ``torch._dynamo`` and
#: ``sympy`` are what PyTorch imports on the first arithmetic with 'meta' tensors, which the hidden device checks
#: use: about 1.3-5 s per submission (per forked child) when not preloaded, 0.01 s when they are.
PRELOAD = (
    "numpy",
    "torch",
    "torch.nn",
    "torch.nn.functional",
    "torch._dynamo",
    "sympy",
    "matplotlib",
    "matplotlib.pyplot",
    "qkv",
)


ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "fonts", "nsswitch.conf", "passwd", "group")


#: The user that runs student code where no bubblewrap contains the sandbox (root starts it so).
SANDBOX_USER_ENV, SANDBOX_USER = "QKV_SANDBOX_USER", "nobody"


INSTALL_HINT = (
    "the grader runs student code only inside a bubblewrap sandbox, and `bwrap` was not found. "
    "Install it (Debian/Ubuntu: sudo apt-get install bubblewrap; or run `bash .ci/system-deps.sh` as root) "
    "and run the command again. Nothing was graded."
)


GiB, MiB = 1 << 30, 1 << 20


class SandboxUnavailable(RuntimeError):
    """bubblewrap is missing or cannot create a sandbox on this machine; the message says what to do."""


class PrefixUnsafe(RuntimeError):
    """The instructor's prefix cannot be run once for all (it left threads or too many files behind)."""


@dataclasses.dataclass(frozen=True)
class Limits:
    """What one submission may use. ``deadline`` is wall-clock seconds for the whole notebook."""

    deadline: float = 120.0
    memory: int = 3 * GiB
    cpu: int | None = None  # CPU seconds; None: twice the deadline
    fsize: int = 64 * MiB
    nproc: int = 64
    nofile: int = 1024
    tmpfs: int = 256 * MiB
    max_lines: int = 1000  # per cell, as nbgrader's LimitOutput
    max_chars: int = 100_000  # per cell
    max_result_bytes: int = 32 * MiB  # all a child may send back
    grace: float = 30.0  # the backstop waits this much longer than the deadline

    def child(self) -> dict:
        """The resource limits the runner sets on each child (see :func:`autograder.sandboxed.cells.set_limits`)."""
        cpu = self.cpu if self.cpu is not None else int(2 * self.deadline) + 5
        return {"memory": self.memory, "cpu": cpu, "fsize": self.fsize, "nproc": self.nproc, "nofile": self.nofile}


@dataclasses.dataclass
class RunResult:
    """What came back from one notebook run.

    ``cells`` maps a cell's index to ``(execution_count, outputs)`` for every
    cell the child finished; ``how`` is ``done`` (every cell ran), ``timeout``
    (the deadline passed; ``running`` is the cell it was in) or ``died`` (the
    child or the sandbox ended early; ``detail`` says how).
    """

    cells: dict[int, tuple[int, list]] = dataclasses.field(default_factory=dict)
    how: str = "died"
    detail: str = ""
    running: int | None = None
    seconds: float = 0.0
    no_fork_filter: bool | None = None
