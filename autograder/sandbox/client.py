"""The grader's side of a sandbox: :class:`Sandbox` starts one, sends it the course's prefix and each notebook over a
socket, and reads back every cell's outputs, killing the whole sandbox when a deadline passes."""

from __future__ import annotations

import collections
import json
import os
import selectors
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from autograder.sandbox.common import PRELOAD, SANDBOXED, Limits, PrefixUnsafe, RunResult, SandboxUnavailable
from autograder.sandbox.launch import bwrap_args, direct_args, sandbox_env
from autograder.sandbox.paths import sandbox_user, trained_paths
from autograder.sandboxed import protocol


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
