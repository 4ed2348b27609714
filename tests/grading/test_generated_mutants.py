"""Every mutant that :mod:`autograder.operators` generates from a section's solutions is rejected by the section's
hidden tests, or listed in its ``equivalents.toml`` with the reason no test through the contract can reject it
(issue 40). A listed mutant that the hidden tests now reject is a stale entry, and fails too: the list says only what
is true.

Each case runs in the section's in-process harness (:mod:`tests.support.inprocess`: the grader's shell and guard,
forked from the snapshot before the stub), as ``tests/notebooks/test_grading_answers.py`` runs the hand-written
mutants; ``tests/conftest.py`` sends a section's cases of both files to one worker."""

from __future__ import annotations

import pytest

from autograder import operators
from course.section import sections
from tests.support.inprocess import run_section


def _generated():
    for sec in sections():
        listed = {(e.stub, e.mutant): e.reason for e in operators.equivalents(sec)}
        for mutant in operators.generate(sec):
            reason = listed.get((mutant.grade_id, mutant.name))
            yield pytest.param(sec.slug, mutant, reason, id=f"{sec.slug}:{mutant.grade_id}:{mutant.name}")


def _rejected(slug, mutant) -> tuple[bool, str]:
    """Whether the hidden tests reject ``mutant``, and what they said."""
    try:
        run = run_section(slug, answers={mutant.grade_id: mutant.source}, until=f"test_{mutant.grade_id}")
    except RuntimeError as err:  # a plain cell after the stub failed: the notebook fails for the grader too
        return True, str(err).splitlines()[0]
    outcome = run.tests[f"test_{mutant.grade_id}"]
    assert outcome.hidden_ran, f"{slug}: the hidden test of {mutant.grade_id} did not run"
    return not outcome.hidden_passed, outcome.hidden_error or ""


@pytest.mark.parametrize("slug,mutant,reason", list(_generated()))
def test_generated_mutant_is_rejected_or_listed_equivalent(slug, mutant, reason):
    rejected, said = _rejected(slug, mutant)
    where = operators.equivalents_path(operators.known.assemble.as_section(slug))
    if reason is None:
        assert rejected, (
            f"{slug} [[{mutant.grade_id}]] {mutant.name} ({mutant.klass}) passes the hidden tests. Strengthen "
            f"{mutant.grade_id}'s hidden test, or, if no test through the contract can tell it from a right answer, "
            f"list it in {where} with the reason:\n[[equivalent]]\nstub = {mutant.grade_id!r}\n"
            f'mutant = {mutant.name!r}\nreason = "..."\nThe mutated cell:\n{mutant.source}'
        )
    else:
        assert not rejected, (
            f"{where} lists {mutant.name} [[{mutant.grade_id}]] as equivalent ({reason}), but the hidden tests "
            f"reject it now ({said.splitlines()[0] if said else 'a failing cell'}): remove the entry"
        )
