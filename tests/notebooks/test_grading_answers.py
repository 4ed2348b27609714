"""For every section, the solved notebook: every solution passes its visible and hidden tests and no cell fails
with them. For every graded stub of every section: the untouched stub fails its tests, every known-wrong answer
(mutant, ``autograder/mutants.py``: a named edit of the solved cell in ``autograder/sections/<module>/mutants.toml``)
fails the hidden tests, and every right answer written differently (``variants.toml``) passes them.

The solved notebook is executed once per test session, in the section's process (:mod:`tests.support.zygote`), cell
by cell in the grader's own IPython shell (``autograder.sandboxed.shell``, which runs a cell as a Jupyter kernel
does); every other case forks from its snapshot before the stub. The student notebook runs in a real kernel under
nbval (``tests/notebooks/test_notebooks_nbval.py``); ``tests/unit/course/test_book_structure.py`` checks that every
test cell has its hidden test."""

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


@pytest.mark.parametrize("slug", [s.slug for s in sections()])
def test_solutions_pass_every_visible_and_hidden_test_and_no_cell_fails(slug):
    """The solved notebook, hidden tests included, top to bottom (a plain cell that fails raises in run_section)."""
    run = run_section(slug)
    tests = [nbs.grade_id(c) for c in section(slug).read().cells if nbs.role(c) == "test"]
    assert tests and sorted(run.tests) == sorted(tests), f"{slug}: the run reached {sorted(run.tests)} of {tests}"
    for grade, outcome in run.tests.items():
        assert outcome.visible_passed, f"{grade}: the solution fails the visible test:\n{outcome.visible_error}"
        assert outcome.hidden_ran, f"{grade}: there is no hidden test file autograder/sections/.../{grade}.py"
        assert outcome.hidden_passed, f"{grade}: the solution fails the hidden test:\n{outcome.hidden_error}"
        assert not outcome.stderr, (
            f"{grade}: the solved cell writes to stderr, and nbgrader gives a test cell that does no points:\n"
            f"{outcome.stderr[:500]}"
        )
    assert not run.demo_errors, f"demo cells that use the answers failed with the solutions: {run.demo_errors}"


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
    if mutant.message:  # the visible test tells a student with this mistake which one it is
        shown = " ".join((outcome.visible_error or "").split())
        assert not outcome.visible_passed and mutant.message in shown, (
            f"{mutant.label}: the visible test should say {mutant.message!r} to this mistake; it said:\n"
            f"{outcome.visible_error or 'nothing (it passed)'}"
        )


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
