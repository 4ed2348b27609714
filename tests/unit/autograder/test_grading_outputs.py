"""autograder.grading.outputs: the outputs the grader keeps, the exercises it names, the integrity reports it
reads."""

from __future__ import annotations

import nbformat

from autograder.grading.outputs import clean_outputs, integrity_changes, name_exercises, stub_exercises
from autograder.sandboxed import protocol
from tests.support import corpus
from tests.support.cells import cell

SLUG = corpus.SLUG


def test_clean_outputs_keeps_only_known_fields_of_known_outputs():
    raw = [
        {"output_type": "stream", "name": "stdout", "text": "hi\n", "extra": 1},
        {"output_type": "display_data", "data": {"text/html": "<script>x()</script>", "text/plain": "fig"}},
        {"output_type": "error", "ename": "E", "evalue": "v", "traceback": ["a", 3]},
        {"output_type": "execute_result", "data": {"text/plain": ["4", "2"]}, "execution_count": "1"},
        {"output_type": "unknown"},
        "not a dict",
    ]
    out = clean_outputs(raw)
    assert [o.output_type for o in out] == ["stream", "display_data", "error", "execute_result"]
    assert out[0] == {"output_type": "stream", "name": "stdout", "text": "hi\n"}
    assert out[1].data == {"text/plain": "fig"}
    assert out[2].traceback == ["a", ""] and out[3].data == {"text/plain": "42"} and out[3].execution_count is None
    assert clean_outputs({"output_type": "stream"}) == []


def test_an_unwritten_stub_is_named_by_its_exercise_from_the_release_not_the_submission():
    release = nbformat.v4.new_notebook(
        cells=[
            cell(
                "code", "# Exercise 1 (3 points): write f.\ndef f(x):\n    raise NotImplementedError()", solution=True
            ),
            cell("code", "# Exercise 2 (1 point): write C.\nclass C:\n    def m(self):\n        pass", solution=True),
            cell("code", "def helper():\n    pass", solution=True),  # no header line: not an exercise
            cell("code", "# Exercise 9: a test cell, not a stub\ndef g():\n    pass", grade=True, solution=False),
        ]
    )
    exercises = stub_exercises(release)
    assert exercises == {"f": "1", "C": "2"}

    def error(evalue):
        return nbformat.v4.new_output("error", ename="NotImplementedError", evalue=evalue, traceback=["x"])

    rest = ": replace `raise NotImplementedError()` in its cell with your code."
    run = nbformat.v4.new_notebook(
        cells=[
            cell("code", "# Exercise 7 (forged by the student)\ndef f(x):\n    raise NotImplementedError()"),
            cell("code", "test", grade_id="test_f", grade=True, solution=False, points=1),
        ]
    )
    run.cells[0].outputs = [error("f is not written yet" + rest)]
    run.cells[1].outputs = [error("C is not written yet" + rest), error("helper is not written yet" + rest)]
    run.cells[1].outputs.append(nbformat.v4.new_output("error", ename="NotImplementedError", evalue="no CUDA"))
    name_exercises(run, exercises)
    assert run.cells[0].outputs[0].evalue == "Exercise 1 (f) is not written yet" + rest  # the release's number
    named = run.cells[1].outputs[0]
    assert named.evalue == "Exercise 2 (C) is not written yet" + rest
    assert " ".join(named.traceback) == f"NotImplementedError: {named.evalue}"
    assert all(len(line) <= 83 for line in named.traceback)
    assert run.cells[1].outputs[1].evalue == "helper is not written yet" + rest  # not an exercise: as it was
    assert run.cells[1].outputs[2].evalue == "no CUDA"  # torch's own NotImplementedError: untouched


def test_integrity_changes_are_read_from_test_cells_once_each_where_first_found():
    def tampered(*lines):
        text = "\n".join(["the answers changed objects that the hidden tests rely on:", *lines, "(found before)"])
        return nbformat.v4.new_output("error", ename=protocol.TAMPERED, evalue=text, traceback=[])

    nb = nbformat.v4.new_notebook(
        cells=[
            cell("code", "answer", grade_id="f", solution=True, grade=False),
            cell("code", "test", grade_id="test_f", grade=True, solution=False, points=1),
            cell("code", "test", grade_id="test_g", grade=True, solution=False, points=1),
        ]
    )
    assert integrity_changes(nb) == ([], None)
    nb.cells[0].outputs = [tampered("- forged in an answer cell")]  # not a test cell: not the sandbox's report
    nb.cells[1].outputs = [tampered("- qkv.checks.check_close was replaced")]
    nb.cells[2].outputs = [tampered("- qkv.checks.check_close was replaced", "- builtins.max was replaced")]
    assert integrity_changes(nb) == (
        ["qkv.checks.check_close was replaced", "builtins.max was replaced"],
        "test_f",
    )
