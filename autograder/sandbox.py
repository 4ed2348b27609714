"""The grading sandbox: bubblewrap around a zygote that runs each submission in a fresh child.

Student code never runs in the grading process. :class:`Sandbox` starts
the package ``autograder/sandboxed`` under Debian's ``bwrap`` with:

* no network (``--unshare-all`` without ``--share-net``), new user, PID, IPC,
  UTS and cgroup namespaces, ``--die-with-parent``, ``--new-session``, no
  further user namespaces;
* a read-only root made only of what Python needs: ``/usr`` and its
  ``/lib*``, bits of ``/etc``, the interpreter's prefix and the venv, the
  repository's ``lib/`` (for ``qkv``), the data folder and the folder of trained weights (``qkv.trained``,
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
"""

from __future__ import annotations

import collections
import dataclasses
import importlib.util
import json
import os
import selectors
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from autograder.sandboxed import protocol

#: The package that runs inside the sandbox (bound read-only as a folder, run with ``python -m``).
SANDBOXED = Path(__file__).resolve().with_name("sandboxed")
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


def bwrap_path() -> str:
    """The ``bwrap`` executable (``$QKV_BWRAP``, else ``bwrap`` on PATH), or :class:`SandboxUnavailable`
    saying how to install it."""
    named = os.environ.get("QKV_BWRAP")
    if named is not None:
        if not (os.path.isfile(named) and os.access(named, os.X_OK)):
            raise SandboxUnavailable(f"QKV_BWRAP={named!r} is not an executable file; " + INSTALL_HINT)
        return named
    path = shutil.which("bwrap")
    if path is None:
        raise SandboxUnavailable(INSTALL_HINT)
    return path


def python_paths() -> list[Path]:
    """What the interpreter needs, read-only: its prefix, the venv, and the folders of editable packages."""
    paths = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(), Path(sys.executable).resolve().parent}
    paths.add(Path(sys.prefix))  # the venv as named (its python links into the base prefix)
    lib = qkv_folder()
    if lib is not None:
        paths.add(lib)
    return sorted(paths)


def qkv_folder() -> Path | None:
    """The folder holding the ``qkv`` this process imports (``lib/`` of the checkout, or of a copy of it): the
    sandbox binds it and puts it first on the child's ``PYTHONPATH``, so that the child grades with the same
    ``qkv`` as the grader, whichever checkout the interpreter's editable install points at."""
    spec = importlib.util.find_spec("qkv")
    if spec is None or not spec.origin:
        return None
    return Path(spec.origin).resolve().parent.parent


def data_paths() -> list[Path]:
    """The course's data folder, where one is configured (read-only, public data)."""
    value = os.environ.get("QKV_DATA_DIR")
    return [Path(value).resolve()] if value and Path(value).is_dir() else []


def trained_paths() -> list[Path]:
    """The folder of cached trained weights (``qkv.trained.trained_dir()``), where it exists: read-only, so that
    a section that shows a trained model loads it (``make release`` trains it first) and never trains here."""
    # qkv.trained.trained_dir(), without importing torch into the grader (tests/test_trained.py checks they agree)
    env, cache = os.environ.get("QKV_TRAINED_DIR"), os.environ.get("QKV_CACHE_DIR")
    if env:
        folder = Path(env).expanduser()
    else:
        folder = (Path(cache).expanduser() if cache else Path.home() / ".cache" / "qkv") / "trained"
    return [folder.resolve()] if folder.is_dir() else []


def _minimal(paths: list[Path]) -> list[Path]:
    """Drop paths inside another path of the list."""
    out: list[Path] = []
    for path in sorted(set(paths), key=lambda p: len(p.parts)):
        if not any(path == kept or kept in path.parents for kept in out):
            out.append(path)
    return out


def visible_paths() -> list[Path]:
    """Every host path bound into the sandbox (read-only)."""
    system = [Path("/usr")] + [Path(p) for p in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")]
    system = [p for p in system if p.exists() and not p.is_symlink()]
    etc = [Path("/etc") / name for name in ETC if (Path("/etc") / name).exists()]
    return _minimal(system + etc + python_paths() + data_paths() + trained_paths())


def check_hidden(paths: list[Path], bubblewrap: bool = True) -> None:
    """Refuse to start if a path that must stay out of sight (course, submissions) would be visible.

    ``bubblewrap=False``: if the user that runs student code without bubblewrap (:func:`sandbox_user`) could read
    one of ``paths`` or of the repository's :func:`private_paths`."""
    if not bubblewrap:
        name, uid, gid = sandbox_user()
        groups = _user_groups(name, gid)
        for path in [*paths, *private_paths()]:
            if Path(path).exists() and reachable(Path(path), uid, groups):
                raise SandboxUnavailable(
                    f"{path} can be read by the user {name!r}, which runs student code without bubblewrap: make it "
                    f"readable by its owner only (chmod -R go-rwx {path}), or grade with bubblewrap. "
                    "Nothing was graded."
                )
        return
    visible = visible_paths()
    for path in paths:
        path = Path(path).resolve()
        for seen in visible:
            if path == seen or seen in path.parents:
                raise SandboxUnavailable(
                    f"{path} lies inside {seen}, which the sandbox shows to student code read-only; "
                    "move the course and the submissions out of the interpreter's, the venv's and lib/'s folders"
                )


def sandbox_env(trained: str | None, scratch: str = "/tmp") -> dict[str, str]:
    """The whole environment of the zygote: ``trained`` is where it sees the trained weights (None: nowhere),
    ``scratch`` its writable folder (``/tmp`` in bubblewrap's own tmpfs; the scratch folder without it)."""
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": f"{scratch}/home",
        "LANG": "C.UTF-8",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": f"{scratch}/matplotlib",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "QKV_OFFLINE": "1",
        "NBGRADER_EXECUTION": "autograde",
    }
    if scratch != "/tmp":
        env["TMPDIR"] = f"{scratch}/tmp"  # tempfile's files in the scratch folder, not in the host's /tmp
    if data_paths():
        env["QKV_DATA_DIR"] = str(data_paths()[0])
    if trained:
        env["QKV_TRAINED_DIR"] = trained
    if os.environ.get("QKV_TRAIN_SMOKE"):  # the test suite grades against its smoke-trained models (qkv.trained)
        env["QKV_TRAIN_SMOKE"] = os.environ["QKV_TRAIN_SMOKE"]
    if qkv_folder() is not None:
        env["PYTHONPATH"] = str(qkv_folder())
    return env


def bwrap_args(limits: Limits, control_fd: int, preload=PRELOAD) -> list[str]:
    """The command that starts the zygote in a fresh sandbox, talking to us on ``control_fd``."""
    args = [bwrap_path(), "--unshare-all", "--unshare-user", "--uid", "65534", "--gid", "65534"]
    args += ["--disable-userns", "--die-with-parent", "--new-session"]
    for name in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(name):
            args += ["--symlink", os.readlink(name), name]
    args += ["--proc", "/proc", "--dev", "/dev"]
    # The private tmpfs mounts come before the read-only binds, so that a checkout, venv or data folder that
    # lives under /tmp on the host (CI clones anywhere) is bound over the empty /tmp rather than hidden by it.
    args += ["--size", str(limits.tmpfs), "--tmpfs", "/tmp", "--size", str(limits.tmpfs), "--tmpfs", "/dev/shm"]
    trained = trained_paths()
    for path in visible_paths():
        if path not in trained:
            args += ["--ro-bind", str(path), str(path)]
    if trained:
        args += ["--ro-bind", str(trained[0]), TRAINED_IN_SANDBOX]
    args += ["--ro-bind", str(SANDBOXED), SANDBOXED_IN_SANDBOX]
    # Started in the package's parent folder, so that ``-m`` finds it (sys.path[0]); the zygote then moves to /tmp.
    args += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", protocol.GRADER_IN_SANDBOX, "--clearenv"]
    env = sandbox_env(TRAINED_IN_SANDBOX if trained else None)
    for key, value in env.items():
        args += ["--setenv", key, value]
    args += [sys.executable, "-s", "-B", "-m", protocol.PACKAGE, "--control-fd", str(control_fd)]
    args += ["--preload", ",".join(preload)]
    return args


def direct_args(control_fd: int, scratch: str, preload=PRELOAD) -> list[str]:
    """The command that starts the zygote without bubblewrap (``Sandbox(bubblewrap=False)``): run from the
    package's parent folder, as the unprivileged user, with :func:`sandbox_env`, writing in ``scratch`` only."""
    args = [sys.executable, "-s", "-B", "-m", protocol.PACKAGE, "--control-fd", str(control_fd)]
    return args + ["--preload", ",".join(preload), protocol.SCRATCH_OPTION, scratch]


def sandbox_user() -> tuple[str, int, int]:
    """``(name, uid, gid)`` of the user that runs student code without bubblewrap (:data:`SANDBOX_USER`, or
    ``$QKV_SANDBOX_USER``); :class:`SandboxUnavailable` unless this process is root, which alone can start
    another user's process, and the user exists and is not root."""
    import pwd

    name = os.environ.get(SANDBOX_USER_ENV) or SANDBOX_USER
    if os.geteuid() != 0:
        raise SandboxUnavailable(
            f"without bubblewrap the grader runs student code as the unprivileged user {name!r}, and only root can "
            "start it so: run as root (Gradescope's run_autograder is), or grade with bubblewrap. Nothing was graded."
        )
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        raise SandboxUnavailable(
            f"the user {name!r} that would run student code does not exist (set {SANDBOX_USER_ENV} to an "
            "unprivileged user). Nothing was graded."
        ) from None
    if entry.pw_uid == 0:
        raise SandboxUnavailable(f"{SANDBOX_USER_ENV}={name!r} is root: student code must run unprivileged")
    return name, entry.pw_uid, entry.pw_gid


def reachable(path: Path, uid: int, gids: set[int]) -> bool:
    """Whether the user ``uid`` (in the groups ``gids``) may read ``path`` by its mode bits: every folder above it
    searchable, and it readable (a folder: searchable). ACLs are not read (the course's files carry none)."""

    def allows(st: os.stat_result, bit: int) -> bool:  # bit: 4 read, 1 search; the kernel's class of the user
        shift = 6 if st.st_uid == uid else 3 if st.st_gid in gids else 0
        return bool(st.st_mode >> shift & bit)

    path = Path(os.path.abspath(path))
    try:
        for folder in reversed(path.parents):
            if not allows(os.stat(folder), 1):
                return False
        st = os.stat(path)
    except OSError:
        return False
    return allows(st, 1 if stat.S_ISDIR(st.st_mode) else 4)


def _user_groups(name: str, gid: int) -> set[int]:
    return set(os.getgrouplist(name, gid))


def private_paths() -> list[Path]:
    """The repository's parts that no student may read (hidden tests, solutions, its history), where they exist:
    without bubblewrap nothing but their permissions keeps student code from them."""
    root = SANDBOXED.parent.parent
    return [p for p in (SANDBOXED.parent / "sections", root / "solutions", root / ".git") if p.exists()]


def needed_paths() -> list[Path]:
    """What the zygote must read without bubblewrap: the interpreter, its standard library and packages, ``qkv``,
    the sandboxed package, the data and the trained weights."""
    import sysconfig

    found = [Path(os.path.realpath(sys.executable)), SANDBOXED, Path(sysconfig.get_paths()["stdlib"])]
    for name in ("torch", "IPython", "pyseccomp"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin:
            found.append(Path(spec.origin).parent)
    return found + [p for p in (qkv_folder(),) if p is not None] + data_paths() + trained_paths()


class _Tail:
    """Keep the last bytes a sandbox printed outside the protocol (for the reason of a crash)."""

    def __init__(self, stream, size: int = 16384):
        self._chunks: collections.deque[bytes] = collections.deque()
        self._size, self._total = size, 0
        self._thread = threading.Thread(target=self._drain, args=(stream,), daemon=True)
        self._thread.start()

    def _drain(self, stream) -> None:
        try:
            for chunk in iter(lambda: stream.read1(65536), b""):
                self._chunks.append(chunk)
                self._total += len(chunk)
                while self._total - len(self._chunks[0]) > self._size:
                    self._total -= len(self._chunks.popleft())
        except (OSError, ValueError):  # the sandbox was closed
            pass

    def join(self) -> None:
        self._thread.join(timeout=5)

    def text(self) -> str:
        return b"".join(self._chunks)[-self._size :].decode("utf-8", "replace")


class Sandbox:
    """One bubblewrap sandbox with a zygote in it; :meth:`run` grades one notebook at a time.

    ``bubblewrap=False``: the zygote runs without bubblewrap, as :func:`sandbox_user`, in a scratch folder of its
    own (this module's docstring). Not thread-safe: give each worker thread its own sandbox.
    """

    def __init__(
        self, limits: Limits | None = None, preload=PRELOAD, startup_timeout: float = 600.0, bubblewrap: bool = True
    ):
        self.limits = limits or Limits()
        self.preload = tuple(preload)
        self.startup_timeout = startup_timeout
        self.bubblewrap = bubblewrap
        self._scratch: Path | None = None
        self._proc: subprocess.Popen | None = None
        self._control: socket.socket | None = None
        self._tail: _Tail | None = None
        self._buffer = b""
        self._prefix: tuple[str, dict] = ("null", {})  # (key of the prefix cells, their outputs)
        self._unsafe: set[str] = set()
        self.starts = 0

    # -- life cycle
    def start(self, prefix: list[tuple[int, str]] | None = None) -> float:
        """Start the sandbox and wait until the zygote has imported its modules and run ``prefix`` (the
        instructor's cells that come before any answer, shared by every submission); returns the seconds
        it took. Raises :class:`PrefixUnsafe` when the prefix cannot be shared."""
        self.close()
        began = time.monotonic()
        ours, theirs = socket.socketpair()
        try:
            self._proc = self._popen(theirs.fileno())
        finally:
            theirs.close()
        self._control, self._buffer = ours, b""
        self._tail = _Tail(self._proc.stdout)
        self.starts += 1
        message = self._read_control(began + self.startup_timeout)
        if not message or not message.get("ready"):
            tail = self._tail.text() if self._tail else ""
            self.close()
            raise SandboxUnavailable(f"the sandbox did not start: {message or 'no answer'}\n{tail.strip()}")
        self._prefix = ("null", {})
        if prefix:
            request = {"op": protocol.OP_PREFIX, "cells": [[i, src] for i, src in prefix]}
            request.update(max_lines=self.limits.max_lines, max_chars=self.limits.max_chars)
            self._control.sendall(json.dumps(request).encode() + b"\n")
            reply = self._read_control(time.monotonic() + self.startup_timeout)
            if not reply or "prefix" not in reply or reply.get("problem"):
                self.close()
                raise PrefixUnsafe((reply or {}).get("problem") or "no answer to the prefix")
            cells = {int(k): (v[0], v[1]) for k, v in reply["prefix"].items()}
            self._prefix = (json.dumps(prefix), cells)
        return time.monotonic() - began

    def _popen(self, control_fd: int) -> subprocess.Popen:
        """Start the zygote, in bubblewrap or, without it, as the unprivileged user in a fresh scratch folder."""
        common = dict(
            pass_fds=[control_fd],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group (and, without bubblewrap, every process it may have)
        )
        if self.bubblewrap:
            return subprocess.Popen(bwrap_args(self.limits, control_fd, self.preload), **common)
        name, uid, gid = sandbox_user()
        self._scratch = Path(tempfile.mkdtemp(prefix="qkv-sandbox-"))  # 0700; the user's own, below
        os.chown(self._scratch, uid, gid)
        env = sandbox_env(str(trained_paths()[0]) if trained_paths() else None, str(self._scratch))
        return subprocess.Popen(
            direct_args(control_fd, str(self._scratch), self.preload),
            user=uid,
            group=gid,
            extra_groups=[],
            env=env,
            cwd=SANDBOXED.parent,  # where ``-m`` finds the package, as bubblewrap's --chdir
            **common,
        )

    def _ready_for(self, prefix) -> list[tuple[int, str]]:
        """Make sure the zygote holds ``prefix``'s state; returns the prefix cells the child must still run
        (all of them when the prefix cannot be shared, none otherwise)."""
        key = json.dumps(prefix or None)
        if key in self._unsafe:
            if not self.alive or self._prefix[0] != "null":
                self.start(None)
            return list(prefix)
        if not self.alive or self._prefix[0] != key:
            try:
                self.start(prefix)
            except PrefixUnsafe:
                self._unsafe.add(key)
                self.start(None)
                return list(prefix)
        return []

    @property
    def alive(self) -> bool:
        """Whether the sandbox (its bwrap process) is running."""
        return self._proc is not None and self._proc.poll() is None

    def close(self) -> None:
        """Kill the sandbox and everything in it (bwrap's PID namespace dies with its init; without bubblewrap,
        the zygote's process group, which its children cannot leave, even once the zygote itself is gone)."""
        if self._proc is not None:
            if self._proc.poll() is None or not self.bubblewrap:
                try:
                    os.killpg(self._proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
            if self._tail is not None:
                self._tail.join()
            if self._proc.stdout:
                self._proc.stdout.close()
        if self._control is not None:
            self._control.close()
        self._proc = self._control = None
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    def __enter__(self) -> Sandbox:
        if not self.alive:
            self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- protocol
    def _read_control(self, until: float) -> dict | None:
        """The zygote's next JSON line, or None when it ended or ``until`` (monotonic) passed."""
        while b"\n" not in self._buffer:
            left = until - time.monotonic()
            if left <= 0 or self._control is None:
                return None
            self._control.settimeout(left)
            try:
                chunk = self._control.recv(65536)
            except (TimeoutError, OSError):
                return None
            if not chunk:
                return None
            self._buffer += chunk
            if len(self._buffer) > 1 << 20:
                return None
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            message = json.loads(line)
        except ValueError:
            return None
        return message if isinstance(message, dict) else None

    def run(
        self, cells: list[tuple[int, str]], prefix: list[tuple[int, str]] | None = None, retry: bool = True
    ) -> RunResult:
        """Run the code cells ``[(index, source), ...]`` of one notebook in a fresh child.

        ``prefix`` are the notebook's first cells, the instructor's, identical for every submission: the
        zygote runs them once and each child starts from their state (their outputs are in the result).
        If the sandbox itself dies during the run (not just the child), the notebook runs again once in a
        fresh sandbox and that result stands.
        """
        own = self._ready_for(prefix)
        result = self._run_once([*own, *cells], trusted=len(own))
        if result.how == "died" and not self.alive and retry:
            own = self._ready_for(prefix)
            result = self._run_once([*own, *cells], trusted=len(own))
        if not self.alive:
            self.close()
        return result

    def _run_once(self, cells: list[tuple[int, str]], trusted: int = 0) -> RunResult:
        """Run ``cells`` in a fresh child; the first ``trusted`` of them are the instructor's prefix, run by the
        child itself when the zygote could not share it: the child records what the hidden tests rely on after
        them (as the zygote does after a shared prefix), so the guard holds on either path."""
        limits = self.limits
        began = time.monotonic()
        backstop = began + limits.deadline + limits.grace
        result = RunResult(cells=dict(self._prefix[1]))
        ours, theirs = socket.socketpair()
        try:
            request = {"op": protocol.OP_JOB, "deadline": limits.deadline, "limits": limits.child()}
            request = json.dumps(request).encode() + b"\n"
            socket.send_fds(self._control, [request], [theirs.fileno()])
        except OSError as err:
            ours.close()
            theirs.close()
            self.close()
            result.detail = f"the sandbox did not take the job ({err})"
            return result
        theirs.close()
        job = json.dumps(
            {
                "cells": [[i, s] for i, s in cells],
                "trusted": trusted,
                "max_lines": limits.max_lines,
                "max_chars": limits.max_chars,
            }
        ).encode()
        done = self._exchange(ours, job, backstop, result)
        ours.close()
        status = self._read_control(backstop) if done != "backstop" else None
        result.seconds = time.monotonic() - began
        how, code = (status or {}).get("how"), (status or {}).get("code")
        if status is None:
            self.close()  # the zygote is gone or stuck: nothing of this sandbox can be trusted to go on
        if done == "done" and all(i in result.cells for i, _ in cells):
            result.how = "done"
        elif done == "backstop" or how == "timeout":
            result.how = "timeout"
            result.detail = f"the notebook ran past the {limits.deadline:g} s deadline"
        elif how == "signal":
            try:
                name = signal.Signals(code).name
            except (ValueError, TypeError):
                name = f"signal {code}"
            result.detail = f"the notebook's process was killed by {name}"
        elif how == "exit":
            result.detail = f"the notebook's process exited with status {code}"
        else:
            result.detail = "the sandbox ended during the run"
        return result

    def _exchange(self, sock: socket.socket, job: bytes, backstop: float, result: RunResult) -> str:
        """Send the job, collect the child's messages; returns 'done', 'eof' or 'backstop'."""
        sock.setblocking(False)
        sel = selectors.DefaultSelector()
        sel.register(sock, selectors.EVENT_READ | selectors.EVENT_WRITE)
        pending, buffer, received, finished = memoryview(job), b"", 0, False
        try:
            while True:
                left = backstop - time.monotonic()
                if left <= 0:
                    return "backstop"
                for _key, events in sel.select(timeout=min(left, 1.0)):
                    if events & selectors.EVENT_WRITE and pending:
                        try:
                            sent = sock.send(pending[: 1 << 16])
                        except BlockingIOError:
                            sent = 0
                        except OSError:
                            pending = memoryview(b"")
                            sent = 0
                        pending = pending[sent:]
                        if not pending:
                            try:
                                sock.shutdown(socket.SHUT_WR)
                            except OSError:
                                pass
                            sel.modify(sock, selectors.EVENT_READ)
                    if events & selectors.EVENT_READ:
                        try:
                            chunk = sock.recv(1 << 20)
                        except BlockingIOError:
                            continue
                        except OSError:
                            chunk = b""
                        if not chunk:
                            return "done" if finished else "eof"
                        received += len(chunk)
                        if received > self.limits.max_result_bytes:
                            buffer = b""  # too much: keep draining, keep nothing more
                            continue
                        buffer += chunk
                        *lines, buffer = buffer.split(b"\n")
                        for line in lines:
                            finished = self._take(line, result) or finished
        finally:
            sel.close()

    @staticmethod
    def _take(line: bytes, result: RunResult) -> bool:
        """Record one message of the child; returns True for the final 'done'."""
        try:
            message = json.loads(line)
        except ValueError:
            return False
        if not isinstance(message, dict):
            return False
        if "start" in message and isinstance(message["start"], int):
            result.running = message["start"]
        elif (
            isinstance(message.get("cell"), int)
            and isinstance(message.get("outputs"), list)
            and message["cell"] not in result.cells  # once per cell; the prefix's come from the zygote
        ):
            count = message.get("execution_count")
            result.cells[message["cell"]] = (count if isinstance(count, int) else None, message["outputs"])
            result.running = None
        elif "started" in message:
            result.no_fork_filter = bool(message.get("no_fork_filter"))
        elif message.get("done") is True:
            return True
        return False


def check_available(bubblewrap: bool = True) -> None:
    """Raise :class:`SandboxUnavailable` unless bwrap exists and can make a sandbox here; ``bubblewrap=False``:
    unless the sandbox can run without it (:func:`check_unwrapped`)."""
    if not bubblewrap:
        check_unwrapped()
        return
    bwrap = bwrap_path()
    probe = [bwrap, "--unshare-all", "--unshare-user", "--uid", "65534", "--gid", "65534", "--disable-userns"]
    probe += ["--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "true"]
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise SandboxUnavailable(f"bwrap could not run here: {err}. Nothing was graded.") from err
    if done.returncode:
        raise SandboxUnavailable(
            f"bwrap is installed but cannot create a sandbox here: {done.stderr.strip()}. "
            "It needs unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1 on older Debian "
            "kernels) or root. Nothing was graded."
        )


def check_unwrapped() -> None:
    """Raise :class:`SandboxUnavailable` unless the sandbox can run without bubblewrap: this process is root, the
    user :func:`sandbox_user` exists, the child's seccomp filter (without namespaces) can be built, and that user
    can read what the zygote needs (:func:`needed_paths`)."""
    from autograder.sandboxed import seccomp

    name, uid, gid = sandbox_user()
    if seccomp.no_fork_filter(contained=False) is None:
        raise SandboxUnavailable(
            "without bubblewrap the child's seccomp filter is all that keeps student code from the network and "
            "from leaving its process group, and it cannot be built here: install pyseccomp and libseccomp "
            "(Debian/Ubuntu: libseccomp2). Nothing was graded."
        )
    groups = _user_groups(name, gid)
    for path in needed_paths():
        if not reachable(path, uid, groups):
            raise SandboxUnavailable(
                f"the user {name!r}, which runs student code without bubblewrap, cannot read {path}: install Python "
                "and the course's packages where every user can read them (Gradescope's setup.sh does). "
                "Nothing was graded."
            )
