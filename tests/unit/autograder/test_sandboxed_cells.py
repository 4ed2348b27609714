"""The cell runner that grades inside the sandbox (``autograder.sandboxed.cells``, ``shell``, ``guard``), in plain
processes: the runner's IPython shell is a process-wide singleton, and made in this process it would answer
``get_ipython()`` in every later test. The same runner in a real sandbox: ``tests/grading/test_sandbox.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from autograder import sandbox as sb
from autograder.sandboxed import guard

ROOT = sb.SANDBOXED.parent.parent
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


def test_split_hidden_finds_nbgraders_marker_at_the_start_of_a_line_only():
    source = "x = '### BEGIN HIDDEN TESTS'\ny = 1\n### BEGIN HIDDEN TESTS\nz = 2\n### END HIDDEN TESTS\n"
    visible, hidden, lines = guard.split_hidden(source)
    assert visible == "x = '### BEGIN HIDDEN TESTS'\ny = 1\n" and lines == 2
    assert hidden == "### BEGIN HIDDEN TESTS\nz = 2\n### END HIDDEN TESTS\n"
    assert guard.split_hidden("y = 1\n") == ("y = 1\n", None, 0)


def test_a_class_cache_python_adds_by_itself_is_no_tampering():
    """``copy.copy(tensor)`` (or pickling one, or copying a module) makes ``copyreg`` cache
    ``torch.Tensor.__slotnames__``: Python's doing, which a correct answer may cause (11.5's variants did, on a fresh
    clone); the guard does not report it. A method added to a guarded class still is."""
    code = textwrap.dedent(
        """
        import copy, sys, types
        import torch
        sys.path.insert(0, sys.argv[1])
        from sandboxed import guard
        if "__slotnames__" in vars(torch.Tensor):
            del torch.Tensor.__slotnames__
        g = guard.Guard(types.SimpleNamespace(user_ns={}))
        copy.copy(torch.ones(2))
        assert "__slotnames__" in vars(torch.Tensor)
        print(g.changes())
        torch.Tensor.sum2 = lambda self: 0
        print(g.changes())
        """
    )
    done = subprocess.run([sys.executable, "-c", code, str(sb.SANDBOXED.parent)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    assert first == "[]"
    assert "torch.Tensor.sum2 was added" in second


def test_a_hidden_part_leaves_torch_random_state_as_it_found_it():
    """The cells after a hidden test draw what they drew when the student ran the notebook (which has no hidden
    tests): a hidden part that seeds or draws does not move PyTorch's generator for them."""
    import types

    import torch

    from autograder.sandboxed import guard

    shell = types.SimpleNamespace(user_ns={}, compile=types.SimpleNamespace(_filename_map={}))
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    error = guard.run_hidden(shell, "import torch\ntorch.manual_seed(123)\ntorch.rand(5)\n", 0, 1, None)
    assert error is None
    assert torch.equal(torch.rand(3), expected)
    torch.manual_seed(0)
    error = guard.run_hidden(shell, "import torch\ntorch.rand(5)\nraise AssertionError('a failed check')\n", 0, 2, None)
    assert isinstance(error, AssertionError) and torch.equal(torch.rand(3), expected)  # a failure restores it too
