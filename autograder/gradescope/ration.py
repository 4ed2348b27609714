"""Full feedback an instructor rations: the first N submissions in a sliding window get it, the rest scores only.

``make gradescope GRADESCOPE_ARGS="--output visible --full-feedback 3 --feedback-window-hours 24"``: each
submission gets full feedback (every test's output) when fewer than 3 of the student's submissions in the 24 hours
before it got full feedback; otherwise its tests show their names and scores, each output one sentence saying why
and when full feedback returns, and the feedback itself is shown after the due date (:mod:`~.results`).

Gradescope writes ``/autograder/submission_metadata.json`` before ``run_autograder`` runs (its documentation,
"Submission Metadata")::

    {"created_at": "2018-07-01T14:22:32.365935-07:00",            # this submission's time
     "previous_submissions": [{"submission_time": "2017-04-06T14:24:48.087023-07:00", "score": 0.0,
                               "autograder_error": false, "results": {...}}, ...], ...}

Only the latest previous submission carries its results, so which earlier ones got full feedback is worked out
again from their times, by the same rule, in order: the answer does not depend on when the autograder runs (a
regrade gives each submission what it got), and a submission made while the allowance was spent does not prolong
the wait. Time is the submission's own ``created_at``, never the clock, as Gradescope advises. A submission that
Gradescope marks ``autograder_error`` (no fault of the student's) counts for nothing. Where the metadata is missing
or unreadable, the submission gets full feedback and the log says why: a student never loses feedback to a fault
of the platform's.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path

#: The file Gradescope writes beside ``source/`` and ``submission/``.
METADATA = "submission_metadata.json"


@dataclasses.dataclass(frozen=True)
class Allowance:
    """Whether one submission gets full feedback: ``full``; ``used``, the submissions with full feedback in the
    window before it; ``limit`` and ``hours``, the instructor's rule; ``returns``, when ``full`` is False, the time
    from which a submission gets full feedback again; ``problem``, why the metadata could not be used (then
    ``full`` is True); ``note``, what of it was left out (for the log)."""

    full: bool
    used: int
    limit: int
    hours: float
    returns: dt.datetime | None = None
    problem: str = ""
    note: str = ""

    def window(self) -> str:
        """The window in words: ``24 hours``, ``1 hour``, ``1.5 hours``."""
        return f"{self.hours:g} hour" + ("" if self.hours == 1 else "s")

    def sentence(self) -> str:
        """What a test's output says in place of its feedback, for a submission past the allowance (Markdown)."""
        return (
            f"Scores only: {self.used} of your submissions in the {self.window()} before this one had full feedback, "
            f"the course's limit. Full feedback returns for a submission made from {when(self.returns)} on; "
            "this submission's feedback is shown after the due date."
        )

    def summary(self) -> str:
        """One paragraph for the whole submission's output (Markdown)."""
        if not self.full:
            return self.sentence()
        if self.problem:
            return ""  # said in the log: the student gets what every submission gets without rationing
        return (
            f"Full feedback: submission {self.used + 1} of the {self.limit} with full feedback that the course "
            f"allows in any {self.window()}."
        )

    def record(self) -> dict:
        """For ``extra_data``: the decision and what it rests on."""
        return {
            "full": self.full,
            "used": self.used,
            "limit": self.limit,
            "window_hours": self.hours,
            "returns_at": self.returns.isoformat() if self.returns else None,
            "problem": self.problem,
            "note": self.note,
        }


def when(moment: dt.datetime | None) -> str:
    """A time as a student reads it, in the time zone Gradescope gave: ``2026-03-02 14:05 (UTC-07:00)``."""
    if moment is None:
        return "now"
    zone = moment.strftime("%Z") or "UTC"
    return f"{moment:%Y-%m-%d %H:%M} ({zone})"


def parse_time(value) -> dt.datetime:
    """An ISO 8601 time from the metadata (one without a time zone is taken as UTC); ValueError if it is not one."""
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not a time")
    moment = dt.datetime.fromisoformat(value.strip())
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


def read_metadata(path: Path) -> tuple[dict | None, str]:
    """The metadata at ``path``, or ``(None, why)``."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, f"{path} does not exist"
    except (OSError, ValueError) as err:
        return None, f"cannot read {path}: {err}"
    if not isinstance(data, dict):
        return None, f"{path} holds {type(data).__name__}, not an object"
    return data, ""


def allowance(metadata: dict | None, limit: int, hours: float, problem: str = "") -> Allowance:
    """Whether the submission that ``metadata`` describes gets full feedback when at most ``limit`` submissions in
    any ``hours`` do (``problem``: why ``metadata`` is None)."""
    fallback = lambda why: Allowance(True, 0, limit, hours, problem=why)  # noqa: E731
    if metadata is None:
        return fallback(problem or "no submission metadata")
    try:
        now = parse_time(metadata.get("created_at"))
    except ValueError as err:
        return fallback(f"the submission's created_at: {err}")
    previous = metadata.get("previous_submissions") or []
    if not isinstance(previous, list):
        return fallback("previous_submissions is not a list")
    times, skipped = [], 0
    for entry in previous:
        if not isinstance(entry, dict) or entry.get("autograder_error") is True:
            skipped += not isinstance(entry, dict)
            continue
        try:
            moment = parse_time(entry.get("submission_time"))
        except ValueError:
            skipped += 1
            continue
        if moment < now:
            times.append(moment)
    window = dt.timedelta(hours=hours)
    full: list[dt.datetime] = []
    for moment in sorted(times):
        if len([t for t in full if t > moment - window]) < limit:
            full.append(moment)
    recent = sorted(t for t in full if t > now - window)
    note = f"{skipped} previous submission(s) without a readable time were left out" if skipped else ""
    if len(recent) < limit:
        return Allowance(True, len(recent), limit, hours, note=note)
    # The oldest of them leaves the window at its time plus the window: from then on, fewer than ``limit`` are in it.
    returns = (recent[-limit] + window).astimezone(now.tzinfo)
    return Allowance(False, len(recent), limit, hours, returns, note=note)
