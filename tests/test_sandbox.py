"""The grading sandbox (autograder.sandbox) and what runs inside it (autograder.runner).

The cell runner and the seccomp filter are checked in plain processes; everything
else in a real bubblewrap sandbox (skipped, with the reason, where bwrap is absent).
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys
import textwrap

import pytest

from autograder import runner
from autograder import sandbox as sb

ROOT = sb.RUNNER.parent.parent
needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap is not installed (sudo apt-get install bubblewrap)"
)
LIMITS = {"max_lines": 50, "max_chars": 10_000}


def stream_text(outputs, name="stdout") -> str:
    return "".join(o["text"] for o in outputs if o["output_type"] == "stream" and o["name"] == name)


# ---------------------------------------------------------------- the cell runner, in this process


def test_run_cell_mimics_ipython_last_expression_and_semicolon():
    ns = {"__name__": "__main__"}
    out = runner.run_cell("x = 20\nx + 22", 0, ns, 1, LIMITS)
    assert out == [
        {"output_type": "execute_result", "execution_count": 1, "metadata": {}, "data": {"text/plain": "42"}}
    ]
    assert runner.run_cell("x + 1;", 1, ns, 2, LIMITS) == []  # a trailing semicolon hides the value
    assert runner.run_cell("x = None\nx", 2, ns, 3, LIMITS) == []  # None is not displayed


def test_run_cell_reports_errors_as_nbgrader_expects():
    ns = {"__name__": "__main__"}
    out = runner.run_cell("print('before')\nraise ValueError('bad answer')", 0, ns, 1, LIMITS)
    assert stream_text(out) == "before\n"
    error = out[-1]
    assert error["output_type"] == "error" and error["ename"] == "ValueError" and error["evalue"] == "bad answer"
    assert error["traceback"][-1] == "ValueError: bad answer"
    assert not any("runner.py" in line for line in error["traceback"])  # the runner's frames are hidden
    for source, ename in (("raise SystemExit(3)", "SystemExit"), ("raise KeyboardInterrupt", "KeyboardInterrupt")):
        assert runner.run_cell(source, 1, ns, 2, LIMITS)[-1]["ename"] == ename


def test_run_cell_keeps_stdout_and_stderr_apart_in_order():
    src = "import sys\nprint('a')\nprint('b', file=sys.stderr)\nprint('c')"
    out = runner.run_cell(src, 0, {"__name__": "__main__"}, 1, LIMITS)
    assert [(o["name"], o["text"]) for o in out] == [("stdout", "a\n"), ("stderr", "b\n"), ("stdout", "c\n")]


def test_run_cell_truncates_a_flood_of_output():
    out = runner.run_cell("for i in range(10**5):\n    print(i)", 0, {"__name__": "__main__"}, 1, LIMITS)
    text = stream_text(out)
    kept = [line for line in text.splitlines() if line.isdigit()]
    assert kept == [str(i) for i in range(50)]
    assert f"{10**5 - 50} more lines not kept" in text
    out = runner.run_cell("print('x' * 10**6)", 0, {"__name__": "__main__"}, 1, LIMITS)
    assert len(stream_text(out)) < 11_000


def test_no_fork_filter_refuses_processes_but_not_threads():
    code = textwrap.dedent(
        """
        import os, subprocess, sys, threading
        sys.path.insert(0, sys.argv[1])
        import runner
        assert runner.install_no_fork_filter()
        box = []
        t = threading.Thread(target=box.append, args=(1,)); t.start(); t.join()
        for attempt in (os.fork, lambda: subprocess.run(["true"])):
            try:
                attempt()
                print("created a process"); os._exit(1)
            except BlockingIOError:
                pass
        print("threads", box)
        """
    )
    if runner.no_fork_filter() is None:
        pytest.skip("no seccomp filter for this architecture")
    done = subprocess.run([sys.executable, "-c", code, str(sb.RUNNER.parent)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "threads [1]"


def test_bwrap_missing_is_refused_with_instructions(monkeypatch):
    monkeypatch.setenv("QKV_BWRAP", "/nonexistent/bwrap")
    with pytest.raises(sb.SandboxUnavailable, match="apt-get install bubblewrap"):
        sb.check_available()


def test_paths_the_sandbox_shows_cannot_hold_the_course(tmp_path):
    sb.check_hidden([tmp_path])  # a private folder: fine
    with pytest.raises(sb.SandboxUnavailable, match="shows to student code"):
        sb.check_hidden([ROOT / "lib" / "course"])
    visible = sb.visible_paths()
    assert ROOT not in visible and all(ROOT not in p.parents or p.name in ("lib", ".venv") for p in visible)


# ---------------------------------------------------------------- in a real sandbox


@pytest.fixture(scope="module")
def box():
    with sb.Sandbox(sb.Limits(deadline=20, grace=20)) as sandbox:
        yield sandbox


def run(box, *sources, **limits):
    saved = box.limits
    box.limits = dataclasses.replace(saved, **limits)
    try:
        return box.run([(i, textwrap.dedent(s)) for i, s in enumerate(sources)])
    finally:
        box.limits = saved


def printed(result, index=0) -> str:
    return stream_text(result.cells[index][1])


@needs_bwrap
@pytest.mark.slow
def test_student_code_sees_no_network_and_no_course(box, tmp_path):
    (tmp_path / "secret.txt").write_text("hidden tests")
    result = run(
        box,
        f"""
        import os, socket
        for host in (("1.1.1.1", 80), ("127.0.0.1", 22)):
            try:
                socket.create_connection(host, timeout=2)
                print("reached", host)
            except OSError:
                pass
        try:
            socket.getaddrinfo("pypi.org", 443)
            print("resolved")
        except OSError:
            pass
        print(sorted(os.listdir({str(ROOT)!r})))
        for path in ({str(tmp_path / "secret.txt")!r}, {str(ROOT / "autograder" / "sections")!r},
                     {str(ROOT / "solutions")!r}, {str(ROOT / "_build")!r}):
            print(path, os.path.exists(path))
        print(os.getuid())
        """,
    )
    assert result.how == "done", result.detail
    lines = printed(result).splitlines()
    assert not any(line.startswith(("reached", "resolved")) for line in lines)
    assert set(eval(lines[0])) <= {"lib", ".venv"}  # only what Python needs of the repository
    assert all(line.endswith(" False") for line in lines[1:5])
    assert lines[5] == "65534"


@needs_bwrap
@pytest.mark.slow
def test_limits_hold_and_the_sandbox_survives_them(box):
    result = run(
        box,
        "import torch\nx = torch.ones(10**9)  # 4 GB, over the 3 GiB limit",
        """
        import os, resource
        try:
            os.fork()
            print("forked")
        except OSError as err:
            print("fork refused", err.errno)
        print(resource.getrlimit(resource.RLIMIT_NPROC), resource.getrlimit(resource.RLIMIT_AS)[0] // 2**30)
        """,
        "open('/tmp/big', 'wb').write(b'x' * (100 * 2**20))",
        "for path in ('/usr/evil', '/evil', '/etc/evil'):\n    try:\n        open(path, 'w')\n    except OSError:\n"
        "        print('refused', path)",
    )
    assert result.how == "done", result.detail
    assert result.cells[0][1][-1]["ename"] == "RuntimeError" and "allocate" in result.cells[0][1][-1]["evalue"]
    assert printed(result, 1).splitlines() == ["fork refused 11", "(64, 64) 3"]
    assert result.cells[2][1][-1]["ename"] == "OSError"  # file size limit (64 MiB)
    assert printed(result, 3).count("refused") == 3


@needs_bwrap
@pytest.mark.slow
def test_each_run_starts_clean(box):
    first = run(box, "import torch\ntorch.secret = 42\nopen('/tmp/left-behind', 'w').write('x')\nprint(len({'a','b'}))")
    second = run(
        box,
        "import os, torch\nprint(hasattr(torch, 'secret'), os.path.exists('/tmp/left-behind'))\n"
        "print(list({'alpha', 'beta', 'gamma', 'delta'}))",
    )
    third = run(box, "print(list({'alpha', 'beta', 'gamma', 'delta'}))")
    assert first.how == second.how == "done"
    assert printed(second).splitlines()[0] == "False False"
    assert printed(second).splitlines()[1] == printed(third).strip()  # PYTHONHASHSEED is fixed: same order


@needs_bwrap
@pytest.mark.slow
def test_a_deadline_kills_the_notebook_but_keeps_finished_cells(box):
    result = run(box, "print('first')", "while True:\n    pass", "print('never')", deadline=3)
    assert result.how == "timeout"
    assert printed(result) == "first\n" and 1 not in result.cells and 2 not in result.cells
    assert result.running == 1
    assert run(box, "print('next')").how == "done"  # the sandbox is still usable


@needs_bwrap
@pytest.mark.slow
def test_a_thread_sleeping_forever_does_not_hold_the_result(box):
    result = run(box, "import threading, time\nthreading.Thread(target=time.sleep, args=(10**6,)).start()", deadline=6)
    assert result.how == "done"


@needs_bwrap
@pytest.mark.slow
@pytest.mark.parametrize(
    "source, detail",
    [("import os\nos._exit(7)", "exited with status 7"), ("import ctypes\nctypes.string_at(0)", "SIGSEGV")],
)
def test_a_dying_notebook_keeps_the_cells_it_finished(box, source, detail):
    result = run(box, "print('ok')", source, "print('never')")
    assert result.how == "died" and detail in result.detail
    assert printed(result) == "ok\n" and result.running == 1 and 2 not in result.cells


@needs_bwrap
@pytest.mark.slow
def test_students_cannot_reach_the_zygote_and_killing_it_costs_only_themselves(box):
    peek = run(
        box,
        """
        import os
        for name in ("mem", "environ"):
            try:
                open(f"/proc/{os.getppid()}/{name}", "rb").read(1)
                print("read", name)
            except OSError:
                print("refused", name)
        """,
    )
    assert printed(peek).splitlines() == ["refused mem", "refused environ"]
    starts = box.starts
    killer = run(box, "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nprint('done')")
    assert killer.how in ("done", "died")  # the child may finish, or die with its sandbox
    after = run(box, "print('fresh')")
    assert after.how == "done" and printed(after) == "fresh\n" and box.starts > starts


@needs_bwrap
@pytest.mark.slow
def test_the_shared_prefix_runs_once_and_every_child_starts_from_its_state(box):
    prefix = [(0, "x = 41\nopen('/tmp/data.txt', 'w').write('kept')"), (1, "print('prefix ran')")]
    spoil = "print(x + 1, open('/tmp/data.txt').read())\nx = 0\nopen('/tmp/data.txt', 'w').write('spoiled')"
    first = box.run([(2, spoil)], prefix=prefix)
    starts = box.starts
    second = box.run([(2, spoil)], prefix=prefix)
    assert first.how == second.how == "done" and box.starts == starts  # the same zygote served both
    assert printed(first, 1) == printed(second, 1) == "prefix ran\n"
    assert printed(first, 2) == printed(second, 2) == "42 kept\n"  # the first child's changes did not stay
    assert first.cells[2][0] == 3  # execution counts go on from the prefix's


@needs_bwrap
@pytest.mark.slow
def test_a_prefix_that_leaves_threads_is_run_by_each_child_instead(box):
    prefix = [
        (0, "import threading, time\nthreading.Thread(target=time.sleep, args=(600,), daemon=True).start()\ny = 1")
    ]
    result = box.run([(1, "print(y)")], prefix=prefix)
    assert result.how == "done" and printed(result, 1) == "1\n"
    assert box._unsafe  # noted, so that the next submission of this notebook does not try again


@needs_bwrap
@pytest.mark.slow
def test_a_stopped_zygote_cannot_hold_the_grader(box):
    starts = box.starts
    result = run(
        box, "import os, signal\nos.kill(os.getppid(), signal.SIGSTOP)\nwhile True:\n    pass", deadline=4, grace=3
    )
    assert result.how == "timeout" and not box.alive  # this process's own deadline killed the whole sandbox
    assert run(box, "print('fresh')").how == "done" and box.starts == starts + 1
