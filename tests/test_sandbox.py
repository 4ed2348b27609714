"""The grading sandbox (autograder.sandbox) and what runs inside it (the package autograder.sandboxed).

The cell runner and the seccomp filter are checked in plain processes (the runner's IPython shell is a
process-wide singleton: made in this process, it would answer ``get_ipython()`` in every later test);
everything else in a real bubblewrap sandbox (skipped, with the reason, where bwrap is absent).
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from autograder import sandbox as sb
from autograder.grading.outputs import clean_outputs
from autograder.sandboxed import guard, protocol, seccomp

ROOT = sb.SANDBOXED.parent.parent
needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap is not installed (sudo apt-get install bubblewrap)"
)
LIMITS = {"max_lines": 50, "max_chars": 10_000}


def stream_text(outputs, name="stdout") -> str:
    return "".join(o["text"] for o in outputs if o["output_type"] == "stream" and o["name"] == name)


# ---------------------------------------------------------------- the cell runner, in a plain process

RUN_CELLS = """
import json, sys
sys.path.insert(0, sys.argv[1])
from sandboxed import cells as run
from sandboxed.shell import make_shell
shell = make_shell()
cells, limits = json.load(sys.stdin)
print(json.dumps([run.run_cell(shell, source, count, limits) for count, source in enumerate(cells, 1)]))
"""


@pytest.fixture
def run_cells(tmp_path):
    """Run cells one after another in the runner's IPython shell, in a fresh process; returns each cell's outputs
    (the cells are numbered 1, 2, ... as a kernel numbers them)."""

    def run(*sources, limits=LIMITS):
        env = {**os.environ, "HOME": str(tmp_path), "MPLBACKEND": "Agg", "MPLCONFIGDIR": str(tmp_path / "mpl")}
        done = subprocess.run(
            [sys.executable, "-c", RUN_CELLS, str(sb.SANDBOXED.parent)],
            input=json.dumps([[textwrap.dedent(s) for s in sources], limits]),
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    return run


def test_run_cell_shows_the_last_expression_as_ipython_does(run_cells):
    value, hidden, none, underscore = run_cells("x = 20\nx + 22", "x + 1;", "x = None\nx", "_ + 1")
    assert value == [
        {"output_type": "execute_result", "execution_count": 1, "metadata": {}, "data": {"text/plain": "42"}}
    ]
    assert hidden == []  # a trailing semicolon hides the value
    assert none == []  # None is not displayed
    assert underscore[0]["data"] == {"text/plain": "43"}  # _ is the last value shown, as in Jupyter


def test_run_cell_reports_errors_as_nbgrader_expects(run_cells):
    raised, exited, interrupted = run_cells(
        "print('before')\nraise ValueError('bad answer')", "raise SystemExit(3)", "raise KeyboardInterrupt"
    )
    assert stream_text(raised) == "before\n"
    error = raised[-1]
    assert error["output_type"] == "error" and error["ename"] == "ValueError" and error["evalue"] == "bad answer"
    assert error["traceback"] == [
        "Traceback (most recent call last):",
        "  Cell In[1], line 2, in <module>",
        "ValueError: bad answer",
    ]  # no frame of the runner or of IPython
    assert [o["ename"] for o in exited + interrupted if o["output_type"] == "error"] == [
        "SystemExit",
        "KeyboardInterrupt",
    ]


def test_tracebacks_show_no_line_of_a_cell_so_feedback_keeps_hidden_tests_hidden(run_cells):
    (out,) = run_cells(
        """
        def check_secretly(answer):
            expected_secret = 42
            assert answer == expected_secret, "not the answer"

        check_secretly(41)
        """
    )
    error = out[-1]
    assert error["ename"] == "AssertionError" and error["evalue"] == "not the answer"
    assert error["traceback"] == [  # where, without the line that failed (nor any other line of a cell)
        "Traceback (most recent call last):",
        "  Cell In[1], line 5, in <module>",
        "  Cell In[1], line 3, in check_secretly",
        "AssertionError: not the answer",
    ]


def test_a_failed_check_and_an_unanswered_stub_are_their_message_alone_as_in_jupyter(run_cells):
    """As ``checks.install()`` shows them in Jupyter: the feedback of a failed check is its report, not frames of
    ``qkv/checks.py``; an unanswered stub's error names the stub. Any other error keeps its frames."""
    setup, failed, stub, other = run_cells(
        "import torch\nfrom qkv import checks\nchecks.install();",
        "checks.check_shape(torch.zeros(2, 3), (3, 2), 'weights', hint='one row per query')",
        "def square(x):\n    # YOUR CODE HERE\n    raise NotImplementedError()\n\nsquare(2)",
        "def f():\n    raise NotImplementedError('not on this device')\n\nimport math\nmath.sqrt(-1)",
    )
    assert setup == []
    error = failed[-1]
    assert error["ename"] == "CheckFailed"
    assert error["traceback"][0] == "CheckFailed: weights has the wrong shape"
    assert any("hint: one row per query" in line for line in error["traceback"])
    assert not any("checks.py" in line or "Traceback" in line for line in error["traceback"])
    error = stub[-1]
    assert error["ename"] == "NotImplementedError" and "square" in error["evalue"]
    assert error["traceback"] == [f"NotImplementedError: {error['evalue']}"]
    error = other[-1]
    assert error["ename"] == "ValueError" and error["traceback"][0] == "Traceback (most recent call last):"


def test_run_cell_keeps_stdout_and_stderr_apart_in_order(run_cells):
    (out,) = run_cells("import sys\nprint('a')\nprint('b', file=sys.stderr)\nprint('c')")
    assert [(o["name"], o["text"]) for o in out] == [("stdout", "a\n"), ("stderr", "b\n"), ("stdout", "c\n")]


def test_run_cell_truncates_a_flood_of_output(run_cells):
    lines, wide, displays = run_cells(
        "for i in range(10**5):\n    print(i)", "print('x' * 10**6)", "for i in range(10**4):\n    display(i)"
    )
    text = stream_text(lines)
    kept = [line for line in text.splitlines() if line.isdigit()]
    assert kept == [str(i) for i in range(50)]
    assert f"{10**5 - 50} more lines not kept" in text
    assert len(stream_text(wide)) < 11_000
    shown = [o["data"]["text/plain"] for o in displays if o["output_type"] == "display_data"]
    assert shown == [str(i) for i in range(50)]  # display() draws on the same budget as print()
    assert f"{10**4 - 50} more lines not kept" in stream_text(displays)


def test_display_shows_rich_outputs_in_order_as_jupyter_does(run_cells):
    shown, updated, cleared = run_cells(
        """
        display(41)
        print("between")
        display({"answer": 42})
        "last"
        """,
        """
        handle = display("draft", display_id=True)
        handle.update("final")
        """,
        """
        from IPython.display import clear_output
        for step in range(3):
            clear_output(wait=True)
            print("step", step)
        """,
    )
    assert [(o["output_type"], o.get("data", {}).get("text/plain", o.get("text"))) for o in shown] == [
        ("display_data", "41"),
        ("stream", "between\n"),
        ("display_data", "{'answer': 42}"),
        ("execute_result", "'last'"),
    ]
    assert shown[0] == {"output_type": "display_data", "data": {"text/plain": "41"}, "metadata": {}}
    assert [o["data"]["text/plain"] for o in updated] == ["'final'"]
    assert cleared == [{"output_type": "stream", "name": "stdout", "text": "step 2\n"}]


def test_line_magics_run_as_in_jupyter(run_cells):
    timed, clocked, after, figure = run_cells(
        "%timeit -n 2 -r 3 sum(range(100))",
        "%time y = 6 * 7",
        "y",
        "%matplotlib inline\nimport matplotlib.pyplot as plt\nplt.plot([1, 2, 3]);",
    )
    assert "per loop (mean ± std. dev. of 3 runs, 2 loops each)" in stream_text(timed)
    assert "Wall time" in stream_text(clocked)
    assert after[0]["data"] == {"text/plain": "42"}  # %time ran the statement in the notebook's namespace
    assert figure == [
        {"output_type": "display_data", "data": {"text/plain": "<Figure size 640x480 with 1 Axes>"}, "metadata": {}}
    ]


def test_an_unknown_magic_is_an_error_and_the_rest_of_its_cell_does_not_run(run_cells):
    unknown, window, fine = run_cells("%pylab_please\nprint('after')", "%gui qt", "print('next')")
    assert unknown == [
        {
            "output_type": "error",
            "ename": "UsageError",
            "evalue": "Line magic function `%pylab_please` not found.",
            "traceback": ["UsageError: Line magic function `%pylab_please` not found."],
        }
    ]
    assert "the grader cannot open windows (GUI 'qt'): use `%matplotlib inline`" in stream_text(window, "stderr")
    assert fine == [{"output_type": "stream", "name": "stdout", "text": "next\n"}]


# ---------------------------------------------------------------- the seccomp filter


def test_no_fork_filter_refuses_processes_but_not_threads():
    code = textwrap.dedent(
        """
        import os, subprocess, sys, threading
        sys.path.insert(0, sys.argv[1])
        from sandboxed import seccomp
        assert seccomp.install_no_fork_filter()
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
    if seccomp.no_fork_filter() is None:
        pytest.skip("libseccomp (pyseccomp) is not available here")
    done = subprocess.run([sys.executable, "-c", code, str(sb.SANDBOXED.parent)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "threads [1]"


#: System call numbers of the calls the filter refuses besides fork, on the architectures we test.
SYSCALLS = {
    "x86_64": {"getpid": 39, "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "clone3": 435},
    "aarch64": {"getpid": 172, "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "clone3": 435},
}


@pytest.mark.skipif(platform.machine() not in SYSCALLS, reason="system call numbers known for x86_64 and aarch64")
def test_no_fork_filter_refuses_tracing_clone3_and_foreign_abis():
    code = textwrap.dedent(
        """
        import ctypes, errno, json, mmap, os, platform, sys
        sys.path.insert(0, sys.argv[1])
        from sandboxed import seccomp
        nr = json.loads(sys.argv[2])
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long

        def call(number, *args):
            ctypes.set_errno(0)
            done = libc.syscall(ctypes.c_long(number), *[ctypes.c_long(a) for a in args])
            return errno.errorcode[ctypes.get_errno()] if done == -1 else "allowed"

        def i386_getpid():  # mov eax, 20; int 0x80; ret: getpid through the 32-bit ABI
            code = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
            code.write(b"\\xb8\\x14\\x00\\x00\\x00\\xcd\\x80\\xc3")
            done = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(code)))()
            return "allowed" if done > 0 else errno.errorcode[-done]

        x86 = platform.machine() == "x86_64"
        i386_works = x86 and i386_getpid() == "allowed"  # kernels without 32-bit emulation never reach a filter
        assert seccomp.install_no_fork_filter()
        seen = {
            "getpid": call(nr["getpid"]),
            "ptrace": call(nr["ptrace"], 0, 0, 0, 0),  # PTRACE_TRACEME
            "process_vm_readv": call(nr["process_vm_readv"], os.getpid(), 0, 0, 0, 0, 0),
            "process_vm_writev": call(nr["process_vm_writev"], os.getpid(), 0, 0, 0, 0, 0),
            "clone3": call(nr["clone3"], 0, 0),
        }
        if x86:
            seen["x32 getpid"] = call(0x40000000 | nr["getpid"])
        if i386_works:
            seen["i386 getpid"] = i386_getpid()
        print(json.dumps(seen))
        """
    )
    if seccomp.no_fork_filter() is None:
        pytest.skip("libseccomp (pyseccomp) is not available here")
    numbers = json.dumps(SYSCALLS[platform.machine()])
    done = subprocess.run(
        [sys.executable, "-c", code, str(sb.SANDBOXED.parent), numbers], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    expected = {
        "getpid": "allowed",
        "ptrace": "EPERM",
        "process_vm_readv": "EPERM",
        "process_vm_writev": "EPERM",
        "clone3": "ENOSYS",  # so that the C library falls back to clone, whose flags the filter reads
    }
    assert {k: seen[k] for k in expected} == expected
    for abi in ("x32 getpid", "i386 getpid"):  # another ABI would have other numbers: refused whole
        assert seen.get(abi, "EPERM") == "EPERM", abi


def test_bwrap_missing_is_refused_with_instructions(monkeypatch):
    monkeypatch.setenv("QKV_BWRAP", "/nonexistent/bwrap")
    with pytest.raises(sb.SandboxUnavailable, match="apt-get install bubblewrap"):
        sb.check_available()


def test_paths_the_sandbox_shows_cannot_hold_the_course(tmp_path):
    sb.check_hidden([tmp_path])  # a private folder: fine
    with pytest.raises(sb.SandboxUnavailable, match="shows to student code"):
        sb.check_hidden([ROOT / "lib" / "course"])
    visible = sb.visible_paths()
    in_place = [p for p in visible if p not in sb.trained_paths()]  # bound where they are on the host
    assert ROOT not in visible and all(ROOT not in p.parents or p.name in ("lib", ".venv") for p in in_place)


def test_the_trained_weights_are_shown_at_one_fixed_place_whatever_their_host_folder(tmp_path, monkeypatch):
    """The folder of trained weights may lie anywhere (the test suite keeps its own under the repository's _build/):
    the sandbox binds it read-only at /opt/qkv-trained and tells the notebook so, never at its host path."""
    weights = ROOT / "_build" / "test-cache" / "trained-probe"
    weights.mkdir(parents=True, exist_ok=True)
    try:
        monkeypatch.setenv("QKV_TRAINED_DIR", str(weights))
        assert sb.trained_paths() == [weights.resolve()]
        args = sb.bwrap_args(sb.Limits(deadline=5, grace=5), 3)
        binds = [tuple(args[i + 1 : i + 3]) for i, a in enumerate(args) if a == "--ro-bind"]
        assert (str(weights.resolve()), sb.TRAINED_IN_SANDBOX) in binds
        assert all(target != str(weights.resolve()) for _, target in binds), "bound at its host path too"
        settings = [tuple(args[i + 1 : i + 3]) for i, a in enumerate(args) if a == "--setenv"]
        assert ("QKV_TRAINED_DIR", sb.TRAINED_IN_SANDBOX) in settings
        with pytest.raises(sb.SandboxUnavailable, match="shows to student code"):
            sb.check_hidden([weights / "course"])  # a course inside the weights' folder would be readable
    finally:
        weights.rmdir()


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


@needs_bwrap
@pytest.mark.slow
def test_display_and_magics_grade_as_in_jupyter(box):
    result = run(
        box,
        "answer = 6 * 7\ndisplay(answer)\n%time total = sum(range(10))",
        "%timeit -n 1 -r 2 sum(range(10))",
        "%autograde_me\nanswer = 0",
        "assert answer == 42, 'the unknown magic stopped its whole cell'\nprint('passed', total)",
    )
    assert result.how == "done" and result.no_fork_filter is True  # libseccomp works inside the sandbox
    shown, timed, unknown, test = (clean_outputs(result.cells[i][1]) for i in range(4))
    assert [o.output_type for o in shown] == ["display_data", "stream"]
    assert shown[0].data == {"text/plain": "42"} and "Wall time" in shown[1].text
    assert "per loop" in timed[0].text
    assert [(o.output_type, o.ename) for o in unknown] == [("error", "UsageError")]  # nbgrader: the cell failed
    assert "%autograde_me" in unknown[0].evalue
    assert [(o.output_type, o.text) for o in test] == [("stream", "passed 45\n")]


# ---------------------------------------------------------------- the hidden tests' own checks (issue 17)

GUARD_PREFIX = [(0, "import math\nimport torch\nfrom qkv import checks\nchecks.install();")]
#: A test cell: its visible part passes whatever answer() returns; its hidden part needs answer() == 1.
GUARDED_TEST = """\
checks.check_true(True, "the visible part passes")
### BEGIN HIDDEN TESTS
_got = float(answer())
checks.check_close(torch.tensor([_got]), torch.tensor([1.0]), "answer()")
print("hidden part ran")
### END HIDDEN TESTS
"""
WRONG = "def answer():\n    return 2\n\n"
#: An answer cell's change to what the hidden tests rely on, and how the sandbox names it.
CHANGES = [
    ("checks.check_close = lambda *a, **k: None", "qkv.checks.check_close was replaced"),
    ("checks._fail = lambda *a, **k: None", "qkv.checks._fail was replaced"),
    ("checks.check_close.__defaults__ = ('r', 1e9, 1e9, None, None)", "qkv.checks.check_close's defaults were changed"),
    ("checks.trusted.tensor = lambda *a, **k: None", "qkv.checks.trusted.tensor was replaced"),
    ("import builtins\nbuiltins.max = lambda *a, **k: 0", "builtins.max was replaced"),
    ("torch.Tensor.tolist = lambda self: [1.0]", "torch.Tensor.tolist was replaced"),
    ("torch.softmax = lambda *a, **k: None", "torch.softmax was replaced"),
    (
        "import contextlib\ncontextlib._GeneratorContextManager.__exit__ = lambda *a: True",
        "contextlib._GeneratorContextManager.__exit__ was replaced",
    ),
    ("math.exp = abs", "math.exp was replaced"),
    ("import qkv.attention\nqkv.attention.masked_softmax = print", "qkv.attention.masked_softmax was replaced"),
    ("import sys, cmath\nsys.modules['math'] = cmath", "sys.modules['math'] was replaced"),
    (
        "from torch.overrides import TorchFunctionMode\nTorchFunctionMode().__enter__()",
        "a torch function or dispatch mode was left active",
    ),
    ("import sys\nsys.settrace(lambda *a: None)", "a trace function was set (sys.settrace)"),
    (
        "checks = __import__('types').SimpleNamespace(check_close=print, check_true=print)",
        "the notebook's name checks was rebound",
    ),
]
#: A prefix the zygote cannot share (it leaves a thread running), so each child runs it itself.
UNSHARED_PREFIX = [
    (
        GUARD_PREFIX[0][0],
        GUARD_PREFIX[0][1] + "\nimport threading, time\n"
        "threading.Thread(target=time.sleep, args=(60,), daemon=True).start()",
    )
]


@needs_bwrap
@pytest.mark.slow
@pytest.mark.parametrize("change, name", [CHANGES[0], CHANGES[-1]], ids=["check_close", "name checks"])
def test_the_guard_holds_when_the_child_runs_the_prefix_itself(box, change, name):
    """When the zygote cannot share the prefix, the child runs it and then records, before any student code, what
    the hidden tests rely on (the notebook's name ``checks`` included), as the zygote does after a shared one."""
    result = box.run([(1, WRONG + change), (2, GUARDED_TEST)], prefix=UNSHARED_PREFIX)
    assert result.how == "done", result.detail
    assert json.dumps(UNSHARED_PREFIX) in box._unsafe  # the prefix really ran in the child
    (found,) = tampering(result.cells[2][1])
    assert f"- {name}" in found["evalue"].splitlines()
    assert "hidden part ran" not in stream_text(result.cells[2][1])


#: Changes made while the hidden part runs, by the answer it calls, through the hidden part's own frame.
DURING = [
    ("checks", "the hidden tests' name checks was rebound"),
    ("torch", "the hidden tests' name torch was rebound"),
]


def tampering(outputs) -> list[dict]:
    return [o for o in outputs if o["output_type"] == "error" and o["ename"] == protocol.TAMPERED]


@needs_bwrap
@pytest.mark.slow
@pytest.mark.parametrize("change, name", CHANGES, ids=[name for _, name in CHANGES])
def test_a_change_to_what_the_hidden_tests_rely_on_is_reported_before_they_run(box, change, name):
    result = box.run([(1, WRONG + change), (2, GUARDED_TEST)], prefix=GUARD_PREFIX)
    assert result.how == "done", result.detail
    outputs = result.cells[2][1]
    (found,) = tampering(outputs)
    assert f"- {name}" in found["evalue"].splitlines() and "found before" in found["evalue"]
    assert "hidden part ran" not in stream_text(outputs)  # the hidden tests did not run on compromised checks


@needs_bwrap
@pytest.mark.slow
@pytest.mark.parametrize("name, label", DURING, ids=[name for name, _ in DURING])
def test_a_change_made_while_the_hidden_part_runs_is_reported_after_it(box, name, label):
    answer = f"""
        import sys, types
        _fake = types.SimpleNamespace(check_close=lambda *a, **k: None, tensor=lambda *a, **k: None)

        def answer():
            sys._getframe(1).f_globals[{name!r}] = _fake  # the caller: the hidden part
            return 2
    """
    result = box.run([(1, textwrap.dedent(answer)), (2, GUARDED_TEST)], prefix=GUARD_PREFIX)
    outputs = result.cells[2][1]
    (found,) = tampering(outputs)
    assert f"- {label}" in found["evalue"].splitlines() and "found after" in found["evalue"]


@needs_bwrap
@pytest.mark.slow
def test_hidden_parts_get_the_real_checks_and_builtins_and_honest_notebooks_raise_no_alarm(box):
    cells = [
        (1, "sum = 0\nfor i in range(3):\n    sum += i\nmax = 'shadowed'\n\ndef answer():\n    return 1\n"),
        (
            2,
            "checks.check_true(answer() == 1, 'visible')\n### BEGIN HIDDEN TESTS\n"
            "_secret = sum([1, 2]) + len(max([[1], [2, 3]]))  # the builtins, not the notebook's names\n"
            "checks.check_true(_secret == 5, 'the builtins are the real ones')\n### END HIDDEN TESTS\n",
        ),
        (3, "print(sum, max, '_secret' in dir())"),  # the hidden part's names stay in the hidden part
        (  # honest code that makes PyTorch re-bind torch.manual_seed (importing torch._dynamo) and nn.Module's
            4,  # __init__ (torch.compile), and uses pyplot
            "x = torch.zeros(2, device='meta').masked_fill(torch.zeros(2, dtype=torch.bool, device='meta'), 0.0)\n"
            "import matplotlib.pyplot as plt\nplt.plot([1, 2])\ntorch.manual_seed(0)\n"
            "print(torch.compile(lambda x: x + 1, backend='eager')(torch.ones(2)).tolist())",
        ),
        (5, GUARDED_TEST),
        (6, "def stub():\n    # YOUR CODE HERE\n    raise NotImplementedError()"),
        (7, "checks.check_true(True, 'visible')\n### BEGIN HIDDEN TESTS\nstub()\n### END HIDDEN TESTS"),
        (8, WRONG),
        (9, GUARDED_TEST),
    ]
    saved = box.limits
    box.limits = dataclasses.replace(saved, deadline=120)  # torch.compile takes seconds, 15 on a busy machine
    try:
        result = box.run(cells, prefix=GUARD_PREFIX)
    finally:
        box.limits = saved
    assert result.how == "done", result.detail
    assert not [i for i, (_, outputs) in result.cells.items() if tampering(outputs)]
    assert not [o for o in result.cells[2][1] if o["output_type"] == "error"]
    assert printed(result, 3) == "3 shadowed False\n" and printed(result, 4) == "[2.0, 2.0]\n"
    assert printed(result, 5) == "hidden part ran\n" and not [o for o in result.cells[5][1] if "ename" in o]
    (stub,) = [o for o in result.cells[7][1] if o["output_type"] == "error"]  # named as in Jupyter
    assert stub["ename"] == "NotImplementedError" and stub["evalue"].startswith("stub is not written yet")
    assert stub["traceback"] == [f"NotImplementedError: {stub['evalue']}"]
    (failed,) = [o for o in result.cells[9][1] if o["output_type"] == "error"]  # a wrong answer fails, as before
    assert failed["ename"] == "CheckFailed" and "answer(): wrong values" in failed["evalue"]
    assert failed["traceback"][0].startswith("CheckFailed: answer()")


def test_split_hidden_finds_nbgraders_marker_at_the_start_of_a_line_only():
    source = "x = '### BEGIN HIDDEN TESTS'\ny = 1\n### BEGIN HIDDEN TESTS\nz = 2\n### END HIDDEN TESTS\n"
    visible, hidden, lines = guard.split_hidden(source)
    assert visible == "x = '### BEGIN HIDDEN TESTS'\ny = 1\n" and lines == 2
    assert hidden == "### BEGIN HIDDEN TESTS\nz = 2\n### END HIDDEN TESTS\n"
    assert guard.split_hidden("y = 1\n") == ("y = 1\n", None, 0)


# ---------------------------------------------------------------- without bubblewrap (Sandbox(bubblewrap=False))


def test_without_namespaces_the_filter_also_refuses_sockets_sessions_and_namespaces():
    code = textwrap.dedent(
        """
        import ctypes, os, socket, sys
        sys.path.insert(0, sys.argv[1])
        from sandboxed import seccomp
        libc = ctypes.CDLL(None, use_errno=True)

        def unshare():  # os.unshare is Python 3.12's
            if libc.unshare(0x10000000) != 0:  # CLONE_NEWUSER
                raise OSError(ctypes.get_errno(), "unshare")

        a, b = socket.socketpair()  # made before: the child's one socket is inherited
        assert seccomp.install_no_fork_filter(seccomp.no_fork_filter(contained=False))
        a.sendall(b"x"); assert b.recv(1) == b"x"  # and it still works
        for name, attempt in (("socket", lambda: socket.socket()), ("unix", lambda: socket.socket(socket.AF_UNIX)),
                              ("setsid", os.setsid), ("setpgid", lambda: os.setpgid(0, 0)),
                              ("unshare", unshare)):
            try:
                attempt()
                print("allowed", name)
            except OSError as err:
                print("refused", name, err.errno)
        """
    )
    if seccomp.no_fork_filter(contained=False) is None:
        pytest.skip("libseccomp (pyseccomp) is not available here")
    done = subprocess.run([sys.executable, "-c", code, str(sb.SANDBOXED.parent)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:-1] == [
        "refused socket 13",
        "refused unix 13",
        "refused setsid 1",
        "refused setpgid 1",
        "refused unshare 1",
    ]


def test_reachable_reads_the_mode_bits_as_the_kernel_does():
    stranger, groups = os.getuid() + 4242, {os.getgid() + 4242}  # neither the owner nor in the group
    top = Path(tempfile.mkdtemp(prefix="qkv-modes-"))  # in the temporary folder, open to all
    try:
        modes = {"open": 0o755, "closed": 0o700, "search-only": 0o711}
        for name, mode in modes.items():
            (top / name).mkdir()
            (top / name / "file").write_text("x")
            os.chmod(top / name / "file", 0o644)
            os.chmod(top / name, mode)
        (top / "private").write_text("x")
        os.chmod(top / "private", 0o600)
        os.chmod(top, 0o755)
        if not sb.reachable(top, stranger, groups):
            pytest.skip(f"{top.parent} is closed to other users")
        seen = lambda name: sb.reachable(top / name, stranger, groups)  # noqa: E731
        assert seen("open") and seen("open/file") and seen("search-only/file")  # a folder searchable but unlisted
        assert not seen("closed") and not seen("closed/file") and not seen("private") and not seen("missing")
        assert sb.reachable(top / "private", os.getuid(), set())  # its owner
    finally:
        shutil.rmtree(top)


def test_without_bubblewrap_only_root_may_grade(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(sb.SandboxUnavailable, match="only root can start it"):
        sb.sandbox_user()
    with pytest.raises(sb.SandboxUnavailable, match="only root"):
        sb.check_available(bubblewrap=False)


@pytest.mark.skipif(os.geteuid() != 0, reason="the mode without bubblewrap runs as root")
def test_without_bubblewrap_a_course_the_sandboxs_user_could_read_is_refused(monkeypatch):
    monkeypatch.setattr(sb.paths, "private_paths", lambda: [])  # this checkout's private parts: another test's
    top = Path(tempfile.mkdtemp(prefix="qkv-unwrapped-"))  # in /tmp, open to all, as a course folder may be
    try:
        os.chmod(top, 0o755)
        course = top / "course"
        course.mkdir(mode=0o755)
        (course / "gradebook.db").write_text("hidden tests")
        with pytest.raises(sb.SandboxUnavailable, match="can be read by the user 'nobody'"):
            sb.check_hidden([course], bubblewrap=False)
        os.chmod(course, 0o700)
        sb.check_hidden([course], bubblewrap=False)
    finally:
        shutil.rmtree(top)


@pytest.fixture(scope="module")
def unwrapped_box(tmp_path_factory):
    """A sandbox without bubblewrap, its zygote run by a Python the user nobody can read (tests/support/unwrapped)."""
    from tests.support import unwrapped

    top = Path(tempfile.mkdtemp(prefix="qkv-unwrapped-"))
    os.chmod(top, 0o755)
    try:
        python = unwrapped.python_for_sandbox_user(top / "python")
        if python is None or seccomp.no_fork_filter(contained=False) is None:
            pytest.skip("needs root, libseccomp and a system Python of this version that the user nobody can run")
        saved, sys.executable = sys.executable, str(python)
        try:
            box = sb.Sandbox(sb.Limits(deadline=20, grace=20), preload=("numpy",), bubblewrap=False)
            box.start()
        finally:
            sys.executable = saved
        yield box, top
        box.close()
    finally:
        shutil.rmtree(top, ignore_errors=True)


@pytest.mark.slow
def test_without_bubblewrap_student_code_runs_unprivileged_offline_and_in_its_scratch_folder(unwrapped_box):
    box, top = unwrapped_box
    secret = top / "course"
    secret.mkdir(mode=0o700)
    (secret / "gradebook.db").write_text("hidden tests")
    scratch = box._scratch
    result = run(
        box,
        f"""
        import os, socket
        print(os.getuid(), os.getcwd() == {str(scratch / "work")!r})
        for attempt in (lambda: socket.create_connection(("127.0.0.1", 22), timeout=2), os.fork, os.setsid,
                        lambda: open({str(secret / "gradebook.db")!r}).read()):
            try:
                attempt()
                print("allowed")
            except OSError as err:
                print("refused", err.errno)
        open("left-behind", "w").write("x")
        print(open("/proc/self/oom_score_adj").read().strip())
        """,
    )
    assert result.how == "done", result.detail
    assert printed(result).splitlines() == ["65534 True", "refused 13", "refused 11", "refused 1", "refused 13", "1000"]
    again = run(box, "import os\nprint(os.path.exists('left-behind'), sorted(os.listdir('..')))")
    assert printed(again).strip() == "False ['home', 'work']"  # each notebook starts from a clean scratch folder


@pytest.mark.slow
def test_without_bubblewrap_closing_the_sandbox_ends_what_outlived_its_zygote(unwrapped_box):
    box, _ = unwrapped_box
    result = run(
        box,
        "import os\nprint(os.path.dirname(os.getcwd()))",
        "import os, signal, time\nos.kill(os.getppid(), signal.SIGKILL)\ntime.sleep(600)",
        deadline=4,
        grace=2,
    )
    assert result.how in ("died", "timeout") and not box.alive  # (run again once in a fresh sandbox, as it does)
    scratch = printed(result).strip()
    assert scratch.startswith(tempfile.gettempdir()) and not os.path.exists(scratch)
    leftovers = subprocess.run(["pgrep", "-f", f"--scratch {scratch}"], capture_output=True, text=True).stdout
    assert leftovers == "", leftovers  # the child that slept on was killed with its process group
