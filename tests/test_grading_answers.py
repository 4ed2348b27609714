"""For every graded stub of every section: the solution passes the visible and hidden tests,
the untouched stub fails them, and every known-wrong answer (mutant) fails the hidden tests."""

from __future__ import annotations

import pytest

from autograder import assemble
from course import notebooks as nbs
from course.section import section, sections
from tests.support.inprocess import run_section


def _stubs():
    for sec in sections():
        for cell in sec.read().cells:
            if nbs.role(cell) == "stub":
                yield sec.slug, nbs.grade_id(cell)


def _mutants():
    for slug, grade in _stubs():
        for path in sorted((section(slug).mutants_dir / grade).glob("*.py")):
            yield pytest.param(slug, grade, path, id=f"{slug}:{grade}:{path.stem}")


STUBS = [pytest.param(slug, grade, id=f"{slug}:{grade}") for slug, grade in _stubs()]


@pytest.mark.parametrize("slug", [s.slug for s in sections()])
def test_solutions_pass_every_visible_and_hidden_test(slug):
    run = run_section(slug)
    assert run.tests, f"{slug} has no test cells"
    for grade, outcome in run.tests.items():
        assert outcome.visible_passed, f"{grade}: the solution fails the visible test:\n{outcome.visible_error}"
        assert outcome.hidden_ran, f"{grade}: there is no hidden test file autograder/sections/.../{grade}.py"
        assert outcome.hidden_passed, f"{grade}: the solution fails the hidden test:\n{outcome.hidden_error}"
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
    folder = section(slug).mutants_dir / grade
    found = sorted(p.name for p in folder.glob("*.py"))
    assert len(found) >= 2, f"{folder} should hold at least two known-wrong answers, found {found}"


@pytest.mark.parametrize("slug,grade,path", list(_mutants()))
def test_mutant_fails_hidden_tests(slug, grade, path):
    mutant = assemble.load_module(path)
    assert (mutant.__doc__ or "").strip(), f"{path} should say in its docstring which mistake it models"
    run = run_section(slug, answers={grade: path.read_text()}, until=f"test_{grade}")
    outcome = run.tests[f"test_{grade}"]
    assert outcome.hidden_ran
    assert not outcome.hidden_passed, f"the mutant {path.name} ({mutant.__doc__.strip()}) passes the hidden tests"
