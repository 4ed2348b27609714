"""The zygote: imports the heavy modules and runs the instructor's prefix once, then forks one fresh child per
submission and puts the sandbox back as it was after each (see the package's docstring).

Started with ``--scratch DIR`` (:data:`~.protocol.SCRATCH_OPTION`), it runs where no bubblewrap contains it (the
sandbox without bubblewrap, :mod:`autograder.sandbox`): ``DIR`` is then its only writable place instead of ``/tmp``
and ``/dev/shm``, which are the host's; the sweep kills the processes of its own process group instead of every
process it can signal; it refuses to serve without a seccomp filter; it takes, with its children, the first turn
of the kernel's out-of-memory killer (a machine short of memory ends the notebook, never the grader); and each
child's filter refuses more (:data:`~.seccomp.UNCONTAINED_REFUSED`)."""

from __future__ import annotations

import ctypes
import gc
import json
import os
import select
import shutil
import signal
import socket
import sys
import time

from . import cells as cells_
from . import guard, seccomp
from .protocol import OP_JOB, OP_PREFIX
from .shell import make_shell

#: Wipe these between children (the sandbox's only writable places; with ``--scratch``, that folder instead).
WRITABLE = ("/tmp", "/dev/shm")


def preload(modules: list[str]) -> list[str]:
    """Import the heavy modules once, before any student code; return the ones that failed."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    failed = []
    for name in modules:
        try:
            __import__(name)
        except Exception as exc:  # noqa: BLE001 (a missing optional module only costs time later)
            failed.append(f"{name}: {exc!r}")
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        plt.show = lambda *args, **kwargs: None  # as Jupyter's inline backend: figures are kept, not shown
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)
        torch.set_num_interop_threads(1)
    pkg = sys.modules.get("qkv")
    if pkg is not None and "qkv" in modules:
        import pkgutil

        for info in pkgutil.iter_modules(pkg.__path__, "qkv."):
            try:
                __import__(info.name)
            except Exception as exc:  # noqa: BLE001
                failed.append(f"{info.name}: {exc!r}")
    return failed


def snapshot(places=WRITABLE) -> dict[str, tuple]:
    """The files of the writable ``places``, as they are now (what the preload or the prefix left there), bounded
    in size."""
    files, total = {}, 0
    for top in places:
        for folder, dirs, names in os.walk(top):
            for name in dirs + names:
                path = os.path.join(folder, name)
                if os.path.islink(path):
                    files[path] = ("link", os.readlink(path))
                elif os.path.isdir(path):
                    files[path] = ("dir", None)
                elif os.path.isfile(path):
                    with open(path, "rb") as fh:
                        data = fh.read(64 * 2**20 - total + 1)
                    total += len(data)
                    if total > 64 * 2**20:
                        raise RuntimeError("the prefix left more than 64 MiB in /tmp")
                    files[path] = ("file", data)
    return files


def _others_in_my_group(me: int) -> list[int]:
    """The live processes of this process's group but this one (without bubblewrap: what a child may have left)."""
    group, found = os.getpgid(0), []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != me:
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] not in ("Z", "X") and int(fields[2]) == group:
                found.append(int(entry))
    return found


def sweep(me: int, keep: dict, places=WRITABLE, contained: bool = True) -> None:
    """Kill every process of the sandbox but this one and init, reap, and put the writable ``places`` back
    as ``keep`` (a :func:`snapshot`) says. ``contained=False`` (no PID namespace): the processes of this
    process's group only, whose members the child's filter keeps in it."""
    for _ in range(50):
        try:
            if contained:
                os.kill(-1, signal.SIGKILL)
            else:
                for pid in _others_in_my_group(me):
                    os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
        alive = _alive(me) if contained else _others_in_my_group(me)
        if not alive:
            break
        time.sleep(0.01)
    for top in places:
        if not os.path.isdir(top):
            continue
        for entry in os.listdir(top):
            path = os.path.join(top, entry)
            try:
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    os.unlink(path)
            except OSError:
                pass
    for path, (kind, data) in sorted(keep.items()):
        try:
            if kind == "dir":
                os.makedirs(path, exist_ok=True)
            elif kind == "link":
                os.symlink(data, path)
            else:
                with open(path, "wb") as fh:
                    fh.write(data)
        except OSError:
            pass


def _alive(me: int) -> list[str]:
    """The live processes of the sandbox's PID namespace but this one and init."""
    alive = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) not in (1, me):
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    state = fh.read().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if state not in ("Z", "X"):
                alive.append(entry)
    return alive


def wait_child(pid: int, deadline: float) -> tuple[str, int]:
    """Wait for the child until ``deadline`` seconds have passed; returns (how, code)."""
    fd = os.pidfd_open(pid)
    try:
        ready, _, _ = select.select([fd], [], [], max(deadline, 0.0))
    finally:
        os.close(fd)
    if not ready:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        return "timeout", 0
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return "signal", os.WTERMSIG(status)
    return "exit", os.waitstatus_to_exitcode(status)


def _messages(control: socket.socket):
    """The parent's JSON lines on the control socket, each with the descriptors that came with it."""
    buffer, fds = b"", []
    while True:
        while b"\n" not in buffer:
            msg, more, _flags, _addr = socket.recv_fds(control, 1 << 20, 4)
            if not msg:
                for fd in fds + more:
                    os.close(fd)
                return
            buffer += msg
            fds += more
        line, buffer = buffer.split(b"\n", 1)
        yield json.loads(line), fds
        fds = []


def zygote(control_fd: int, modules: list[str], scratch: str | None = None) -> None:
    """Serve the parent: ``prefix`` (once, first: run the instructor's cells that precede every answer, so
    that each child starts from their state) and ``job`` (fork a child for one submission). ``scratch``: the
    writable folder where no bubblewrap contains the sandbox (see this module's docstring)."""
    control = socket.socket(fileno=control_fd)
    contained = scratch is None
    places = WRITABLE if contained else (scratch,)
    home = places[0]
    if os.path.isdir(home):
        os.chdir(home)  # started where ``-m`` finds this package; the prefix runs in /tmp, as before
    started = time.monotonic()
    failed = preload(modules)
    os.makedirs(os.environ.get("HOME", f"{home}/home"), exist_ok=True)  # IPython keeps its profile there
    shell, rules = make_shell(), seccomp.no_fork_filter(contained)
    if rules is None and not contained:  # nothing else would keep the child from the network and the host
        cells_._send(control, {"ready": False, "error": "no seccomp filter (pyseccomp and libseccomp are needed)"})
        return
    guard.CURRENT = guard.Guard(shell)  # before any student code: what the hidden tests rely on, as it is now
    if not contained:  # the kernel's out-of-memory killer takes us and our children first, never the grader
        with open("/proc/self/oom_score_adj", "w") as fh:  # raising one's own needs no privilege (while dumpable)
            fh.write("1000")
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: children of the same uid cannot ptrace us
    import random

    random.seed(0)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(0)
    me = os.getpid()
    count, served = 0, False
    try:
        keep = snapshot(places)  # what the preloaded modules and the shell left in /tmp: every child starts from it
    except (OSError, RuntimeError):
        keep = {}
    cells_._send(control, {"ready": True, "seconds": round(time.monotonic() - started, 3), "preload_failed": failed})
    for request, fds in _messages(control):
        op = request.get("op")
        if op == OP_PREFIX and not served:
            limits = {"max_lines": int(request["max_lines"]), "max_chars": int(request["max_chars"])}
            cells = {}
            for index, source in request["cells"]:
                count += 1
                cells[index] = [count, cells_.run_cell(shell, source, count, limits)]
            threads = len(os.listdir("/proc/self/task"))
            try:
                keep = snapshot(places)
                problem = None if threads == 1 else f"the prefix left {threads - 1} threads running"
            except (OSError, RuntimeError) as err:
                problem = str(err)
            guard.CURRENT.capture()  # the course's own cells ran: what they bound (checks, torch, ref...) is trusted
            cells_._send(control, {"prefix": cells, "problem": problem})
            if problem:
                return
            continue
        if op != OP_JOB or not fds:
            for fd in fds:
                os.close(fd)
            cells_._send(control, {"error": f"unexpected request {op!r}"})
            continue
        served = True
        job_fd = fds[0]
        for fd in fds[1:]:
            os.close(fd)
        sweep(me, keep, places, contained)
        gc.freeze()  # the child's collections skip what it inherits: faster, and no copy-on-write of every page
        pid = os.fork()
        if pid == 0:
            control.close()
            cells_.child_main(
                socket.socket(fileno=job_fd), request.get("limits", {}), shell, count, rules, f"{home}/work", contained
            )
        os.close(job_fd)
        how, code = wait_child(pid, float(request["deadline"]))
        sweep(me, keep, places, contained)
        cells_._send(control, {"how": how, "code": code})
