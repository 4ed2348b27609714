"""The suite's own arrangements (tests/conftest.py): its caches stay in the build folder, every tier names test files
that exist, and each section's grading cases form one group for the scheduler."""

from __future__ import annotations

from pathlib import Path

from tests import conftest

TESTS = Path(__file__).resolve().parent


def test_the_tests_caches_live_under_build_never_in_the_users_home():
    from qkv.data import cache_dir
    from qkv.recipes.weights import trained_dir

    build = conftest.REPO / "_build"
    assert build in cache_dir().resolve().parents, f"the data cache {cache_dir()} is outside {build}"
    assert build in trained_dir().resolve().parents, f"the trained weights {trained_dir()} are outside {build}"
    assert Path.home() / ".cache" / "qkv" not in (cache_dir().resolve(), *cache_dir().resolve().parents)


def test_every_tier_names_test_files_that_exist_and_each_file_has_one_tier():
    named = [name for names in conftest.TIERS.values() for name in names]
    missing = [name for name in named if not (TESTS / f"{name}.py").is_file()]
    assert not missing, f"tests/conftest.py's TIERS names files that do not exist: {missing}"
    assert len(named) == len(set(named)), "a test file is in two tiers"


def test_each_sections_grading_cases_form_one_group_and_nothing_else_does():
    group = conftest.grading_group
    solved = "test_solutions_pass_every_visible_and_hidden_test_and_no_cell_fails[transformer]"
    assert group(f"tests/test_grading_answers.py::{solved}") == "grading-transformer"
    assert group("tests/test_grading_answers.py::test_untouched_stub_fails_its_tests[transformer:AddNorm]") == (
        "grading-transformer"
    )
    assert group("tests/test_grading_answers.py::test_mutant_fails_hidden_tests[vision-transformer:ViT:no_cls]") == (
        "grading-vision-transformer"
    )
    assert group("tests/test_notebooks_nbval.py::test_student_notebook_runs_under_nbval[transformer]") is None
    assert group("tests/test_grading_answers.py::test_without_parameters") is None


def test_the_browser_tests_of_one_page_form_one_group():
    group = conftest.page_group
    ids = [f"tests/test_book_browser.py::{test}[book/transformer]" for test in ("test_equations_are_typeset", "test_x")]
    assert {group(i) for i in ids} == {"page-book/transformer"}
    assert group("tests/test_book_browser.py::test_equations_are_typeset[book/intro]") == "page-book/intro"
    assert group("tests/test_book_browser.py::test_sidebar_reaches_every_page_from_the_root") is None
    assert group("tests/test_grading_answers.py::test_x[book/transformer]") is None
