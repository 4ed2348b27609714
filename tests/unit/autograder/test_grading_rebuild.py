"""autograder.grading.rebuild: what runs is the release with only the submission's answers, and what counts as an
edit."""

from __future__ import annotations

import copy
import json

import nbformat
import pytest

from autograder import submissions
from autograder.grading.rebuild import RECOVER, rebuild, untrusted_is_answer, untrusted_meta
from tests.support import corpus
from tests.support.cells import cell

SLUG = corpus.SLUG


def release_notebook():
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        cell("code", "import torch", grade_id="setup", locked=True, solution=False, grade=False, schema_version=3),
        cell(
            "code",
            "# YOUR CODE HERE\nraise NotImplementedError()",
            grade_id="f",
            solution=True,
            grade=False,
            locked=False,
            schema_version=3,
        ),
        cell(
            "code",
            "assert f() == 1",
            grade_id="test_f",
            grade=True,
            solution=False,
            locked=True,
            points=2,
            schema_version=3,
        ),
        cell(
            "markdown",
            "YOUR ANSWER HERE",
            grade_id="why",
            grade=True,
            solution=True,
            locked=False,
            points=1,
            schema_version=3,
        ),
        cell("code", "print('a demo')"),
    ]
    return nb


def test_rebuild_takes_only_the_answers_and_reports_the_rest():
    release = release_notebook()
    sub = copy.deepcopy(release)
    sub.cells[1].source = "def f():\n    return 1"
    sub.cells[3].source = "Because."
    sub.cells[2].source = "pass"  # an edited test
    sub.cells[4].source = "import os; os.remove('/important')"  # an edited plain cell
    forged = cell(
        "code", "def f():\n    return 2", grade_id="f", solution=True, grade=False, locked=False, schema_version=3
    )
    sub.cells.append(forged)  # a second answer cell f, after the first
    sub.cells.insert(0, cell("code", "x = 1", grade_id="test_f", solution=True))  # poses as test_f's answer
    sub.metadata["kernelspec"] = {"name": "evil", "display_name": "Evil", "language": "python"}
    nb, notes, tampered = rebuild(release, sub)
    assert [c.source for c in nb.cells] == [
        "import torch",
        "def f():\n    return 1",  # the first answer f
        "assert f() == 1",  # the instructor's test, not 'pass' nor the impostor
        "Because.",
        "print('a demo')",  # plain cells are the instructor's too
    ]
    assert [c.metadata for c in nb.cells] == [c.metadata for c in release.cells]
    assert any("'f' appears 2 times" in n for n in notes) and any("kernelspec" in n for n in notes)
    # The impostor says test_f is an answer: its role changed (its missing "grade" key is no edit: issue 37).
    assert len(tampered) == 1 and tampered[0].startswith("test_f (source, metadata solution changed)")


def test_rebuild_does_not_call_changed_tags_tampering():
    """Tags are not nbgrader's metadata: the book tags test cells raises-exception (so that Run All goes on), and
    a student whose JupyterLab drops, keeps or adds tags has tampered with nothing; the course's tags are run."""
    release = release_notebook()
    release.cells[2].metadata["tags"] = ["raises-exception"]
    for tags in ([], ["raises-exception", "raises-exception"], ["hide-input"]):
        sub = copy.deepcopy(release)
        sub.cells[2].metadata["tags"] = tags
        sub.cells[0].metadata["tags"] = tags
        nb, notes, tampered = rebuild(release, sub)
        assert tampered == [] and notes == [], tags
        assert nb.cells[2].metadata["tags"] == ["raises-exception"] and "tags" not in nb.cells[0].metadata


def test_rebuild_falls_back_to_the_stub_for_deleted_or_retyped_answers():
    release = release_notebook()
    deleted = copy.deepcopy(release)
    del deleted.cells[1]
    retyped = copy.deepcopy(release)
    retyped.cells[1] = cell("markdown", "def f():\n    return 1", **retyped.cells[1].metadata.nbgrader)
    for sub, why in ((deleted, "is missing"), (retyped, "changed type")):
        nb, notes, tampered = rebuild(release, sub)
        assert nb.cells[1].source == release.cells[1].source and nb.cells[1].cell_type == "code"
        assert any(why in n for n in notes) and tampered == []


def test_rebuild_reads_malformed_metadata_that_nbgraders_helpers_raise_on(tmp_path):
    """Why grade.py reads a submission's cells itself (its module docstring): nbformat reads a cell whose
    nbgrader metadata is not a mapping, and nbgrader.utils then raises, where rebuild() carries on."""
    from nbgrader.utils import is_locked, is_solution

    release = release_notebook()
    for index, nbgrader in ((1, "f"), (1, [1]), (1, None), (2, "test_f"), (2, ["grade"])):
        data = json.loads(nbformat.writes(release))
        data["cells"][index]["metadata"]["nbgrader"] = nbgrader
        path = tmp_path / "nb.ipynb"
        path.write_text(json.dumps(data))
        sub = submissions.read_submission(path)
        for helper in (is_solution, is_locked):
            with pytest.raises(AttributeError):
                helper(sub.cells[index])
        nb, notes, tampered = rebuild(release, sub)
        assert [c.source for c in nb.cells] == [c.source for c in release.cells]
        if index == 1:  # the answer cell f: its stub is graded
            assert (notes, tampered) == (["answer cell 'f' is missing: its stub was graded", RECOVER], []), nbgrader
        else:  # the locked test cell: as if deleted
            assert (notes, tampered) == ([], ["test_f (deleted)"]), nbgrader
    list_metadata = nbformat.from_dict({"cell_type": "code", "source": "", "metadata": ["nbgrader"], "outputs": []})
    with pytest.raises(TypeError):
        is_solution(list_metadata)
    assert untrusted_meta(list_metadata) == {} and not untrusted_is_answer(list_metadata)
