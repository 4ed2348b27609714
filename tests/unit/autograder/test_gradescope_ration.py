"""autograder/gradescope/ration.py and its place in results.json: full feedback for a student's first N submissions
in a sliding window, scores only after that, worked out from Gradescope's submission_metadata.json."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from autograder.gradescope import ration
from autograder.gradescope import results as gs_results
from autograder.gradescope.settings import Settings
from autograder.nbcourse import GradingError

ZONE = dt.timezone(dt.timedelta(hours=-7))
NOW = dt.datetime(2026, 3, 2, 12, 0, tzinfo=ZONE)


def metadata(*hours_before, errors=(), now=NOW, shuffle=False) -> dict:
    """Gradescope's metadata for a submission at ``now`` whose previous submissions were ``hours_before`` it
    (those in ``errors`` marked as autograder errors), as Gradescope writes it (times with their offset)."""
    previous = [
        {
            "submission_time": (now - dt.timedelta(hours=h)).isoformat(timespec="microseconds"),
            "score": 1.0,
            "autograder_error": h in errors,
        }
        for h in hours_before
    ]
    if shuffle:
        previous.reverse()
    return {"id": 7, "created_at": now.isoformat(timespec="microseconds"), "previous_submissions": previous}


def test_the_first_n_submissions_in_the_window_get_full_feedback():
    first = ration.allowance(metadata(), limit=3, hours=24)
    assert first.full and first.used == 0 and first.returns is None
    third = ration.allowance(metadata(5, 1), limit=3, hours=24)
    assert third.full and third.used == 2
    assert (
        third.summary()
        == "Full feedback: submission 3 of the 3 with full feedback that the course allows in any 24 hours."
    )


def test_past_the_allowance_only_scores_until_the_oldest_leaves_the_window():
    got = ration.allowance(metadata(20, 5, 1), limit=3, hours=24)
    assert not got.full and got.used == 3
    assert got.returns == NOW - dt.timedelta(hours=20) + dt.timedelta(hours=24)  # 16:00 the same day, at -07:00
    assert got.returns.utcoffset() == dt.timedelta(hours=-7)  # said in the time zone Gradescope gave
    sentence = got.sentence()
    assert sentence.startswith("Scores only: 3 of your submissions in the 24 hours before this one had full feedback")
    assert "from 2026-03-02 16:00 (UTC-07:00) on" in sentence and "shown after the due date" in sentence
    assert ration.allowance(metadata(20, 5, 1, shuffle=True), limit=3, hours=24) == got  # any order of the list


def test_submissions_outside_the_window_or_marked_as_autograder_errors_do_not_count():
    assert ration.allowance(metadata(30, 25, 1), limit=2, hours=24).full  # 30 h and 25 h ago: outside
    assert ration.allowance(metadata(3, 1, errors=(3,)), limit=2, hours=24).full  # no fault of the student's
    assert not ration.allowance(metadata(3, 1), limit=2, hours=24).full
    assert not ration.allowance(metadata(0.5, 0.2), limit=2, hours=1).full  # the window is the instructor's
    assert ration.allowance(metadata(1.5, 0.2), limit=2, hours=1).full
    later = metadata(1, now=NOW)
    later["previous_submissions"].append({"submission_time": (NOW + dt.timedelta(hours=1)).isoformat()})
    assert ration.allowance(later, limit=1, hours=24).used == 1  # a later submission (a regrade) is not before it


def test_scores_only_submissions_do_not_prolong_the_wait():
    # Full feedback at 24.5 h and 23.5 h before now, scores only at 22.5 h and 21.5 h (past the allowance of 2); now
    # the first left the window, so one full feedback is in it: this one gets it. Counting every submission would
    # have said 3 in the window and kept the student waiting as long as they kept submitting.
    got = ration.allowance(metadata(24.5, 23.5, 22.5, 21.5), limit=2, hours=24)
    assert got.full and got.used == 1


def test_without_usable_metadata_the_student_gets_full_feedback_and_the_log_says_why(tmp_path):
    data, problem = ration.read_metadata(tmp_path / ration.METADATA)
    assert data is None and "does not exist" in problem
    got = ration.allowance(data, 2, 24, problem)
    assert got.full and "does not exist" in got.problem and got.summary() == ""
    (tmp_path / ration.METADATA).write_text("{not json")
    assert "cannot read" in ration.read_metadata(tmp_path / ration.METADATA)[1]
    assert "created_at" in ration.allowance({"created_at": "yesterday"}, 2, 24).problem
    odd = metadata(1)
    odd["previous_submissions"].append({"submission_time": None})
    got = ration.allowance(odd, 2, 24)
    assert got.full and got.used == 1 and "1 previous submission(s) without a readable time" in got.note
    naive = {"created_at": "2026-03-02T12:00:00", "previous_submissions": [{"submission_time": "2026-03-02T11:00:00"}]}
    assert not ration.allowance(naive, 1, 24).full  # no time zone: UTC, for both


def test_the_rule_is_set_at_build_time_and_checked():
    assert Settings("x", output="visible", full_feedback=3, feedback_window_hours=12).full_feedback == 3
    with pytest.raises(GradingError, match="with output 'after_due_date' they see none before the due date"):
        Settings("x", full_feedback=3)
    with pytest.raises(GradingError, match="a whole number of at least 1"):
        Settings("x", output="visible", full_feedback=0)
    with pytest.raises(GradingError, match="feedback_window_hours must be a positive number"):
        Settings("x", output="visible", full_feedback=2, feedback_window_hours=0)


def release_cells():
    return [("test_a", "Exercise 1: masks", 2.0), ("test_b", "Exercise 2: scores", 1.0)]


def results(allowance):
    settings = Settings("x", output="visible", full_feedback=2)
    feedback = {"test_a": "weights match", "test_b": "CheckFailed: mask differs\n  hint: fill with -1e6"}
    return gs_results.build(
        release_cells(), {"test_a": 2.0, "test_b": 0.0}, feedback, "Graded.", settings, 1.0, allowance=allowance
    )


def test_a_rationed_submission_shows_names_and_scores_and_says_why_and_until_when():
    rationed = ration.allowance(metadata(3, 1), limit=2, hours=24)
    data = results(rationed)
    assert gs_results.check_format(data) == []
    graded = [t for t in data["tests"] if "grade_id" in t["extra_data"]]
    assert [(t["name"], t["score"], t["visibility"]) for t in graded] == [
        ("Exercise 1: masks", 2.0, "visible"),
        ("Exercise 2: scores", 0.0, "visible"),
    ]
    assert {t["output"] for t in graded} == {rationed.sentence()}
    assert "hint" not in json.dumps([t for t in data["tests"] if t["visibility"] == "visible"])
    later = [t for t in data["tests"] if "feedback_of" in t["extra_data"]]
    assert [(t["extra_data"]["feedback_of"], t["visibility"]) for t in later] == [
        ("test_a", "after_due_date"),
        ("test_b", "after_due_date"),
    ]
    assert "hint: fill with -1e6" in later[1]["output"]  # kept for after the due date, not lost
    assert data["output"].endswith(rationed.sentence()) and data["extra_data"]["feedback"]["full"] is False


def test_a_submission_within_the_allowance_shows_everything_at_once():
    data = results(ration.allowance(metadata(1), limit=2, hours=24))
    assert [t["visibility"] for t in data["tests"]] == ["visible", "visible"]  # no entries held back
    assert "hint: fill with -1e6" in data["tests"][1]["output"]
    assert (
        data["output"] == "Graded.\n\nFull feedback: submission 2 of the 2 with full feedback that the course "
        "allows in any 24 hours."
    )
    assert data["extra_data"]["feedback"] == {
        "full": True,
        "used": 1,
        "limit": 2,
        "window_hours": 24,
        "returns_at": None,
        "problem": "",
        "note": "",
    }
