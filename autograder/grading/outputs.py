"""Outputs and what they say: the sandbox's outputs rebuilt from known fields (they are untrusted data), put into
the notebook, and read for what the guard reported, the exercises left unanswered and the answers' static scan."""

from __future__ import annotations

import ast
import os
import re
import textwrap
from pathlib import Path

import nbformat

from autograder import sandbox as sb
from autograder import scan
from autograder.gradebook import output_text
from autograder.sandboxed import protocol

#: The header line of a stub cell (``# Exercise 2 (3 points): write ...``), and an unanswered stub's message
#: as the sandbox sends it (``qkv.checks.stub_message`` without the cell's text: the name alone).
_EXERCISE = re.compile(r"#\s*Exercise\s+(\d+)\b")
_UNWRITTEN = re.compile(r"(?P<name>[A-Za-z_]\w*) is not written yet(?P<rest>:.*)", re.S)


def clean_outputs(outputs) -> list:
    """Rebuild the outputs the sandbox sent from their known fields only (they are untrusted data)."""
    clean = []
    for out in outputs if isinstance(outputs, list) else []:
        if not isinstance(out, dict):
            continue
        kind = out.get("output_type")
        if kind == "stream":
            name = "stderr" if out.get("name") == "stderr" else "stdout"
            clean.append(nbformat.v4.new_output("stream", name=name, text=output_text(out.get("text"))))
        elif kind == "error":
            tb = out.get("traceback")
            tb = [output_text(line, 10_000) for line in tb[:200]] if isinstance(tb, list) else []
            ename, evalue = (
                output_text(out.get("ename"), 1000) or "Error",
                output_text(out.get("evalue"), 10_000),
            )
            clean.append(nbformat.v4.new_output("error", ename=ename, evalue=evalue, traceback=tb))
        elif kind in ("execute_result", "display_data"):
            data = out.get("data")
            text = output_text(data.get("text/plain")) if isinstance(data, dict) else ""
            if kind == "execute_result":
                count = out.get("execution_count")
                clean.append(
                    nbformat.v4.new_output(
                        kind, data={"text/plain": text}, execution_count=count if isinstance(count, int) else None
                    )
                )
            else:
                clean.append(nbformat.v4.new_output(kind, data={"text/plain": text}))
    return clean


def not_run(ename: str, why: str):
    return nbformat.v4.new_output("error", ename=ename, evalue=why, traceback=[f"{ename}: {why}"])


def fill_outputs(nb, run: sb.RunResult | None, why_not_run: str) -> None:
    """Put the run's outputs into the code cells; a cell that did not finish gets an error output,
    so nbgrader's ``determine_grade`` gives its tests no points."""
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        if run is not None and index in run.cells:
            count, outputs = run.cells[index]
            cell.execution_count, cell.outputs = count, clean_outputs(outputs)
        elif run is not None and index == run.running:
            ename = "Timeout" if run.how == "timeout" else "KernelDied"
            cell.execution_count, cell.outputs = None, [not_run(ename, f"this cell did not finish: {run.detail}")]
        else:
            cell.execution_count, cell.outputs = None, [not_run("NotRun", why_not_run)]


def write_notebook(nb, path: Path) -> None:
    """Write ``nb`` to ``path`` atomically (a reader never sees half a notebook)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    nbformat.write(nb, str(tmp))
    os.replace(tmp, path)


def integrity_changes(nb) -> tuple[list[str], str | None]:
    """What the sandbox reported changed (each change once, first seen first) and the test cell where it first
    did, from the error outputs of the run notebook's test cells (``protocol.TAMPERED``); ``([], None)`` when
    none reported a change. The rebuilt notebook's metadata is the course's."""
    from nbgrader.utils import is_grade, is_solution

    found: dict[str, None] = {}
    first = None
    for cell in nb.cells:
        if cell.cell_type != "code" or not is_grade(cell) or is_solution(cell):
            continue
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error" and out.get("ename") == protocol.TAMPERED:
                first = first or cell.metadata["nbgrader"].get("grade_id", "?")
                lines = [line[2:].strip() for line in output_text(out.get("evalue")).splitlines() if line[:2] == "- "]
                found.update(dict.fromkeys([line for line in lines if line] or ["a change the sandbox reported"]))
    return list(found), first


def stub_exercises(release) -> dict[str, str]:
    """The functions and classes each stub cell of the release notebook defines, with its exercise number (from
    the cell's header line, ``# Exercise 2 (3 points): ...``): ``{"masked_softmax": "1", ...}``. Read from the
    course's release, never from a submission, whose cells a student can edit."""
    from nbgrader.utils import is_solution

    found: dict[str, str] = {}
    for cell in release.cells:
        if cell.cell_type != "code" or not is_solution(cell):
            continue
        number = _EXERCISE.match(cell.source.lstrip())
        if number is None:
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                found.setdefault(node.name, number.group(1))
    return found


def name_exercises(nb, exercises: dict[str, str]) -> None:
    """Give each unanswered stub's ``NotImplementedError`` in the run notebook's outputs the number of its
    exercise (:func:`stub_exercises`): "Exercise 1 (masked_softmax) is not written yet: ...", as the notebook
    itself says it in Jupyter, where the cell's header line is at hand (the sandbox keeps no cell's text)."""
    for cell in nb.cells:
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if out.get("output_type") != "error" or out.get("ename") != "NotImplementedError":
                continue
            match = _UNWRITTEN.fullmatch(output_text(out.get("evalue")).strip())
            if match is None or match["name"] not in exercises:
                continue
            text = f"Exercise {exercises[match['name']]} ({match['name']}) is not written yet{match['rest']}"
            out["evalue"] = text
            out["traceback"] = textwrap.wrap(f"NotImplementedError: {text}", 83, break_on_hyphens=False)


def answer_flags(nb) -> list[str]:
    """The static scan (:mod:`autograder.scan`) of the notebook's answer code cells, one line per flag."""
    from nbgrader.utils import is_solution  # the rebuilt notebook's metadata is the course's

    found = []
    for cell in nb.cells:
        if cell.cell_type == "code" and is_solution(cell):
            grade_id = cell.metadata["nbgrader"].get("grade_id", "?")
            found += scan.describe(grade_id, scan.scan(cell.source))
    return found
