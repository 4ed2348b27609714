"""The grading sandbox (autograder.sandbox) started for real: bubblewrap (skipped, with the reason, where it is
absent) and the mode without it. What can be checked without starting one (the cell runner, the seccomp filter, the
paths it shows): ``tests/unit/autograder/test_sandboxed_cells.py``, ``test_seccomp.py``, ``test_sandbox_paths.py``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from autograder import sandbox as sb
from autograder.grading.outputs import clean_outputs
from autograder.sandboxed import protocol, seccomp

ROOT = sb.SANDBOXED.parent.parent
needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap is not installed (sudo apt-get install bubblewrap)"
)
LIMITS = {"max_lines": 50, "max_chars": 10_000}


def stream_text(outputs, name="stdout") -> str:
    return "".join(o["text"] for o in outputs if o["output_type"] == "stream" and o["name"] == name)


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


# ---------------------------------------------------------------- without bubblewrap (Sandbox(bubblewrap=False))


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
