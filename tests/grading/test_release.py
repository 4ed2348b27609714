"""The nbgrader round trip: assembled sources -> nbgrader generate_assignment -> release == book/."""

from __future__ import annotations

import copy
import platform
import re
import subprocess

import nbformat
import pytest

from autograder import assemble, release
from autograder.release import venv_env
from course import assistants
from course import notebooks as nbs
from course.section import sections
from publish import colab
from tests.support import corpus

SECTIONS = sections()


@pytest.fixture(scope="module")
def released():
    """The course of every section, built once per session and content (shared with tests/grading/test_rubrics.py)."""
    root = corpus.course_template(tuple(s.slug for s in SECTIONS))
    paths = [root / "release" / s.assignment / f"{s.slug}.ipynb" for s in SECTIONS]
    return root, {p.parent.name: nbformat.read(p, as_version=4) for p in paths}


@pytest.mark.parametrize("section", SECTIONS, ids=lambda s: s.slug)
def test_release_equals_book_cell_for_cell(released, section):
    """The release is the book's page cell for cell, less the book's hidden checks of its own prose (``book-check``:
    they are run whenever the book is built, and are no part of what students get)."""
    _, notebooks = released
    release, book = notebooks[section.assignment], nbs.read(section.path)
    assert not [c for c in release.cells if nbs.is_book_check(c)]
    book.cells = [c for c in book.cells if not nbs.is_book_check(c)]
    assert len(release.cells) == len(book.cells)
    for i, (r, b) in enumerate(zip(release.cells, book.cells)):
        assert r.cell_type == b.cell_type, f"cell {i}"
        assert r.source == b.source, f"cell {i} ({nbs.grade_id(b)}) differs between release and book"
        for key in ("grade_id", "points", "locked", "solution", "grade"):
            assert nbs.nbgrader_meta(r).get(key) == nbs.nbgrader_meta(b).get(key), f"cell {i}: nbgrader {key}"


def test_every_release_folder_carries_the_policy_for_coding_assistants_beside_the_notebook(released):
    """nbgrader copies it from the source folder (:func:`autograder.release.write_sources`) into the folder that
    its exchange hands each student; the text is the policy course.toml chooses."""
    root, _ = released
    text = assistants.render(assistants.chosen())
    for section in SECTIONS:
        folder = root / "release" / section.assignment
        assert sorted(p.name for p in folder.iterdir()) == sorted([f"{section.slug}.ipynb", *assistants.FILE_NAMES])
        for name in assistants.FILE_NAMES:
            assert (folder / name).read_text(encoding="utf-8") == text, f"{section.slug}/{name}"


@pytest.mark.parametrize("section", SECTIONS, ids=lambda s: s.slug)
def test_source_holds_solutions_and_hidden_tests_and_release_does_not(released, section):
    root, notebooks = released
    source = nbformat.read(root / "source" / section.assignment / f"{section.slug}.ipynb", as_version=4)
    text = "\n".join(c.source for c in source.cells)
    assert assemble.BEGIN_SOLUTION in text and assemble.BEGIN_HIDDEN in text
    released_text = "\n".join(c.source for c in notebooks[section.assignment].cells)
    assert "BEGIN SOLUTION" not in released_text and "HIDDEN TESTS" not in released_text
    for path in section.grading_dir.glob("*.py"):
        # What the source holds: the hidden test as assembled (its `from _common import` replaced by the helpers).
        hidden = path.read_text() if path.stem == "_common" else assemble.hidden_tests(section, path.stem)
        first = next(line for line in hidden.splitlines() if line.strip() and not line.startswith("#"))
        assert first in text and first not in released_text, f"{path.name} in source, not in release"


def _validate(path, env=None) -> str:
    """``nbgrader validate PATH`` as a student runs it, from the notebook's folder; returns what it printed."""
    result = subprocess.run(
        [release.nbgrader_bin(), "validate", path.name],
        cwd=path.parent,
        env=env or release.venv_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    return result.stdout + result.stderr


@pytest.mark.slow
def test_nbgrader_validate_passes_a_finished_notebook_and_names_what_is_left(tmp_path):
    """The student's last step before handing in, on 11.1's release: finished (also on Colab, with the install
    cell in front) it passes; as released, it names the stubs and the answers still to write."""
    release = corpus.course_template((corpus.SLUG,)) / "release" / corpus.SLUG / f"{corpus.SLUG}.ipynb"
    solved = corpus.solved_notebook(release, corpus.SLUG)
    on_colab = copy.deepcopy(solved)
    on_colab.cells.insert(0, colab.install_cell(*colab.repository()[:2]))
    for name, nb in (("finished", solved), ("colab", on_colab), ("released", nbformat.read(release, as_version=4))):
        nbformat.write(nb, str(tmp_path / f"{name}.ipynb"))
    assert "Success! Your notebook passes all the tests." in _validate(tmp_path / "finished.ipynb")
    # With the students' configuration (make lab, Binder, a hub), nothing in the output looks like a problem.
    student_env = {**venv_env(), "JUPYTER_CONFIG_PATH": str(nbs.ROOT / "student" / "jupyter")}
    said = _validate(tmp_path / "colab.ipynb", student_env)
    assert "Success! Your notebook passes all the tests." in said
    assert "No nbgrader_config.py" not in said and "without encryption" not in said, said
    said = _validate(tmp_path / "released.ipynb")
    # Every test cell fails on its stub, and every written answer is empty: counted from the release itself.
    released = nbformat.read(release, as_version=4)
    stubs = [
        re.match(r"# Exercise \d+ \(\d+ points?\): write (\w+)", c.source).group(1)
        for c in released.cells
        if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution")
    ]
    answers = [
        c for c in released.cells if c.cell_type == "markdown" and c.metadata.get("nbgrader", {}).get("solution")
    ]
    assert stubs and answers, "11.1's release should have stubs and written answers"
    assert f"VALIDATION FAILED ON {len(stubs) + len(answers)} CELL(S)!" in said and "NotImplementedError" in said
    assert said.count("You did not provide a response.") == len(answers)
    for stub in stubs:
        assert f'print("{stub}: all visible tests passed")' in said, f"validate does not list {stub}'s test cell"


def test_release_and_colab_notebooks_carry_the_kernels_language_info(released):
    """JupyterLab writes ``language_info`` from the kernel into a notebook that lacks it, so a notebook without it
    opens as modified; the release (nbgrader keeps the source's metadata) and the Colab notebooks carry it."""
    _, notebooks = released
    expected = {
        "name": "python",
        "mimetype": "text/x-python",
        "file_extension": ".py",
        "pygments_lexer": "ipython3",
        "codemirror_mode": {"name": "ipython", "version": 3},
        "nbconvert_exporter": "python",
    }
    url, branch, _ = colab.repository()
    for section in SECTIONS:
        for where, nb in (
            ("release", notebooks[section.assignment]),
            ("colab", colab.colab_notebook(section, url, branch)),
        ):
            info = nb.metadata.get("language_info")
            assert info is not None, f"{section.slug}: the {where} notebook has no language_info"
            assert {k: info.get(k) for k in expected} == expected, f"{section.slug} ({where}): {info}"
            assert info["version"] == platform.python_version(), f"{section.slug} ({where}): version {info['version']}"


def test_generate_stops_at_a_failing_assignment_and_says_which(tmp_path):
    """release() runs every generate_assignment in one process (autograder.generate): a failure must still stop it
    with a non-zero status and nbgrader's own reason, naming the assignment."""
    import shutil
    import sys

    shutil.copyfile(nbs.ROOT / "autograder" / "nbgrader_config.py", tmp_path / "nbgrader_config.py")
    env = release.venv_env() | {"PYTHONPATH": str(nbs.ROOT)}
    cmd = [sys.executable, "-m", "autograder.generate", "missing-section"]
    result = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "generate_assignment missing-section failed" in result.stdout
    assert "No notebooks were matched" in result.stdout
    usage = subprocess.run(cmd[:3], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert usage.returncode == 2 and "usage" in usage.stdout
