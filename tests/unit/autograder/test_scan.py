"""The static scan of answer cells (``autograder.scan``): what a dishonest answer does to the grader's objects is
flagged for a person, and no answer of the course's own solutions is."""

from __future__ import annotations

import csv

import pytest

from autograder import assemble, report, scan
from autograder.grading.results import Result
from course import notebooks as nbs
from course.section import sections

SILENCING = [
    ("checks.check_close = lambda *a, **k: None", "checks"),
    ("import qkv.checks as c\nc.check_close = lambda *a, **k: None", "c"),
    ("from qkv import checks as mine\nmine.check_shape = print", "mine"),
    ("import sys\nsys.modules['qkv.checks'].check_close = print", "sys"),
    ("setattr(checks, 'check_true', lambda *a, **k: None)", "setattr"),
    ("vars(checks)['check_close'] = print", "checks"),
    ("import builtins\nbuiltins.isinstance = lambda *a: True", "builtins"),
    ("torch.allclose = lambda *a, **k: True", "torch"),
    ("del checks.check_close", "checks"),
    ("import gc\nfor o in gc.get_objects():\n    pass", "gc"),
    ("import inspect\nf = inspect.currentframe()", "inspect"),
    ("def f():\n    pass\ng = f.__globals__", "__globals__"),
    ("import sys\nframe = sys._getframe(1)", "_getframe"),
    ("x = __import__('gc')", "__import__"),
    ("import types\nchecks = types.SimpleNamespace(check_close=print)", "checks"),
    ("import types as checks", "checks"),
    ("del checks", "checks"),
]


@pytest.mark.parametrize("source, word", SILENCING, ids=[s.splitlines()[-1][:40] for s, _ in SILENCING])
def test_reaching_for_the_graders_objects_is_flagged_with_its_line(source, word):
    flags = scan.scan(source)
    assert flags, f"not flagged: {source!r}"
    assert any(word in f.why or word in f.text for f in flags), flags
    lines = source.splitlines()
    for f in flags:
        assert f.text == lines[f.line - 1].strip()


@pytest.mark.parametrize(
    "source",
    [
        "self.W_q = nn.LazyLinear(num_hiddens, bias=False)",
        "x[mask] = 0.0\nweights = torch.softmax(scores, dim=-1)",
        "import torch\nfrom torch import nn\nresult = checks.trusted.softmax(x, dim=-1)",
        "def f(x):\n    return x.sum()",
        "this is not python (",
    ],
)
def test_ordinary_code_is_not_flagged(source):
    assert scan.scan(source) == []


def test_no_answer_of_the_courses_solutions_is_flagged():
    checked = 0
    for sec in sections():
        answers = assemble.solutions_module(sec)
        for cell in sec.read().cells:
            if nbs.role(cell) == "stub":
                solved = assemble.fill_stubs(cell.source, nbs.grade_id(cell), answers, markers=False)
                assert scan.scan(solved) == [], f"{sec.slug}:{nbs.grade_id(cell)} is flagged"
                checked += 1
    assert checked >= 10


def test_the_report_lists_flagged_answers_whatever_their_score(tmp_path):
    flagged = Result(
        student="ann",
        assignment="a1",
        notebook="nb",
        status="graded",
        reason="",
        score=3.0,
        max_score=3.0,
        exercises={},
        max_points={},
        flags=("ex, line 2: x (why)",),
    )
    honest = Result(
        student="bob",
        assignment="a1",
        notebook="nb",
        status="graded",
        reason="",
        score=1.0,
        max_score=3.0,
        exercises={},
        max_points={},
    )
    report.write_flags([flagged, honest], tmp_path / "flags.csv")
    rows = list(csv.DictReader((tmp_path / "flags.csv").open()))
    assert rows == [{"student": "ann", "assignment": "a1", "notebook": "nb", "flag": "ex, line 2: x (why)"}]
    page = report.write_report([flagged, honest], tmp_path).read_text()
    assert "Answers to look at" in page and "ex, line 2: x (why)" in page
    page = report.write_report([honest], tmp_path).read_text()
    assert "Answers to look at" not in page
