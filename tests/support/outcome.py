"""What a run of a section notebook with chosen answers reports (:mod:`tests.support.inprocess`)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class TestOutcome:
    """What one test cell did: its visible part, then its hidden part (None when not run)."""

    __test__ = False  # not a pytest test class

    visible_error: str | None = None
    hidden_error: str | None = None
    hidden_ran: bool = False
    #: What the cell wrote to stderr (a warning, say). nbgrader gives a test cell with any stderr output no points,
    #: however right the answer (``nbgrader.utils.determine_grade``), so a solved run must leave this empty.
    stderr: str = ""

    @property
    def visible_passed(self) -> bool:
        return self.visible_error is None

    @property
    def hidden_passed(self) -> bool:
        return self.hidden_ran and self.hidden_error is None


@dataclass
class Run:
    """The test cells' outcomes by grade_id, and the errors of demo cells tagged ``uses-answers`` by cell index."""

    tests: dict[str, TestOutcome] = field(default_factory=dict)
    demo_errors: dict[int, str] = field(default_factory=dict)
