"""What an instructor chooses for one Gradescope autograder, written into its zip as ``gradescope.json`` by
``make gradescope`` and read back by ``run_autograder``: checked once, frozen, with a clear error for a bad value."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from autograder.grading.options import TAMPER_POLICIES
from autograder.nbcourse import GradingError

#: The file in the zip (``/autograder/source/gradescope.json`` on Gradescope).
NAME = "gradescope.json"
#: Gradescope's visibility values, from the most hidden to the most visible: ``hidden`` (never shown to
#: students), ``after_due_date``, ``after_published`` (once the grades are published), ``visible``.
VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")


@dataclasses.dataclass(frozen=True)
class Settings:
    """One section's autograder.

    ``assignment``: the section's slug (its nbgrader assignment and notebook). ``tests``: when students see each
    exercise's name and score; ``output``: when they see its feedback (a failed check's message and hint); where
    the two differ, the feedback goes in an entry of its own (:mod:`autograder.gradescope.results`).
    ``stdout``: when they see the autograder's log (Gradescope's ``stdout_visibility``; instructors always do).
    ``bubblewrap``: grade in bubblewrap, which needs user namespaces that Gradescope's containers lack; False (the
    default) grades without it (:mod:`autograder.sandbox`, README.md). ``tampered``: what a tampered notebook
    scores, as ``make grade --tampered``. ``deadline``, ``memory_gib``: limits that hold whatever the section's
    ``grading:`` block says (None: the section's own, else the grader's defaults, as ``make grade``).
    ``train_smoke``: the ``QKV_TRAIN_SMOKE`` the zip's trained weights were made under ("" for real ones; the
    test suite's zips only).
    ``full_feedback``, ``feedback_window_hours``: ration full feedback to the first ``full_feedback`` submissions in
    any ``feedback_window_hours`` (:mod:`autograder.gradescope.ration`; None: every submission gets it). Rationing
    is about the feedback students see at once, so it needs ``output`` ``visible``.
    ``container_mb``: the memory Gradescope's container needs for this section, in MB as Gradescope's autograder
    settings give it (measured, :mod:`autograder.gradescope.memory`); ``run_autograder``'s log warns when the
    container has less."""

    assignment: str
    tests: str = "visible"
    output: str = "after_due_date"
    stdout: str = "hidden"
    bubblewrap: bool = False
    tampered: str = "zero"
    deadline: float | None = None
    memory_gib: float | None = None
    train_smoke: str = ""
    full_feedback: int | None = None
    feedback_window_hours: float = 24.0
    container_mb: int = 768

    def __post_init__(self) -> None:
        if not isinstance(self.assignment, str) or not self.assignment:
            raise GradingError(f"assignment is a section's slug, not {self.assignment!r}")
        for field in ("tests", "output", "stdout"):
            value = getattr(self, field)
            if value not in VISIBILITIES:
                raise GradingError(f"{field} visibility must be one of {', '.join(VISIBILITIES)}, not {value!r}")
        if not isinstance(self.bubblewrap, bool):
            raise GradingError(f"bubblewrap is true or false, not {self.bubblewrap!r}")
        if self.tampered not in TAMPER_POLICIES:
            raise GradingError(f"tampered must be one of {', '.join(TAMPER_POLICIES)}, not {self.tampered!r}")
        for field in ("deadline", "memory_gib"):
            value = getattr(self, field)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float) or value <= 0):
                raise GradingError(f"{field} must be a positive number or null, not {value!r}")
        if not isinstance(self.train_smoke, str):
            raise GradingError(f"train_smoke is a string, not {self.train_smoke!r}")
        if self.full_feedback is not None and (
            isinstance(self.full_feedback, bool) or not isinstance(self.full_feedback, int) or self.full_feedback < 1
        ):
            raise GradingError(
                f"full_feedback is how many submissions get full feedback in each window, a whole number of at least "
                f"1 (or null: all of them), not {self.full_feedback!r}"
            )
        window = self.feedback_window_hours
        if isinstance(window, bool) or not isinstance(window, int | float) or window <= 0:
            raise GradingError(f"feedback_window_hours must be a positive number of hours, not {window!r}")
        if self.full_feedback is not None and self.output != "visible":
            raise GradingError(
                f"full_feedback rations the feedback students see at once, but with output {self.output!r} they see "
                "none before the due date: build with --output visible as well"
            )
        if isinstance(self.container_mb, bool) or not isinstance(self.container_mb, int) or self.container_mb <= 0:
            raise GradingError(f"container_mb must be a positive whole number of MB, not {self.container_mb!r}")

    def to_json(self) -> str:
        """These settings as the text of ``gradescope.json``."""
        return json.dumps(dataclasses.asdict(self), indent=2) + "\n"

    @classmethod
    def read(cls, path: Path) -> Settings:
        """The settings at ``path``, or :class:`GradingError` saying what is wrong with the file."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise GradingError(f"cannot read the autograder's settings {path}: {err}") from None
        known = {f.name for f in dataclasses.fields(cls)}
        if not isinstance(data, dict) or set(data) - known:
            extra = sorted(set(data) - known) if isinstance(data, dict) else data
            raise GradingError(f"{path}: unknown settings {extra!r}; known: {', '.join(sorted(known))}")
        try:
            return cls(**data)
        except TypeError as err:
            raise GradingError(f"{path}: {err}") from None
