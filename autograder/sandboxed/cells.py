"""Running cells in a forked child: one cell as a Jupyter kernel would (:func:`run_cell`), and a whole job
under the child's resource limits and seccomp filter (:func:`child_main`)."""

from __future__ import annotations

import json
import os
import resource
import socket
import sys
import traceback

from IPython.core.interactiveshell import InteractiveShell

from . import guard, seccomp
from .capture import CellOutputs, Stream
from .protocol import send
from .shell import GraderShell
from .tracebacks import error_output

# Bound before any student code can run: a child uses these, not what a student re-binds.
_run_cell = InteractiveShell.run_cell
_dumps = json.dumps


def _summarise_figures() -> list[dict]:
    """Figures the cell left open, as text (rendering them would cost time and grade nothing)."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return []
    outputs = []
    try:
        for num in plt.get_fignums():
            fig = plt.figure(num)
            w, h = fig.get_size_inches() * fig.dpi
            text = f"<Figure size {w:g}x{h:g} with {len(fig.axes)} Axes>"
            outputs.append({"output_type": "display_data", "data": {"text/plain": text}, "metadata": {}})
        plt.close("all")
    except Exception:  # noqa: BLE001 (a student may have broken pyplot; figures are not graded)
        pass
    return outputs


def name_stub(error) -> None:
    """Give an unanswered stub's bare ``NotImplementedError``, raised under a hidden part (where IPython's
    handler, :func:`qkv.checks.install`, does not see it), the message that handler gives it in a cell."""
    checks = guard.CURRENT.checks if guard.CURRENT is not None else None
    if isinstance(error, NotImplementedError) and not error.args and checks is not None:
        text = checks.stub_message(error)
        if text:
            error.args = (text,)


def run_cell(shell: GraderShell, source: str, count: int, limits: dict) -> list[dict]:
    """Run one cell in ``shell`` as a Jupyter kernel would, as execution number ``count``; returns its
    nbformat outputs. A test cell's hidden part (from nbgrader's marker on) runs after its visible part
    passed, under :func:`run_hidden`."""
    cell = CellOutputs(limits, count)
    visible, hidden, lines = guard.split_hidden(source)
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = Stream("stdout", cell), Stream("stderr", cell)
    shell.cell, shell.execution_count = cell, count
    error = None
    try:
        result = _run_cell(shell, visible, store_history=True)
        if not result.success and not cell.failed:  # an error IPython printed rather than showed
            error = result.error_before_exec or result.error_in_exec
        if hidden is not None and result.success and error is None and not cell.failed:
            error = guard.run_hidden(shell, hidden, lines, count, cell)
            name_stub(error)
    except BaseException as exc:  # noqa: BLE001 (whatever escapes the shell is the cell's error too)
        error = exc
    finally:
        sys.stdout, sys.stderr = saved
        shell.cell = None
    outputs = cell.finish() + _summarise_figures()
    if error is not None:
        outputs.append(error_output(error, shell.compile._filename_map))
    return outputs


def _send(sock: socket.socket, message: dict) -> None:
    send(sock, message, _dumps)


def child_main(
    job_sock: socket.socket,
    limits: dict,
    shell: GraderShell,
    count: int,
    rules,
    workdir: str = "/tmp/work",
    contained: bool = True,
) -> None:
    """Run one job in this (forked) process, in ``shell`` (holding the state after the instructor's prefix),
    under the seccomp filter ``rules``, in ``workdir``; never returns. ``contained=False`` (no bubblewrap around
    the sandbox): no student code runs unless the filter is loaded."""
    code = 0
    try:
        set_limits(limits)
        filtered = seccomp.install_no_fork_filter(rules) if rules is not None else False
        if not contained:
            if not filtered:
                raise RuntimeError("the seccomp filter could not be loaded: no student code runs without it")
        os.makedirs(workdir, exist_ok=True)
        os.makedirs(os.environ.get("HOME", "/tmp/home"), exist_ok=True)
        os.chdir(workdir)
        chunks = []
        while True:
            chunk = job_sock.recv(1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        job = json.loads(b"".join(chunks))
        _send(job_sock, {"started": True, "no_fork_filter": filtered})
        output_limits = {"max_lines": int(job["max_lines"]), "max_chars": int(job["max_chars"])}
        trusted = int(job.get("trusted", 0))  # the instructor's prefix, when the zygote could not share it
        for position, (index, source) in enumerate(job["cells"]):
            count += 1
            _send(job_sock, {"start": index})
            outputs = run_cell(shell, source, count, output_limits)
            _send(job_sock, {"cell": index, "execution_count": count, "outputs": outputs})
            if position + 1 == trusted and guard.CURRENT is not None:
                guard.CURRENT.capture()  # as the zygote does after a shared prefix: before any student code
        _send(job_sock, {"done": True})
    except BaseException:  # noqa: BLE001 (report, then exit: the parent grades what it received)
        traceback.print_exc()
        code = 3
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:  # noqa: BLE001,S110
            pass
        os._exit(code)


def set_limits(limits: dict) -> None:
    """Resource limits of the child: lowering them needs no privilege."""
    table = {
        "memory": resource.RLIMIT_AS,
        "cpu": resource.RLIMIT_CPU,
        "fsize": resource.RLIMIT_FSIZE,
        "nproc": resource.RLIMIT_NPROC,
        "nofile": resource.RLIMIT_NOFILE,
        "core": resource.RLIMIT_CORE,
    }
    for name, which in table.items():
        if name in limits and limits[name] is not None:
            value = int(limits[name])
            soft, hard = resource.getrlimit(which)
            if hard != resource.RLIM_INFINITY:
                value = min(value, hard)
            resource.setrlimit(which, (value, value))
