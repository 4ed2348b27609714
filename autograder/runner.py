"""What runs inside the grading sandbox: a zygote that forks one fresh child per submission.

This file is bound read-only into the bubblewrap sandbox that
:mod:`autograder.sandbox` starts, and run there as a script by the venv's
Python. It imports nothing from the repository but what the notebooks import
themselves (``torch``, ``matplotlib``, ``qkv``).

The zygote
    imports the heavy modules once (``--preload``), makes itself non-dumpable
    (so that no student process can ptrace it or read its memory), says
    ``ready`` on the control socket, then serves jobs one at a time. A job is
    announced by the parent with a JSON line carrying the limits and, passed
    with ``SCM_RIGHTS``, one end of a fresh socket pair. The zygote never reads
    a notebook itself (no submission ever enters its memory, so none can leak
    into the next child): it forks, hands the socket to the child, waits for
    the child with the wall-clock deadline, kills every process of the
    sandbox but itself (``kill(-1, SIGKILL)``: leftovers of a student cannot
    reach the next one), wipes ``/tmp`` and reports how the child ended.

The child
    closes the control socket, sets its resource limits (memory, CPU time,
    file size, processes), installs a seccomp filter that refuses to create
    processes (threads are allowed), reads its job (the sources of the code
    cells to run) and executes them one by one in a fresh namespace, as
    IPython would: the value of a last bare expression becomes an
    ``execute_result``, printed text becomes ``stream`` outputs (truncated per
    cell), an exception becomes an ``error`` output with ``ename``, ``evalue``
    and ``traceback`` as nbgrader's ``determine_grade`` expects. Each cell's
    outputs are sent to the parent as soon as the cell ends, so a child that
    dies still leaves the cells it finished. It ends with ``os._exit``: a
    thread a student left behind delays nothing.

The protocol is newline-delimited JSON. Everything the child sends is
untrusted: the parent treats it as data and grades it with nbgrader.
"""

from __future__ import annotations

import argparse
import ast
import ctypes
import errno
import json
import os
import platform
import resource
import select
import shutil
import signal
import socket
import struct
import sys
import time
import traceback

# Bound before any student code can run: a child uses these, not what a student re-binds.
_exec, _eval, _compile, _repr = exec, eval, compile, repr
_dumps = json.dumps

#: Wipe these between children (the sandbox's only writable places).
WRITABLE = ("/tmp", "/dev/shm")


# ---------------------------------------------------------------- seccomp: no new processes


def no_fork_filter() -> bytes | None:
    """A seccomp-BPF program that makes fork, vfork and clone (without CLONE_THREAD) fail with EAGAIN,
    clone3 fail with ENOSYS (so the C library falls back to clone, and threads still work), and ptrace
    and process_vm_readv/writev fail with EPERM. None on an architecture we do not know."""
    machine = platform.machine()
    if machine == "x86_64":
        audit_arch, fork_calls, clone, deny = 0xC000003E, (57, 58), 56, (101, 310, 311)
    elif machine == "aarch64":
        audit_arch, fork_calls, clone, deny = 0xC00000B7, (), 220, (117, 270, 271)
    else:
        return None
    ld, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, ...
    returns = {
        "allow": 0x7FFF0000,  # SECCOMP_RET_ALLOW
        "eagain": 0x00050000 | errno.EAGAIN,  # SECCOMP_RET_ERRNO | errno
        "enosys": 0x00050000 | errno.ENOSYS,
        "eperm": 0x00050000 | errno.EPERM,
    }
    prog: list[list] = []

    def emit(code, k=0, jt=0, jf=0):
        prog.append([code, jt, jf, k])

    emit(ld, 4)  # seccomp_data.arch
    emit(jeq, audit_arch, jf="eperm")  # another ABI (i386 calls on x86_64): refuse
    emit(ld, 0)  # seccomp_data.nr
    if machine == "x86_64":
        emit(jge, 0x40000000, jt="eperm")  # x32 system calls
    for nr in fork_calls:
        emit(jeq, nr, jt="eagain")
    emit(jeq, 435, jt="enosys")  # clone3: its flags live in memory, out of a filter's reach
    for nr in deny:
        emit(jeq, nr, jt="eperm")
    emit(jeq, clone, jf="allow")
    emit(ld, 16)  # low 32 bits of args[0], clone's flags
    emit(jset, 0x00010000, jt="allow", jf="eagain")  # CLONE_THREAD: a thread, not a process
    at = {}
    for name, value in returns.items():
        at[name] = len(prog)
        emit(ret, value)
    out = []
    for i, (code, jt, jf, k) in enumerate(prog):
        jt = at[jt] - i - 1 if isinstance(jt, str) else jt
        jf = at[jf] - i - 1 if isinstance(jf, str) else jf
        out.append(struct.pack("HBBI", code, jt, jf, k))
    return b"".join(out)


def install_no_fork_filter() -> bool:
    """Install :func:`no_fork_filter` on this process (irreversible). Returns whether it was installed."""
    program = no_fork_filter()
    if program is None:
        return False

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    buf = ctypes.create_string_buffer(program, len(program))
    fprog = SockFprog(len(program) // 8, ctypes.addressof(buf))
    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_no_new_privs, pr_set_seccomp, seccomp_mode_filter = 38, 22, 2
    if libc.prctl(pr_set_no_new_privs, 1, 0, 0, 0) != 0:
        return False
    return libc.prctl(pr_set_seccomp, seccomp_mode_filter, ctypes.byref(fprog), 0, 0) == 0


# ---------------------------------------------------------------- output capture


class Stream:
    """A text stream that keeps at most ``max_lines`` lines / ``max_chars`` characters of one cell's output."""

    def __init__(self, name: str, sink: list, limits: dict):
        self.name, self._sink, self._limits = name, sink, limits
        self.encoding, self.errors = "utf-8", "replace"

    def write(self, text) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        state = self._limits
        if state["dropped"]:
            state["dropped_lines"] += text.count("\n")
            return len(text)
        lines_left = state["max_lines"] - state["lines"]
        chars_left = state["max_chars"] - state["chars"]
        if lines_left <= 0 or chars_left <= 0:
            keep = ""
        else:
            keep, cut = text[:chars_left], -1
            for _ in range(lines_left):  # cut just after the last newline the budget allows
                cut = keep.find("\n", cut + 1)
                if cut < 0:
                    break
            if cut >= 0:
                keep = keep[: cut + 1]
        if keep != text:
            state["dropped"] = True
            state["dropped_lines"] += text.count("\n") - keep.count("\n")
            text = keep
        state["lines"] += text.count("\n")
        state["chars"] += len(text)
        if text:
            if self._sink and self._sink[-1][0] == self.name:
                self._sink[-1][1].append(text)
            else:
                self._sink.append((self.name, [text]))
        return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OSError("this stream has no file descriptor")

    def readable(self) -> bool:
        return False

    def writable(self) -> bool:
        return True


# ---------------------------------------------------------------- running cells


def _error_output(err: BaseException, runner_file: str) -> dict:
    frames = [f for f in traceback.extract_tb(err.__traceback__) if os.path.abspath(f.filename) != runner_file]
    lines = ["Traceback (most recent call last):\n"] if frames else []
    lines += traceback.format_list(frames)
    lines += traceback.format_exception_only(type(err), err)
    return {
        "output_type": "error",
        "ename": type(err).__name__,
        "evalue": str(err)[:10_000],
        "traceback": [line.rstrip("\n") for line in lines][-200:],
    }


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


def run_cell(source: str, index: int, namespace: dict, count: int, limits: dict) -> list[dict]:
    """Execute one cell as IPython would and return its nbformat outputs."""
    sink: list = []
    state = {"lines": 0, "chars": 0, "dropped": False, "dropped_lines": 0, **limits}
    out, err = Stream("stdout", sink, state), Stream("stderr", sink, state)
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    outputs: list[dict] = []
    error = None
    filename = f"<cell {index}>"
    try:
        tree = ast.parse(source, filename)
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr) and not source.rstrip().endswith(";"):
            last = ast.Expression(tree.body.pop().value)
        _exec(_compile(tree, filename, "exec"), namespace)
        if last is not None:
            value = _eval(_compile(last, filename, "eval"), namespace)
            if value is not None:
                text = _repr(value)
                if len(text) > state["max_chars"]:
                    text = text[: state["max_chars"]] + "..."
                result = {"output_type": "execute_result", "execution_count": count, "metadata": {}}
                result["data"] = {"text/plain": text}
                outputs.append(result)
                namespace["_"] = value
    except BaseException as exc:  # noqa: BLE001 (SystemExit and KeyboardInterrupt are cell errors too)
        error = exc
    finally:
        sys.stdout, sys.stderr = saved
    streams = [{"output_type": "stream", "name": name, "text": "".join(parts)} for name, parts in sink]
    if state["dropped"]:
        note = f"\n... output truncated ({state['dropped_lines']} more lines not kept) ...\n"
        for stream in reversed(streams):
            if stream["name"] == "stdout":
                stream["text"] += note
                break
        else:
            streams.append({"output_type": "stream", "name": "stdout", "text": note})
    outputs = streams + _summarise_figures() + outputs
    if error is not None:
        outputs.append(_error_output(error, os.path.abspath(__file__)))
    return outputs


def _send(sock: socket.socket, message: dict) -> None:
    sock.sendall((_dumps(message) + "\n").encode("utf-8", "replace"))


def child_main(job_sock: socket.socket, limits: dict, namespace: dict, count: int) -> None:
    """Run one job in this (forked) process, in ``namespace`` (the state after the instructor's prefix);
    never returns."""
    code = 0
    try:
        set_limits(limits)
        filtered = install_no_fork_filter()
        os.makedirs("/tmp/work", exist_ok=True)
        os.makedirs(os.environ.get("HOME", "/tmp/home"), exist_ok=True)
        os.chdir("/tmp/work")
        chunks = []
        while True:
            chunk = job_sock.recv(1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        job = json.loads(b"".join(chunks))
        _send(job_sock, {"started": True, "no_fork_filter": filtered})
        output_limits = {"max_lines": int(job["max_lines"]), "max_chars": int(job["max_chars"])}
        for index, source in job["cells"]:
            count += 1
            _send(job_sock, {"start": index})
            outputs = run_cell(source, index, namespace, count, output_limits)
            _send(job_sock, {"cell": index, "execution_count": count, "outputs": outputs})
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


# ---------------------------------------------------------------- the zygote


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


def snapshot() -> dict[str, tuple]:
    """The files of the writable places, as they are now (what the prefix left there), bounded in size."""
    files, total = {}, 0
    for top in WRITABLE:
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


def sweep(me: int, keep: dict) -> None:
    """Kill every process of the sandbox but this one and init, reap, and put the writable places back
    as ``keep`` (a :func:`snapshot`) says."""
    for _ in range(50):
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
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
        if not alive:
            break
        time.sleep(0.01)
    for top in WRITABLE:
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


def zygote(control_fd: int, modules: list[str]) -> None:
    """Serve the parent: ``prefix`` (once, first: run the instructor's cells that precede every answer, so
    that each child starts from their state) and ``job`` (fork a child for one submission)."""
    control = socket.socket(fileno=control_fd)
    started = time.monotonic()
    failed = preload(modules)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: children of the same uid cannot ptrace us
    import random

    random.seed(0)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(0)
    me = os.getpid()
    namespace, count, keep, served = {"__name__": "__main__", "__builtins__": __builtins__}, 0, {}, False
    _send(control, {"ready": True, "seconds": round(time.monotonic() - started, 3), "preload_failed": failed})
    for request, fds in _messages(control):
        op = request.get("op")
        if op == "prefix" and not served:
            limits = {"max_lines": int(request["max_lines"]), "max_chars": int(request["max_chars"])}
            cells = {}
            for index, source in request["cells"]:
                count += 1
                cells[index] = [count, run_cell(source, index, namespace, count, limits)]
            threads = len(os.listdir("/proc/self/task"))
            try:
                keep = snapshot()
                problem = None if threads == 1 else f"the prefix left {threads - 1} threads running"
            except (OSError, RuntimeError) as err:
                problem = str(err)
            _send(control, {"prefix": cells, "problem": problem})
            if problem:
                return
            continue
        if op != "job" or not fds:
            for fd in fds:
                os.close(fd)
            _send(control, {"error": f"unexpected request {op!r}"})
            continue
        served = True
        job_fd = fds[0]
        for fd in fds[1:]:
            os.close(fd)
        sweep(me, keep)
        pid = os.fork()
        if pid == 0:
            control.close()
            child_main(socket.socket(fileno=job_fd), request.get("limits", {}), namespace, count)
        os.close(job_fd)
        how, code = wait_child(pid, float(request["deadline"]))
        sweep(me, keep)
        _send(control, {"how": how, "code": code})


def main(argv=None) -> None:
    """Run the zygote (``runner.py --control-fd N --preload a,b``)."""
    parser = argparse.ArgumentParser(description="The grading sandbox's zygote (run by autograder.sandbox).")
    parser.add_argument("--control-fd", type=int, required=True)
    parser.add_argument("--preload", default="")
    args = parser.parse_args(argv)
    zygote(args.control_fd, [m for m in args.preload.split(",") if m])


if __name__ == "__main__":
    main()
