"""The process behind :func:`tests.support.inprocess.run_section`: a section executed once, forked per answer.

``python -m tests.support.zygote SLUG READ_FD WRITE_FD LOG`` executes the section's cells in order with the
solutions, as a from-the-top run would, each as one cell of the grader's IPython shell
(:func:`autograder.sandboxed.shell.make_shell`: a kernel's semantics, its last expression displayed, outputs
dropped), after importing what the grader's sandbox preloads. Just before each stub cell it forks a *snapshot*: a
copy of the process at that point, which waits. A request for an answer to stub ``G`` goes to ``G``'s snapshot,
which forks once more; that child runs the answer and the cells after it up to the test cell asked for, sends the
:class:`Run` back and exits. So the prefix of a stub (setup, data, smoke training, demos) runs once per section and
test session instead of once per answer, and copy-on-write keeps one answer's state from reaching the next, as in
the grader's zygote (``autograder/sandboxed/zygote.py``). Torch runs on one thread here, which is what makes forking
safe.

Requests and replies are pickled over two pipes given by file descriptor; the cells' own output goes to ``LOG``.
A request is ``(answers, until, hidden)``: ``answers`` maps grade_ids to the source that replaces the stub cell
(``None``: the stub as released); every other stub gets its solution. An empty ``answers`` is the solved run, to
the last cell: the session's one execution of the solved notebook.
The reply is ``("ok", Run)`` or ``("error", message)`` (a plain cell failed, or the answer's process died).
"""

from __future__ import annotations

import io
import os
import pickle
import sys
import traceback
from multiprocessing.connection import Connection, Pipe

from autograder.sandboxed import cells, guard
from autograder.sandboxed.capture import CellOutputs
from autograder.sandboxed.shell import make_shell
from tests.support.outcome import Run, TestOutcome


def _exec(shell, source: str) -> str | None:
    """Run ``source`` as one cell of IPython's ``shell``, as a kernel runs it (its last expression displayed);
    the exception's one-line summary if it raised, else None."""
    result = shell.run_cell(source, store_history=False)
    err = result.error_before_exec or result.error_in_exec
    if err is None:
        return None
    return "".join(traceback.format_exception_only(type(err), err)).strip()


#: The grader's default output limits (``autograder.grading``): only a tampering report is read from them here.
OUTPUT_LIMITS = {"max_lines": 50, "max_chars": 10_000}


class PlainCellFailed(RuntimeError):
    """A cell that is neither a stub nor a test failed (a broken page, not a wrong answer)."""


class Notebook:
    """The state of one execution of a section: its namespace, the next cell to run, the tests so far."""

    def __init__(self, slug: str):
        import matplotlib

        matplotlib.use("Agg")
        from autograder import assemble
        from course import notebooks as nbs

        self.slug, self.nbs, self.assemble = slug, nbs, assemble
        self.sec = assemble.as_section(slug)
        self.solutions = assemble.solutions_module(self.sec)
        self.cells = nbs.read(self.sec.path).cells
        self.shell = make_shell()  # the grader's IPython shell: cells run as in a kernel, outputs dropped
        # What the hidden tests rely on, recorded as the grader's zygote records it: now, after the imports, and
        # again just before the first stub (the course's own cells before it are trusted, as the grader's prefix).
        guard.CURRENT = guard.Guard(self.shell)
        self.trusted_until = self.stub_index(next(nbs.grade_id(c) for c in self.cells if nbs.role(c) == "stub"))
        self.run = Run()
        self.next = 0
        self.count = 0

    def stub_index(self, grade: str) -> int:
        for index, cell in enumerate(self.cells):
            if cell.cell_type == "code" and self.nbs.role(cell) == "stub" and self.nbs.grade_id(cell) == grade:
                return index
        raise KeyError(f"{self.slug} has no stub {grade!r}")

    def step(self, answers: dict, hidden: bool) -> str | None:
        """Run cell ``self.next``; the grade_id of the test cell it was, if it was one."""
        import matplotlib.pyplot as plt

        index, nbs = self.next, self.nbs
        cell = self.cells[index]
        self.next += 1
        if index == self.trusted_until:
            guard.CURRENT.capture()
        if cell.cell_type != "code":
            return None
        self.count += 1
        role, grade = nbs.role(cell), nbs.grade_id(cell)
        try:
            if role == "stub":
                if grade in answers:
                    source = cell.source if answers[grade] is None else answers[grade]
                else:
                    source = self.assemble.fill_stubs(cell.source, grade, self.solutions, False)
                _exec(self.shell, source)
            elif role == "test":
                saved, sys.stderr = sys.stderr, io.StringIO()  # what the grader would record as the cell's stderr
                try:
                    outcome = TestOutcome(visible_error=_exec(self.shell, cell.source))
                    extra = self.assemble.hidden_tests(self.sec, grade) if hidden else None
                    # The grader runs the hidden part only after the visible part passed; here it runs either way,
                    # so that the suite can show that the hidden tests reject each known mistake on their own.
                    if extra is not None:
                        outcome.hidden_ran = True
                        outcome.hidden_error = self.hidden(extra)
                finally:
                    written, sys.stderr = sys.stderr.getvalue(), saved
                outcome.stderr = written
                self.run.tests[grade] = outcome
                return grade
            else:
                error = _exec(self.shell, cell.source)
                if error:
                    if nbs.USES_ANSWERS in cell.metadata.get("tags", []):
                        self.run.demo_errors[index] = error
                    else:
                        what = f"{self.slug}: cell {index} failed, and it is not a stub or a test"
                        raise PlainCellFailed(f"{what}:\n{error}")
        finally:
            plt.close("all")
        return None

    def hidden(self, source: str) -> str | None:
        """Run a test cell's hidden part exactly as the grader does (:func:`autograder.sandboxed.guard.run_hidden`):
        in a namespace of its own, checked before and after for changes to what it relies on. The one-line summary
        of what it raised, or of the tampering found, else None."""
        outputs = CellOutputs(OUTPUT_LIMITS, self.count)
        error = guard.run_hidden(self.shell, source, 0, self.count, outputs)
        if error is not None:
            cells.name_stub(error)
            return "".join(traceback.format_exception_only(type(error), error)).strip()
        tampered = [o for o in outputs.finish() if o.get("output_type") == "error"]
        return f"{tampered[0]['ename']}: {tampered[0]['evalue']}" if tampered else None

    def finish(self, answers: dict, until: str | None, hidden: bool) -> Run:
        """Run the remaining cells (up to and including test cell ``until``)."""
        while self.next < len(self.cells):
            if self.step(answers, hidden) == until and until is not None:
                break
        return self.run


def send(fd: int, message) -> None:
    data = pickle.dumps(message)
    os.write(fd, len(data).to_bytes(8, "little"))
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def receive(fd: int):
    """One pickled message from ``fd``, or None at end of file."""
    head = read_exactly(fd, 8)
    if head is None:
        return None
    return pickle.loads(read_exactly(fd, int.from_bytes(head, "little")) or b"")


def read_exactly(fd: int, n: int) -> bytes | None:
    chunks, left = [], n
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _answer_in_child(nb: Notebook, answers: dict, until: str | None, hidden: bool):
    """Fork; the child finishes the run with ``answers`` and sends it back. The reply, in this process."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the answer's process: never returns
        os.close(read_fd)
        try:
            reply = ("ok", nb.finish(answers, until, hidden))
        except PlainCellFailed as err:
            reply = ("error", str(err))
        except BaseException:  # noqa: BLE001
            reply = ("error", traceback.format_exc())
        try:
            send(write_fd, reply)
        finally:
            os._exit(0)
    os.close(write_fd)
    reply = receive(read_fd)
    os.close(read_fd)
    _, status = os.waitpid(pid, 0)
    if reply is None:
        reply = ("error", f"{nb.slug}: the process running the answer died ({_status(status)}) before it replied")
    return reply


def _status(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"signal {os.WTERMSIG(status)}"
    return f"exit status {os.WEXITSTATUS(status)}"


def _snapshot_loop(conn: Connection, nb: Notebook) -> None:
    """A snapshot's life: answer requests for its stub until its parent closes the connection."""
    while True:
        try:
            request = conn.recv()
        except EOFError:
            os._exit(0)
        conn.send(_answer_in_child(nb, *request))


class Zygote:
    """The section's executing process: advances through the cells, keeping a snapshot before each stub."""

    def __init__(self, slug: str, hidden: bool, worker_fds: tuple[int, ...] = ()):
        self.nb = Notebook(slug)
        self.hidden = hidden
        self.worker_fds = worker_fds
        self.snapshots: dict[str, Connection] = {}
        self.failure: str | None = None

    def _snapshot_if_stub(self) -> None:
        """If the next cell is a stub, fork the snapshot that waits just before it (once per stub)."""
        nb = self.nb
        if nb.next >= len(nb.cells):
            return
        cell = nb.cells[nb.next]
        if cell.cell_type != "code" or nb.nbs.role(cell) != "stub" or nb.nbs.grade_id(cell) in self.snapshots:
            return
        ours, theirs = Pipe()
        if os.fork() == 0:
            ours.close()
            for other in self.snapshots.values():
                other.close()
            for fd in self.worker_fds:  # only the zygote talks to the worker
                os.close(fd)
            _snapshot_loop(theirs, nb)
        theirs.close()
        self.snapshots[nb.nbs.grade_id(cell)] = ours

    def _advance_to(self, stop: int) -> None:
        """Execute cells (with the solutions) until cell ``stop`` is next, forking a snapshot before each stub on
        the way and before ``stop`` itself."""
        nb = self.nb
        while self.failure is None:
            self._snapshot_if_stub()
            if nb.next >= stop:
                return
            try:
                nb.step({}, self.hidden)
            except PlainCellFailed as err:
                self.failure = str(err)

    def handle(self, answers: dict, until: str | None):
        nb = self.nb
        if not answers:  # the solved run: this process itself goes on to the end
            self._advance_to(len(nb.cells))
            return ("error", self.failure) if self.failure else ("ok", nb.run)
        first = min(answers, key=nb.stub_index)
        self._advance_to(nb.stub_index(first))
        if first not in self.snapshots:
            return ("error", self.failure or f"{nb.slug}: no snapshot before stub {first!r}")
        conn = self.snapshots[first]
        conn.send((answers, until, self.hidden))
        return conn.recv()


def pack_widget_messages_as_a_kernel() -> None:
    """Make every comm that a widget opens here pack its messages as a Jupyter kernel does before it sends them
    (ipykernel's ``Comm.publish_msg``: ``json_clean``, then the session's ``json_packer``), and send nothing.

    Outside a kernel, ipywidgets gets ``comm``'s ``DummyComm``, which drops each message unread; a panel whose
    state a kernel could not send (a value JSON cannot hold) would then build here and fail in Jupyter. With this,
    the section's explorers, which the solved run builds as ipywidgets panels (Jupyter's setting), fail here too."""
    import comm
    from ipykernel.jsonutil import json_clean
    from jupyter_client.session import json_packer

    class KernelPackedComm(comm.DummyComm):
        def publish_msg(self, msg_type, data=None, metadata=None, buffers=None, **keys):
            json_packer(json_clean(dict(data={} if data is None else data, comm_id=self.comm_id, **keys)))
            json_packer(json_clean({} if metadata is None else metadata))

    comm.create_comm = KernelPackedComm


def main(argv: list[str]) -> None:
    slug, read_fd, write_fd, log, hidden = argv[0], int(argv[1]), int(argv[2]), argv[3], argv[4] == "1"
    out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.environ.setdefault("MPLBACKEND", "Agg")
    from autograder.sandbox import PRELOAD
    from autograder.sandboxed.zygote import preload

    # The grader's own preload, before the first cell and for the same reason: otherwise every answer's child whose
    # hidden tests use 'meta' tensors (the device checks) imports torch._dynamo and sympy again on its own, about a
    # second each. It also runs torch on one thread, as tests/conftest.py does, which is what makes the forks safe.
    for failure in preload(list(PRELOAD)):
        print(f"[zygote] could not preload {failure}", flush=True)
    pack_widget_messages_as_a_kernel()
    try:
        zygote = Zygote(slug, hidden, (read_fd, write_fd))
    except BaseException:  # noqa: BLE001
        startup = traceback.format_exc()
        zygote = None
    while True:
        request = receive(read_fd)
        if request is None:
            os._exit(0)
        if zygote is None:
            reply = ("error", f"{slug}: the notebook's process could not start:\n{startup}")
        else:
            try:
                reply = zygote.handle(*request)
            except BaseException:  # noqa: BLE001
                reply = ("error", traceback.format_exc())
        send(write_fd, reply)


if __name__ == "__main__":
    main(sys.argv[1:])
