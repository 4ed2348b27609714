"""How a run grades: one frozen object, made once from the command line (or :func:`autograder.grading.cli.grade`'s
arguments), checked there, and passed down to what needs it; nothing of it is written onto the course."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection

from autograder import sandbox as sb
from autograder import similarity
from autograder.grading.limits import FIXABLE
from autograder.nbcourse import GradingError

#: What a tampered notebook scores: zero (as docs/design.md says), or its answers' score (``keep``).
TAMPER_POLICIES = ("zero", "keep")


@dataclasses.dataclass(frozen=True)
class GradeOptions:
    """The options of one grading run.

    ``bubblewrap``: run the sandboxes in bubblewrap (the default), or, False, without it (``--no-bubblewrap``: the
    same zygote, Guard, seccomp filter and limits as an unprivileged user, :mod:`autograder.sandbox`), for machines
    where it cannot run; never chosen unless asked for, and not on a cluster, whose workers always use it.
    ``limits``: what a run may use where its section's ``grading:`` block says nothing; ``fixed``: the fields of
    ``limits`` (``"deadline"``, ``"memory"``) that hold for every section whatever its block says (those given on
    the command line). ``tampered``: what a notebook whose locked cells, grading metadata or the hidden tests'
    objects were changed gets (:data:`TAMPER_POLICIES`). ``feedback``: write nbgrader's feedback HTML;
    ``progress``: show a progress bar; ``jobs``: sandboxes at once on this machine (None: one per CPU); ``db``: the
    gradebook's database URL instead of the course's ``db_url``; ``cluster``: the address of a dask scheduler whose
    workers run the sandboxes; ``similarity``: how alike two answers to one exercise must be (0 to 1) to be listed
    in ``similarity.csv`` and the report (:mod:`autograder.similarity`), None for no such list and no comparison
    with ``qkv``'s reference either (``reference.csv``, :mod:`autograder.reference`)."""

    limits: sb.Limits = dataclasses.field(default_factory=sb.Limits)
    fixed: tuple[str, ...] = ()
    tampered: str = "zero"
    bubblewrap: bool = True
    feedback: bool = True
    progress: bool = True
    jobs: int | None = None
    db: str | None = None
    cluster: str | None = None
    similarity: float | None = similarity.THRESHOLD

    def __post_init__(self) -> None:
        if self.tampered not in TAMPER_POLICIES:
            raise GradingError(f"tampered must be one of {', '.join(TAMPER_POLICIES)}, not {self.tampered!r}")
        if not isinstance(self.bubblewrap, bool):
            raise GradingError(f"bubblewrap is True or False, not {self.bubblewrap!r}")
        if not self.bubblewrap and self.cluster is not None:
            raise GradingError("a cluster's workers grade in bubblewrap: --no-bubblewrap is for this machine only")
        if isinstance(self.fixed, str) or not isinstance(self.fixed, Collection):
            raise GradingError(f"fixed is a collection of limit names ({', '.join(FIXABLE)}), not {self.fixed!r}")
        object.__setattr__(self, "fixed", tuple(self.fixed))
        unknown = sorted(set(self.fixed) - set(FIXABLE))
        if unknown:
            raise GradingError(f"fixed names limits a section may set ({', '.join(FIXABLE)}), not {unknown}")
        if self.similarity is not None and (
            isinstance(self.similarity, bool)
            or not isinstance(self.similarity, int | float)
            or not 0 < self.similarity <= 1
        ):
            raise GradingError(f"similarity is a share of an answer, above 0 and at most 1, not {self.similarity!r}")
        if self.jobs is not None and (isinstance(self.jobs, bool) or not isinstance(self.jobs, int) or self.jobs < 1):
            raise GradingError(f"jobs is the number of sandboxes at once, a whole number from 1, not {self.jobs!r}")

    @property
    def workers(self) -> int:
        """Sandboxes at once on this machine: ``jobs``, else one per CPU."""
        import os

        return self.jobs or os.cpu_count() or 1
