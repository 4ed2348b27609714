"""The suite's own arrangements (tests/conftest.py): its caches stay in the build folder, every tier names test files
that exist, and each section's grading cases form one group for the scheduler."""

from __future__ import annotations

from pathlib import Path

from tests import conftest

TESTS = conftest.TESTS


def test_the_tests_caches_live_under_build_never_in_the_users_home():
    from qkv.data import cache_dir
    from qkv.recipes.weights import trained_dir

    build = conftest.REPO / "_build"
    assert build in cache_dir().resolve().parents, f"the data cache {cache_dir()} is outside {build}"
    assert build in trained_dir().resolve().parents, f"the trained weights {trained_dir()} are outside {build}"
    assert Path.home() / ".cache" / "qkv" not in (cache_dir().resolve(), *cache_dir().resolve().parents)


def test_every_test_file_lives_in_one_tiers_folder():
    files = sorted(TESTS.rglob("test_*.py"))
    outside = [str(f.relative_to(TESTS)) for f in files if f.relative_to(TESTS).parts[0] not in conftest.TIERS]
    assert not outside, f"test files outside the tiers' folders ({conftest.TIERS}): {outside}"
    assert {conftest.tier_of(f) for f in files} == set(conftest.TIERS), "a tier has no test file"
    names = [f.name for f in files]
    assert len(names) == len(set(names)), "two test files share a name (pytest imports each by its name)"


def test_a_test_file_outside_the_tiers_is_a_clear_error():
    import pytest

    with pytest.raises(pytest.UsageError, match="lives in one tier's folder under tests/"):
        conftest.tier_of(TESTS / "test_stray.py")
    assert conftest.tier_of(TESTS / "unit" / "qkv" / "test_attention.py") == "unit"
    assert conftest.tier_of(TESTS / "grading" / "test_doors.py") == "grading"


def test_each_sections_grading_cases_form_one_group_and_nothing_else_does():
    group = conftest.grading_group
    solved = "test_solutions_pass_every_visible_and_hidden_test_and_no_cell_fails[transformer]"
    answers = "tests/notebooks/test_grading_answers.py"
    assert group(f"{answers}::{solved}") == "grading-transformer"
    assert group(f"{answers}::test_untouched_stub_fails_its_tests[transformer:AddNorm]") == "grading-transformer"
    mutant = f"{answers}::test_mutant_fails_hidden_tests[vision-transformer:ViT:no_cls]"
    assert group(mutant) == "grading-vision-transformer"
    assert group("tests/notebooks/test_notebooks_nbval.py::test_student_notebook_runs_under_nbval[transformer]") is None
    assert group("tests/notebooks/test_grading_answers.py::test_without_parameters") is None


def test_the_browser_tests_of_one_page_form_one_group():
    group = conftest.page_group
    browser = "tests/book/test_book_browser.py"
    ids = [f"{browser}::{test}[book/transformer]" for test in ("test_equations_are_typeset", "test_x")]
    assert {group(i) for i in ids} == {"page-book/transformer"}
    assert group("tests/book/test_book_browser.py::test_equations_are_typeset[book/intro]") == "page-book/intro"
    assert group("tests/book/test_book_browser.py::test_sidebar_reaches_every_page_from_the_root") is None
    assert group("tests/notebooks/test_grading_answers.py::test_x[book/transformer]") is None
