"""For every graded stub of every section: the untouched stub fails its tests, every known-wrong answer (mutant,
``autograder/mutants.py``: a named edit of the solved cell in ``autograder/sections/<module>/mutants.toml``) fails the
hidden tests, and every right answer written differently (``variants.toml``) passes them.

That the solutions themselves pass every visible and hidden test, and that no demo cell fails with them, is proven
once, in a real kernel, by ``tests/test_notebooks_nbval.py``'s solutions edition (the solved notebook with its hidden
tests, no cell allowed to fail); ``tests/test_book_structure.py`` checks that every test cell has its hidden test."""

from __future__ import annotations

import pytest

from autograder import mutants
from course import notebooks as nbs
from course.section import section, sections
from tests.support.inprocess import run_section


def _stubs():
    for sec in sections():
        for cell in sec.read().cells:
            if nbs.role(cell) == "stub":
                yield sec.slug, nbs.grade_id(cell)


def _mutants():
    for sec in sections():
        for mutant in mutants.load(sec):
            yield pytest.param(sec.slug, mutant, id=f"{sec.slug}:{mutant.grade_id}:{mutant.name}")


def _variants():
    for sec in sections():
        for variant in mutants.load_variants(sec):
            yield pytest.param(sec.slug, variant, id=f"{sec.slug}:{variant.grade_id}:{variant.name}")


STUBS = [pytest.param(slug, grade, id=f"{slug}:{grade}") for slug, grade in _stubs()]


@pytest.mark.parametrize("slug,grade", STUBS)
def test_untouched_stub_fails_its_tests(slug, grade):
    run = run_section(slug, answers={grade: None}, until=f"test_{grade}")
    outcome = run.tests[f"test_{grade}"]
    assert not outcome.visible_passed, f"the stub {grade} passes its visible test"
    assert "NotImplementedError" in outcome.visible_error
    assert not outcome.hidden_passed, f"the stub {grade} passes its hidden test"


@pytest.mark.parametrize("slug,grade", STUBS)
def test_every_stub_has_at_least_two_mutants(slug, grade):
    found = [m.name for m in mutants.by_stub(slug)[grade]]
    assert len(found) >= 2, f"{section(slug).mutants} should hold at least two mutants [[{grade}]], found {found}"


@pytest.mark.parametrize("slug,mutant", list(_mutants()))
def test_mutant_fails_hidden_tests(slug, mutant):
    assert mutant.mistake.strip(), f"{mutant.label} should say which mistake it models"
    solved = mutants.solved_cell(slug, mutant.grade_id)
    cell = mutant.apply(solved)  # every edit applies once; the result compiles and is not the solution
    assert cell != solved
    run = run_section(slug, answers={mutant.grade_id: cell}, until=f"test_{mutant.grade_id}")
    outcome = run.tests[f"test_{mutant.grade_id}"]
    assert outcome.hidden_ran
    assert not outcome.hidden_passed, f"{mutant.label} ({mutant.mistake}) passes the hidden tests"


@pytest.mark.parametrize("slug,variant", list(_variants()))
def test_correct_variant_keeps_full_points(slug, variant):
    """A right answer written differently from the reference (``variants.toml``) passes the visible and the
    hidden tests: the tests check the contract, not the reference's way of meeting it."""
    assert variant.mistake.strip(), f"{variant.label} should say why it is still correct"
    solved = mutants.solved_cell(slug, variant.grade_id)
    cell = variant.apply(solved)
    assert cell != solved
    run = run_section(slug, answers={variant.grade_id: cell}, until=f"test_{variant.grade_id}")
    outcome = run.tests[f"test_{variant.grade_id}"]
    assert outcome.visible_passed, f"{variant.label} fails the visible test:\n{outcome.visible_error}"
    assert outcome.hidden_ran
    assert outcome.hidden_passed, f"{variant.label} ({variant.mistake}) fails the hidden tests:\n{outcome.hidden_error}"
