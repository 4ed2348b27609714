"""Gradescope's ``results.json`` from what the grading core gave one submission, and a check of its format.

Gradescope's format (its autograder specification): ``score`` (a number), optional ``execution_time`` (seconds),
``output`` (text for the whole submission), ``stdout_visibility``, ``extra_data`` (an object) and ``tests``, a list
of objects with ``name``, ``score``, ``max_score``, ``status`` (``passed`` or ``failed``), ``output`` and
``visibility`` (one of :data:`~.settings.VISIBILITIES`), each optional but ``score``.

One entry of ``tests`` per graded test cell of the section, in the notebook's order: its name is the exercise's
title (the heading above the test cell in the course's release notebook, "Exercise 1: attention pooling"), its
score that cell's points in the grading core's result, its output what the student's nbgrader feedback shows for
that cell: what the visible tests printed, and a failed check's message and hint (the sandbox's tracebacks show
no line of a cell, so no hidden test's code). Where the instructor shows the output later than the score
(:class:`~.settings.Settings`: by default the score at once and the output after the due date), the output goes in
an entry of its own, ``<title>: feedback``, worth 0 points, with the later visibility (Gradescope sets visibility
per entry). Written answers are not tests: a person grades them (the output says how many wait).

Every output is Markdown (``"output_format": "md"``, :mod:`~.markdown`): what a test cell printed, tracebacks
included, in a code block; our own sentences with the student's text escaped. Where the instructor rations full
feedback (:mod:`~.ration`), a submission past the allowance gets each test's name and score, and in place of its
feedback one sentence saying why and when full feedback returns; the feedback itself waits for the due date.
"""

from __future__ import annotations

import re

from autograder.gradebook import output_text
from autograder.gradescope import markdown as md
from autograder.gradescope.ration import Allowance
from autograder.gradescope.settings import VISIBILITIES, Settings

#: The longest output of one entry (a flood of printing is cut, as in the feedback).
MAX_OUTPUT = 20_000
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
#: When a later visibility shows the feedback, in the words of a test entry's output.
WHEN = {
    "after_due_date": "after the due date",
    "after_published": "once the grades are published",
    "hidden": "to the course staff only",
    "visible": "at once",
}
#: When a rationed submission's feedback is shown (its tests' names and scores are shown as the settings say).
RATIONED = "after_due_date"


def test_cells(release) -> list[tuple[str, str, float]]:
    """``(grade_id, title, points)`` of every graded test cell of the course's ``release`` notebook, in order: the
    title is the last heading above the cell (``## Exercise 1: attention pooling`` gives ``Exercise 1: attention
    pooling``), with the grade_id added where two tests share one heading, and the grade_id where none is above."""
    found, heading = [], None
    for cell in release.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("#"):
                    heading = line.lstrip("#").strip() or heading
            continue
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("grade") and not meta.get("solution"):
            found.append((meta["grade_id"], heading or meta["grade_id"], float(meta.get("points", 0))))
    counts: dict[str, int] = {}
    for _, title, _ in found:
        counts[title] = counts.get(title, 0) + 1
    return [(gid, f"{title} ({gid})" if counts[title] > 1 else title, pts) for gid, title, pts in found]


def cell_feedback(outputs) -> str:
    """What the feedback shows of a test cell's outputs: printed text, displayed text, and each error's traceback
    (its message and hint; a traceback from the sandbox names cells but shows none of their lines)."""
    parts = []
    for out in outputs:
        kind = out.get("output_type")
        if kind == "stream":
            parts.append(output_text(out.get("text")))
        elif kind in ("execute_result", "display_data"):
            parts.append(output_text((out.get("data") or {}).get("text/plain")) + "\n")
        elif kind == "error":
            tb = out.get("traceback") or [f"{out.get('ename', 'Error')}: {out.get('evalue', '')}"]
            parts.append("\n".join(output_text(line) for line in tb) + "\n")
    text = _ANSI.sub("", "".join(parts)).strip()
    if len(text) > MAX_OUTPUT:
        text = text[:MAX_OUTPUT] + "\n... (output truncated)"
    return text


def notebook_feedback(nb) -> dict[str, str]:
    """:func:`cell_feedback` of every graded test cell of a graded notebook, by grade_id."""
    found = {}
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("grade") and not meta.get("solution"):
            found[meta.get("grade_id")] = cell_feedback(cell.get("outputs", []))
    return found


def test_output(status: str, text: str) -> str:
    """A test's output in Markdown: whether it passed, then what its cell printed (tracebacks included) in a code
    block."""
    said = "Passed." if status == "passed" else "Failed."
    return md.paragraphs(said, "The test cell's output:" if text else "", md.code_block(text) if text else "")


def build(
    cells: list[tuple[str, str, float]],
    points: dict[str, float | None],
    feedback: dict[str, str],
    summary: str,
    settings: Settings,
    seconds: float = 0.0,
    extra: dict | None = None,
    score: float | None = None,
    allowance: Allowance | None = None,
) -> dict:
    """The results of one submission: ``cells`` (:func:`test_cells`), each test's ``points`` and ``feedback`` (by
    grade_id: what its cell printed, or :class:`~.markdown.Markdown` to show as it is; a missing one scores 0), the
    ``summary`` for the whole submission (Markdown); ``score`` the total (default: the tests' sum); ``allowance``
    whether this submission gets full feedback (None: no rationing)."""
    rationed = allowance is not None and not allowance.full
    later = RATIONED if rationed else settings.output
    split = later != settings.tests
    pointer = allowance.sentence() if rationed else None
    tests = []
    for gid, title, max_score in cells:
        got = float(points.get(gid) or 0.0)
        status = "passed" if got >= max_score else "failed"
        given = feedback.get(gid, "")
        text = given if isinstance(given, md.Markdown) else test_output(status, given)
        entry = {"name": title, "score": got, "max_score": max_score, "status": status}
        entry["visibility"] = settings.tests
        entry["extra_data"] = {"grade_id": gid}
        where = f"The feedback is in '{md.escape(title)}: feedback', shown {WHEN[later]}."
        entry["output"] = (pointer or where) if split else text
        entry["output_format"] = md.FORMAT
        tests.append(entry)
        if split:
            tests.append(
                {
                    "name": f"{title}: feedback",
                    "score": 0.0,
                    "max_score": 0.0,
                    "status": status,
                    "output": text,
                    "output_format": md.FORMAT,
                    "visibility": later,
                    "extra_data": {"feedback_of": gid},
                }
            )
    total = sum(float(points.get(gid) or 0.0) for gid, _, _ in cells) if score is None else float(score)
    extra = {"assignment": settings.assignment, **(extra or {})}
    if allowance is not None:
        extra["feedback"] = allowance.record()
    return {
        "score": total,
        "execution_time": max(0, round(seconds)),
        "output": md.paragraphs(summary, allowance.summary() if allowance is not None else ""),
        "output_format": md.FORMAT,
        "test_output_format": md.FORMAT,
        "stdout_visibility": settings.stdout,
        "extra_data": extra,
        "tests": tests,
    }


def not_graded(why: str) -> md.Markdown:
    """The output of every test of a submission that could not be graded."""
    return md.Markdown(f"Not graded: {md.escape(why)}.")


def summary_of(status: str, reason: str, score: float, max_score: float, waiting: int) -> str:
    """The output for the whole submission, in Markdown: the score, the grading core's status and reason (those of
    ``grades.csv``), and the written answers that wait for a person; one paragraph each."""
    points = f"{score:g} of {max_score:g} points"
    lines = [
        {
            "graded": f"Graded: {points} from the autograded exercises.",
            "tampered": f"Tampered: {points}.",
            "timeout": f"Graded in part (timeout): {points}, from the tests that ran before.",
            "kernel died": f"Graded in part (the notebook's process died): {points}, from the tests that ran before.",
        }.get(status, f"Not graded ({status}): {points}.")
    ]
    if reason:
        lines.append(md.escape(reason[:1].upper() + reason[1:] + ("" if reason.endswith(".") else ".")))
    if waiting:
        lines.append(f"{waiting} written answer(s) wait for a person, who grades them apart from these points.")
    return md.paragraphs(*lines)


#: The fields of results.json at the top (Gradescope's autograder specification).
TOP_FIELDS = {
    "score",
    "execution_time",
    "output",
    "output_format",
    "test_output_format",
    "test_name_format",
    "visibility",
    "stdout_visibility",
    "extra_data",
    "tests",
    "leaderboard",
}


def check_format(data) -> list[str]:
    """What in ``data`` does not follow Gradescope's ``results.json`` format (empty: it does)."""
    problems = []
    number = (int, float)

    def is_number(value) -> bool:
        return isinstance(value, number) and not isinstance(value, bool)

    if not isinstance(data, dict):
        return [f"results is {type(data).__name__}, not an object"]
    tests = data.get("tests")
    if "score" not in data and not (isinstance(tests, list) and tests and all("score" in t for t in tests)):
        problems.append("no score, neither at the top nor on every test")
    if "score" in data and not is_number(data["score"]):
        problems.append(f"score {data['score']!r} is not a number")
    if "execution_time" in data and not is_number(data["execution_time"]):
        problems.append("execution_time is not a number")
    for key in ("output",):
        if key in data and not isinstance(data[key], str):
            problems.append(f"{key} is not a string")
    for key in ("visibility", "stdout_visibility"):
        if key in data and data[key] not in VISIBILITIES:
            problems.append(f"{key} {data[key]!r} is not one of {VISIBILITIES}")
    for key in ("output_format", "test_output_format", "test_name_format"):
        if key in data and data[key] not in md.FORMATS:
            problems.append(f"{key} {data[key]!r} is not one of {md.FORMATS}")
    if "extra_data" in data and not isinstance(data["extra_data"], dict):
        problems.append("extra_data is not an object")
    unknown = set(data) - TOP_FIELDS
    if unknown:
        problems.append(f"fields Gradescope does not know: {sorted(unknown)}")
    if tests is not None and not isinstance(tests, list):
        problems.append("tests is not a list")
    for i, test in enumerate(tests if isinstance(tests, list) else []):
        if not isinstance(test, dict):
            problems.append(f"tests[{i}] is not an object")
            continue
        for key in ("score", "max_score"):
            if key in test and not is_number(test[key]):
                problems.append(f"tests[{i}].{key} is not a number")
        for key in ("name", "output", "number"):
            if key in test and not isinstance(test[key], str):
                problems.append(f"tests[{i}].{key} is not a string")
        if "status" in test and test["status"] not in ("passed", "failed"):
            problems.append(f"tests[{i}].status {test['status']!r} is not passed or failed")
        for key in ("output_format", "name_format"):
            if key in test and test[key] not in md.FORMATS:
                problems.append(f"tests[{i}].{key} {test[key]!r} is not one of {md.FORMATS}")
        if "visibility" in test and test["visibility"] not in VISIBILITIES:
            problems.append(f"tests[{i}].visibility {test['visibility']!r} is not one of {VISIBILITIES}")
        if "extra_data" in test and not isinstance(test["extra_data"], dict):
            problems.append(f"tests[{i}].extra_data is not an object")
        unknown = set(test) - {
            "score",
            "max_score",
            "status",
            "name",
            "name_format",
            "number",
            "output",
            "output_format",
            "tags",
            "visibility",
            "extra_data",
        }
        if unknown:
            problems.append(f"tests[{i}] has fields Gradescope does not know: {sorted(unknown)}")
    return problems
