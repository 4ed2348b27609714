"""Run a section notebook's cells with chosen answers, without a Jupyter kernel, and report each test.

This is how ``tests/`` proves the grading sound without a kernel per case:
for every grade_id, the solution passes the visible and hidden tests, the
untouched stub fails them, and every mutant fails the hidden tests. (The real
notebooks are also run in Jupyter kernels, by nbval and by the grader.)

Each section runs in a process of its own (:mod:`tests.support.zygote`), started on first use in a test worker:
it executes the notebook once with the solutions and forks per answer from a snapshot taken just before the stub, so
the prefix (setup, data, smoke training, demos) runs once per section, not once per answer. The result is what a
fresh from-the-top run with those answers gives.

Conventions the book follows and ``tests/unit/course/test_book_structure.py`` checks: the
test cell of stub ``G`` has grade_id ``test_G``; hidden tests live in
``autograder/sections/<module>/test_G.py`` (:class:`course.section.Section`).
"""

from __future__ import annotations

import atexit
import os
import select
import subprocess
import sys
from collections import OrderedDict

from course.notebooks import ROOT
from tests.support.outcome import Run, TestOutcome
from tests.support.zygote import receive, send

__all__ = ["Run", "TestOutcome", "run_section"]

#: Sections whose processes a test worker keeps at once (tests/conftest.py sends a section's cases to one worker,
#: together); each holds a snapshot per stub, mostly shared pages.
KEEP = 2
#: The longest one request may take (a solved run of the lab, smoke training included, takes well under a minute).
TIMEOUT_S = 900
LOGS = ROOT / "_build" / "tests" / "inprocess"


class _Section:
    """The client end of one section's zygote process."""

    def __init__(self, slug: str, hidden: bool):
        LOGS.mkdir(parents=True, exist_ok=True)
        self.log = LOGS / f"{slug}.{os.getpid()}.log"
        self.log.write_text("")
        to_child_r, self.to_child = os.pipe()
        self.from_child, from_child_w = os.pipe()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.support.zygote", slug, str(to_child_r), str(from_child_w), str(self.log)]
            + ["1" if hidden else "0"],
            cwd=ROOT,
            env=env,
            pass_fds=(to_child_r, from_child_w),
            stdin=subprocess.DEVNULL,
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self.slug = slug

    def request(self, answers: dict, until: str | None) -> Run:
        send(self.to_child, (answers, until))
        ready, _, _ = select.select([self.from_child], [], [], TIMEOUT_S)
        reply = receive(self.from_child) if ready else ("error", f"no reply within {TIMEOUT_S} s")
        if reply is None:
            reply = ("error", f"the process of {self.slug} died ({self.proc.poll()})")
        status, value = reply
        if status != "ok":
            self.close()
            tail = self.log.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"{value}\n--- the last output of the notebook's process ({self.log}):\n{tail}")
        return value

    def close(self) -> None:
        for fd in (self.to_child, self.from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


_OPEN: OrderedDict[tuple, _Section] = OrderedDict()


@atexit.register
def _close_all() -> None:
    while _OPEN:
        _OPEN.popitem()[1].close()


def _key(slug: str, hidden: bool) -> tuple:
    from autograder import assemble

    sec = assemble.as_section(slug)
    stamps = tuple(p.stat().st_mtime_ns for p in (sec.path, sec.solutions) if p.exists())
    return slug, hidden, stamps


def run_section(
    slug: str, *, answers: dict[str, str | None] | None = None, until: str | None = None, hidden: bool = True
) -> Run:
    """Execute ``book/<slug>.md`` top to bottom, as in a fresh namespace.

    ``answers`` maps a stub's grade_id to the source that replaces the whole
    stub cell (a mutant is written as a student would write the cell), or to
    ``None`` to leave the stub as the student receives it; other stubs are
    filled from the section's solutions. Stops after test cell ``until``.
    Plain cells must not fail (a failure raises ``RuntimeError``), except
    cells tagged ``uses-answers``, whose errors are recorded.
    """
    key = _key(slug, hidden)
    client = _OPEN.pop(key, None)
    if client is None or client.proc.poll() is not None:
        client = _Section(slug, hidden)
    _OPEN[key] = client  # most recently used last
    while len(_OPEN) > KEEP:
        _OPEN.popitem(last=False)[1].close()
    try:
        return client.request(dict(answers or {}), until)
    except RuntimeError:
        _OPEN.pop(key, None)
        raise
