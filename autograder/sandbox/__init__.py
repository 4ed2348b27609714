"""The grading sandbox: bubblewrap around a zygote that runs each submission in a fresh child.

Student code never runs in the grading process. :class:`Sandbox` starts
the package ``autograder/sandboxed`` under Debian's ``bwrap`` with:

* no network (``--unshare-all`` without ``--share-net``), new user, PID, IPC,
  UTS and cgroup namespaces, ``--die-with-parent``, ``--new-session``, no
  further user namespaces;
* a read-only root made only of what Python needs: ``/usr`` and its
  ``/lib*``, bits of ``/etc``, the interpreter's prefix and the venv, the
  repository's ``lib/`` (for ``qkv``), the data folder and the folder of trained weights (``qkv.recipes.weights``,
  which a section's notebook loads instead of training); nothing else of the
  repository (no ``_build/`` course, gradebook, ``solutions/``,
  ``autograder/sections``) and no submission exists in there;
* small private tmpfs mounts for ``/tmp`` (HOME) and ``/dev/shm``, wiped between
  submissions;
* per-child limits set by the sandboxed package: address space, CPU time, file size,
  open files, processes (``RLIMIT_NPROC``, which the kernel ignores for root;
  the seccomp filter refuses new processes for everyone), and the wall-clock
  deadline, enforced by the zygote and, as a backstop, by this process, which
  kills the whole sandbox.

The notebook to run travels over a socket, so no file of it exists in the
sandbox. A sandbox is reused from one submission to the next (importing
PyTorch once is what makes grading fast), but every submission runs in a
child forked from a zygote that never held a submission, and every process
it left behind is killed before the next one starts. The zygote also runs,
once, a notebook's *prefix*: the instructor's cells before the first answer
cell, the same in every rebuilt submission; each child starts from their
state, as if it had run them itself. See :mod:`autograder.sandboxed` for the
other side of the protocol.

**Without bubblewrap** (``Sandbox(bubblewrap=False)``, ``make grade … --no-bubblewrap``, the Gradescope
autograder), for machines where bubblewrap cannot make a sandbox (a container without user namespaces): the same
zygote, Guard, seccomp filter and limits, in a plain process that this process (root) starts as the unprivileged
user :func:`sandbox_user` (``nobody``, or ``$QKV_SANDBOX_USER``), in a process group of its own, with a private
scratch folder (mode 0700, its owner that user) as its only writable place. What the namespaces and read-only
binds gave is then given by the file permissions and by the child's seccomp filter, which also refuses every
socket, io_uring, new sessions and process groups, and new namespaces (``sandboxed.seccomp``). It is used only
when asked for, never as a fallback: :func:`check_available` and :func:`check_hidden` refuse to start unless this
process is root, the filter can be built, the interpreter is readable by that user, and the course, the
submissions and the repository's private parts (hidden tests, solutions, ``.git``) are not. README.md, "What
grading promises against a dishonest student", says what still holds.

What a sandbox cannot do: student code and the tests share one Python process
(as in a Jupyter kernel under stock nbgrader), so a determined student can
still forge the outputs of their own notebook; the hidden tests and
``qkv.checks`` make that hard, and it cannot touch anyone else's grade.


The package, by job: :mod:`~autograder.sandbox.paths` (what is seen and what is hidden),
:mod:`~autograder.sandbox.launch` (the command and environment that start the zygote),
:mod:`~autograder.sandbox.client` (:class:`Sandbox`, the grader's side), :mod:`~autograder.sandbox.preflight`
(whether a sandbox can be made here) and :mod:`~autograder.sandbox.common` (constants, limits, results, errors).
Their public names are all here.
"""

from autograder.sandbox.client import Sandbox
from autograder.sandbox.common import (
    ETC,
    INSTALL_HINT,
    PRELOAD,
    SANDBOX_USER,
    SANDBOX_USER_ENV,
    SANDBOXED,
    SANDBOXED_IN_SANDBOX,
    TRAINED_IN_SANDBOX,
    GiB,
    Limits,
    MiB,
    PrefixUnsafe,
    RunResult,
    SandboxUnavailable,
)
from autograder.sandbox.launch import bwrap_args, bwrap_path, direct_args, sandbox_env
from autograder.sandbox.paths import (
    check_hidden,
    data_paths,
    needed_paths,
    private_paths,
    python_paths,
    qkv_folder,
    reachable,
    sandbox_user,
    trained_paths,
    visible_paths,
)
from autograder.sandbox.preflight import check_available, check_unwrapped

__all__ = [
    "ETC",
    "INSTALL_HINT",
    "PRELOAD",
    "SANDBOX_USER",
    "SANDBOX_USER_ENV",
    "SANDBOXED",
    "SANDBOXED_IN_SANDBOX",
    "TRAINED_IN_SANDBOX",
    "GiB",
    "MiB",
    "Limits",
    "PrefixUnsafe",
    "RunResult",
    "SandboxUnavailable",
    "Sandbox",
    "bwrap_args",
    "bwrap_path",
    "direct_args",
    "sandbox_env",
    "check_hidden",
    "data_paths",
    "needed_paths",
    "private_paths",
    "python_paths",
    "qkv_folder",
    "reachable",
    "sandbox_user",
    "trained_paths",
    "visible_paths",
    "check_available",
    "check_unwrapped",
]
