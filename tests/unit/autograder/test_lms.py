"""autograder/lms.py: the gradebook's scores into a Canvas gradebook export, every other cell as it was."""

from __future__ import annotations

import csv
import datetime
import io
import os
import sys
import warnings

import pytest

from autograder import lms
from autograder.nbcourse import Course, GradingError

# A gradebook export as Canvas writes it (Canvas guide "How do I export grades in the Gradebook?"): the identity
# columns, one column per assignment named "NAME (ID)", Canvas's read-only totals; the Points Possible row; a test
# student; students with and without scores. Two of the columns are ours; "Week 1 Quiz" is not.
CANVAS = """\
\ufeffStudent,ID,SIS User ID,SIS Login ID,Section,Week 1 Quiz (4690),Attention Scoring Functions (4711),\
Queries Keys Values (4712),Assignments Current Score,Assignments Unposted Current Score,Assignments Final Score,\
Assignments Unposted Final Score,Current Score,Unposted Current Score,Final Score,Unposted Final Score
    Points Possible,,,,,5.00,6.00,4.00,(read only),(read only),(read only),(read only),(read only),(read only),\
(read only),(read only)
"Abebe, Ann",101,S0101,ann,D2L Ch. 11 - Section 1,4.50,,,90.00,90.00,30.00,30.00,90.00,90.00,30.00,30.00
"Brown, Ben",102,S0102,bbrown,D2L Ch. 11 - Section 1,3.00,1.00,,60.00,60.00,20.00,20.00,60.00,60.00,20.00,20.00
"Chen, Cara",103,S0103,cara,D2L Ch. 11 - Section 2,,,,,,0.00,0.00,,,0.00,0.00
"Diaz, Dan",104,S0104,dan,D2L Ch. 11 - Section 2,5.00,,,100.00,100.00,33.33,33.33,100.00,100.00,33.33,33.33
"Student, Test",105,,,D2L Ch. 11 - Section 1,,,,,,,,,,,
"""
ASSIGNMENTS = {
    "attention-scoring-functions": [("e1", 3.0), ("e2", 2.0), ("written", 1.0)],  # cell, points; written: markdown
    "queries-keys-values": [("q1", 4.0)],
}


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A course whose gradebook holds: ann 5 of 6 in 11.3 (a written answer still waiting) and 4 of 4 in 11.1;
    ben (Canvas login bbrown) 6 of 6 in 11.3, handed in a day late with 2 points off; eve, whom Canvas does not
    know, 2 in 11.1; cara and dan handed in nothing."""
    from nbgrader.api import Gradebook

    root = tmp_path_factory.mktemp("course")  # read by every test, written by none
    here = os.path.dirname(sys.executable)  # nbgrader asks the alembic beside this Python for its migrations
    if here not in os.environ["PATH"].split(os.pathsep):
        os.environ["PATH"] = here + os.pathsep + os.environ["PATH"]
    due = datetime.datetime(2026, 12, 1, 12, 0)
    with warnings.catch_warnings(), Gradebook(f"sqlite:///{root / 'gradebook.db'}", "default_course") as gb:
        warnings.simplefilter("ignore")  # SQLAlchemy's autoflush warnings inside nbgrader's add_submission
        for assignment, cells in ASSIGNMENTS.items():
            gb.add_assignment(assignment, duedate=due)
            gb.add_notebook(assignment, assignment)
            for name, points in cells:
                kind = "markdown" if name == "written" else "code"
                gb.add_grade_cell(name, assignment, assignment, max_score=points, cell_type=kind)
        for student in ("ann", "ben", "eve"):
            gb.add_student(student)

        def hand_in(assignment, student, points, late=0.0, stamp=due):
            sub = gb.add_submission(assignment, student, timestamp=stamp)
            nb = gb.find_submission_notebook(assignment, assignment, student)
            for grade in nb.grades:
                grade.auto_score = points.get(grade.name)
                grade.needs_manual_grade = grade.auto_score is None
            nb.late_submission_penalty = late
            gb.db.commit()
            return sub

        hand_in("attention-scoring-functions", "ann", {"e1": 3.0, "e2": 2.0})
        hand_in("queries-keys-values", "ann", {"q1": 4.0})
        hand_in("attention-scoring-functions", "ben", {"e1": 3.0, "e2": 2.0, "written": 1.0}, late=2.0,
                stamp=due + datetime.timedelta(days=1))  # fmt: skip
        hand_in("queries-keys-values", "eve", {"q1": 2.0})
    return Course.load(root)


def export_file(tmp_path, text=CANVAS):
    path = tmp_path / "canvas.csv"
    path.write_text(text, encoding="utf-8")
    return path


def table(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text.removeprefix("\ufeff"))))


def test_scores_are_nbgrader_exports_after_the_late_penalty(course, tmp_path):
    scores = lms.gradebook_scores(course)
    assert {a: {s: (x.score, x.max_score, x.waits) for s, x in by.items()} for a, by in scores.items()} == {
        "attention-scoring-functions": {"ann": (5.0, 6.0, True), "ben": (4.0, 6.0, False)},
        "queries-keys-values": {"ann": (4.0, 4.0, False), "eve": (2.0, 4.0, False)},
    }
    with open(lms.write_nbgrader_csv(course, tmp_path / "nb.csv"), newline="") as fh:
        theirs = {(r["assignment"], r["student_id"]): float(r["score"]) for r in csv.DictReader(fh)}
    for assignment, by in scores.items():
        for student, score in by.items():
            assert theirs[assignment, student] == score.score  # the same numbers as nbgrader export


def test_canvas_gets_our_columns_filled_and_every_other_cell_as_it_was(course, tmp_path):
    filled = lms.fill_canvas(lms.read_export(export_file(tmp_path)), lms.gradebook_scores(course), {"ben": "bbrown"})
    out = table(lms.write_export(filled.export, tmp_path / "import.csv").read_text())
    before = table(CANVAS)
    assert out[0] == [h.strip() for h in before[0]]
    ours = {out[0].index("Attention Scoring Functions (4711)"), out[0].index("Queries Keys Values (4712)")}
    changed = {(r, c) for r, row in enumerate(out) for c, cell in enumerate(row) if cell != before[r][c]}
    assert {c for _, c in changed} <= ours, "only our two columns may change"
    rows = {row[3] or row[0]: row for row in out[2:]}
    asf, qkv = sorted(ours)
    assert (rows["ann"][asf], rows["ann"][qkv]) == ("5", "4")
    assert (rows["bbrown"][asf], rows["bbrown"][qkv]) == ("4", "")  # late: 6 - 2; no 11.1 submission: as it was
    assert (rows["cara"][asf], rows["dan"][asf]) == ("", "")
    assert out[1] == before[1]  # the Points Possible row
    assert filled.written == 3
    assert filled.columns == {
        "attention-scoring-functions": "Attention Scoring Functions (4711)",
        "queries-keys-values": "Queries Keys Values (4712)",
    }
    assert filled.course_only == ["eve"]
    assert filled.canvas_only == ["Chen, Cara (cara)", "Diaz, Dan (dan)", "Student, Test (no login)"]
    assert any("1 of the scores count written answers that wait" in n for n in filled.notes), filled.notes


def test_without_the_map_a_different_login_is_a_student_on_each_side(course, tmp_path):
    filled = lms.fill_canvas(lms.read_export(export_file(tmp_path)), lms.gradebook_scores(course))
    assert filled.course_only == ["ben", "eve"]
    assert "Brown, Ben (bbrown)" in filled.canvas_only


def test_points_possible_that_differ_from_the_course_are_noted(course, tmp_path):
    text = CANVAS.replace(",5.00,6.00,4.00,", ",5.00,60.00,4.00,")
    filled = lms.fill_canvas(lms.read_export(export_file(tmp_path, text)), lms.gradebook_scores(course))
    assert any("Canvas gives 60.00 points possible, the course 6" in note for note in filled.notes)


def test_a_csv_that_is_not_a_canvas_export_says_how_to_get_one(tmp_path):
    with pytest.raises(GradingError, match="no column SIS Login ID, Section.*Export Entire Gradebook"):
        lms.read_export(export_file(tmp_path, "Student,ID,SIS User ID\nAnn,1,2\n"))
    with pytest.raises(GradingError, match="is empty"):
        lms.read_export(export_file(tmp_path, ""))


def test_a_missing_assignment_column_says_what_to_do(course, tmp_path):
    text = CANVAS.replace("Queries Keys Values (4712)", "Homework 2 (4712)")
    export = lms.read_export(export_file(tmp_path, text))
    scores = lms.gradebook_scores(course)
    with pytest.raises(GradingError) as err:
        lms.fill_canvas(export, scores)
    message = str(err.value)
    assert "no column for queries-keys-values" in message
    for remedy in ("create the assignment in Canvas", "--column queries-keys-values=", "--add-missing"):
        assert remedy in message
    assert "Homework 2 (4712)" in message  # the columns it could be
    named = lms.fill_canvas(export, scores, named={"queries-keys-values": "Homework 2 (4712)"})
    assert named.columns["queries-keys-values"] == "Homework 2 (4712)"
    with pytest.raises(GradingError, match="has no such column"):
        lms.fill_canvas(lms.read_export(export_file(tmp_path, text)), scores, named={"queries-keys-values": "HW2"})


def test_add_missing_adds_a_column_before_canvass_totals_with_our_points(course, tmp_path):
    text = CANVAS.replace("Queries Keys Values (4712)", "Homework 2 (4712)")
    filled = lms.fill_canvas(lms.read_export(export_file(tmp_path, text)), lms.gradebook_scores(course), add=True)
    out = table(lms.write_export(filled.export, tmp_path / "import.csv").read_text())
    at = out[0].index("queries-keys-values")
    assert out[0][at + 1] == "Assignments Current Score" and out[0][at - 1] == "Homework 2 (4712)"
    assert out[1][at] == "4" and [row[at] for row in out[2:]] == ["4", "", "", "", ""]
    assert all(len(row) == len(out[0]) for row in out)


def test_the_map_file_is_checked(tmp_path):
    bad = tmp_path / "map.csv"
    bad.write_text("id,email\nben,b@x\n")
    with pytest.raises(GradingError, match="needs the columns student .* and login"):
        lms.read_map(bad)
    bad.write_text("student,login\nben,bbrown\nben,ben2\n")
    with pytest.raises(GradingError, match="line 3: ben is mapped to two logins"):
        lms.read_map(bad)
    bad.write_text("student,login\nben,bbrown\n")
    assert lms.read_map(bad) == {"ben": "bbrown"}


def test_the_command_writes_both_files_and_lists_who_is_on_one_side(course, tmp_path, capsys):
    mapping = tmp_path / "map.csv"
    mapping.write_text("student,login\nben,bbrown\n")
    args = ["--course", str(course.root), "--canvas", str(export_file(tmp_path)), "--map", str(mapping)]
    assert lms.main([*args, "--out", str(tmp_path / "out")]) == 0
    said = capsys.readouterr().out
    assert (tmp_path / "out" / "canvas-import.csv").exists() and (tmp_path / "out" / "nbgrader-grades.csv").exists()
    assert "in the gradebook, not in Canvas (1): eve" in said
    assert "in Canvas, no submission in the gradebook (3): Chen, Cara (cara)" in said
    assert lms.main([*args, "--assignment", "no-such-section"]) == 2
    assert "no assignment no-such-section in the gradebook" in capsys.readouterr().err
