"""Every door a student takes grades (issue 37): nbgrader's release, the book's download button, Colab's notebook
(``make notebooks``), a jupytext conversion of the page, and a Colab notebook as Colab saves it back.

A correct notebook from each door gets full marks, an unanswered one zero without "tampered", and one with a
locked cell edited is tampered, whatever the door: for every section by the rebuild (what the sandbox runs is the
release's notebook with the same answers), and end to end through ``make grade``'s command for 11.1, 11.3 and
11.7. Gradescope's front door runs the same core on a Colab-saved notebook (``tests/grading/test_gradescope.py``).
"""

from __future__ import annotations

import csv
import shutil

import nbformat
import pytest

from autograder.grading import cli
from autograder.grading.rebuild import RECOVER, not_this_notebook, rebuild
from course import notebooks as nbs
from course.section import sections
from course.student_notebook import differences, student_notebook
from tests.support import corpus, doors, once

SECTIONS = sections()
SLUGS = [s.slug for s in SECTIONS]
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")


@pytest.fixture(scope="module")
def course():
    """The course of every section, built once per session (shared with tests/grading/test_release.py)."""
    return corpus.course_template(tuple(SLUGS))


def release_path(course, section):
    return course / "release" / section.assignment / f"{section.slug}.ipynb"


@pytest.mark.parametrize("section", SECTIONS, ids=SLUGS)
def test_the_release_the_download_and_colab_are_the_student_notebook(course, section):
    ours = student_notebook(section)
    for door in ("release", "book_download", "colab"):
        nb = doors.notebook(door, section, release_path(course, section))
        if door == "colab":
            assert nb.cells[0].id == "colab-install" and not nbs.grade_id(nb.cells[0])
            nb = nbformat.v4.new_notebook(cells=nb.cells[1:], metadata=nb.metadata)
        assert differences(ours, nb) == [], f"{door}: {differences(ours, nb)}"
        checksums = [nbs.nbgrader_meta(c).get("checksum") for c in nb.cells if nbs.grade_id(c)]
        assert checksums and all(checksums), f"{door}: a graded cell without nbgrader's checksum"


@pytest.mark.parametrize("section", SECTIONS, ids=SLUGS)
def test_what_runs_is_the_same_from_every_door(course, section):
    """The rebuild, which decides what the sandbox runs: from every door, a correct notebook gives the release's
    notebook with the same answers, no note and no tampering; an unanswered one the release itself; one with a
    visible test replaced by ``pass``, tampering that names that test."""
    path = release_path(course, section)
    release = nbformat.read(path, as_version=4)
    expected, _, _ = rebuild(release, doors.solved("release", section, path))
    test_id = next(nbs.grade_id(c) for c in release.cells if nbs.role(c) == "test")
    for door in doors.DOORS:
        solved = doors.solved(door, section, path)
        nb, notes, tampered = rebuild(release, solved)
        assert (notes, tampered) == ([], []), f"{door}: {notes} {tampered}"
        assert [c.source for c in nb.cells] == [c.source for c in expected.cells], door
        nb, notes, tampered = rebuild(release, doors.notebook(door, section, path))
        assert (notes, tampered) == ([], []), f"{door}, unanswered: {notes} {tampered}"
        assert [c.source for c in nb.cells] == [c.source for c in release.cells], door
        _, _, tampered = rebuild(release, doors.edited(solved))
        assert tampered == [f"{test_id} (source changed)"], f"{door}, edited: {tampered}"


def test_a_notebook_that_cannot_be_graded_says_what_to_do(course):
    """Another section's notebook, and one whose cells lost nbgrader's metadata, are not graded as "every locked
    cell deleted" (tampered): they are invalid notebooks, and the student is told how to recover."""
    first, other = SECTIONS[0], SECTIONS[2]
    release = nbformat.read(release_path(course, first), as_version=4)
    wrong = doors.solved("colab_saved", other, release_path(course, other))
    why = not_this_notebook(release, wrong)
    assert why.startswith("this is another notebook") and "masked_softmax" in why and RECOVER in why
    stripped = doors.solved("colab", first, release_path(course, first))
    for cell in stripped.cells:
        cell.metadata.pop("nbgrader", None)
    why = not_this_notebook(release, stripped)
    assert "none of its cells carries nbgrader's metadata" in why and RECOVER in why
    assert not_this_notebook(release, doors.solved("jupytext", first, release_path(course, first))) is None


# ---------------------------------------------------------------- end to end, through make grade's command

#: The sections graded end to end from every door (issue 37 asks for at least these three).
END_TO_END = ("queries-keys-values", "attention-scoring-functions", "transformer")


@pytest.fixture(scope="module")
def graded(course, tmp_path_factory):
    """One class: a correct notebook of each end-to-end section from every door; for 11.1, also an unanswered
    and an edited one from every door. Graded once per session (for every worker) with ``make grade``'s command;
    returns its rows by (student, assignment) and the course."""

    def produce(root):
        course_dir, class_dir = root / "course", root / "class"
        shutil.copytree(course, course_dir)
        by_slug = {s.slug: s for s in SECTIONS}
        for slug in END_TO_END:
            section, path = by_slug[slug], release_path(course_dir, by_slug[slug])
            for door in doors.DOORS:
                notebooks = {"solved": doors.solved(door, section, path)}
                if slug == END_TO_END[0]:
                    notebooks["unanswered"] = doors.notebook(door, section, path)
                    notebooks["edited"] = doors.edited(notebooks["solved"])
                for kind, nb in notebooks.items():
                    folder = class_dir / f"{door}-{kind}" / section.assignment
                    folder.mkdir(parents=True, exist_ok=True)
                    nbformat.write(nb, str(folder / f"{slug}.ipynb"))
        args = [str(class_dir), "--course", str(course_dir), "--jobs", "2", "--out", str(root / "out"), "--quiet"]
        return cli.main([*args, "--no-feedback", "--no-similarity"])

    folder = once.shared_dir(tmp_path_factory) / "doors"
    assert once.run_once(folder, produce) == 0
    with open(folder / "out" / "grades.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    return {(r["student"], r["assignment"]): r for r in rows}, folder / "course"


@needs_bwrap
@pytest.mark.slow
@pytest.mark.parametrize("slug", END_TO_END)
@pytest.mark.parametrize("door", doors.DOORS)
def test_a_correct_notebook_gets_full_marks_from_every_door(graded, slug, door):
    rows, course_dir = graded
    row = rows[f"{door}-solved", slug]
    full = corpus.points_of_tests(nbformat.read(course_dir / "release" / slug / f"{slug}.ipynb", as_version=4))
    assert (row["status"], row["reason"]) == ("graded", ""), row
    assert {k: float(row[k]) for k in full} == full, row
    assert float(row["score"]) == sum(full.values()) and int(row["ungraded"]) > 0  # written answers wait


@needs_bwrap
@pytest.mark.slow
@pytest.mark.parametrize("door", doors.DOORS)
def test_an_unanswered_notebook_scores_zero_and_an_edited_one_is_tampered_from_every_door(graded, door):
    rows, _ = graded
    unanswered, edited = rows[f"{door}-unanswered", END_TO_END[0]], rows[f"{door}-edited", END_TO_END[0]]
    assert (unanswered["status"], float(unanswered["score"])) == ("graded", 0.0), unanswered
    assert "tampered" not in unanswered["reason"] and "edited" not in unanswered["reason"]
    assert (edited["status"], float(edited["score"])) == ("tampered", 0.0), edited
    assert "(source changed)" in edited["reason"] and RECOVER in edited["reason"]
