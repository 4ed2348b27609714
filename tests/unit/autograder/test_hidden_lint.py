"""The hidden tests are linted for undefined names (autograder.hidden_lint, run by make lint): the check knows the
notebook's names, so that it finds a misspelt one and nothing else."""

from __future__ import annotations

from autograder import hidden_lint
from course.section import section


def test_the_notebooks_names_reach_the_hidden_tests_and_no_later_ones():
    sec = section("self-attention-and-positional-encoding")
    first = hidden_lint.notebook_names(sec, None)  # before the first test cell's hidden part: PositionalEncoding's
    assert {"checks", "torch", "PositionalEncoding"} <= first
    later = hidden_lint.notebook_names(sec, "test_shift_matrix")
    assert "shift_matrix" in later and "shift_matrix" not in first and "rotary" not in later


def test_a_misspelt_name_in_a_hidden_test_is_reported(tmp_path):
    path = tmp_path / "test_PositionalEncoding.py"
    path.write_text("_enc = PositionalEncodng(8, 0.0)\nchecks.check_true(_enc is not None, 'made')\n")
    found = hidden_lint.lint_file(path, {"checks", "PositionalEncoding"})
    assert len(found) == 1 and "PositionalEncodng" in found[0]
    path.write_text("_enc = PositionalEncoding(8, 0.0)\ndisplay(_enc)\n")
    assert hidden_lint.lint_file(path, {"PositionalEncoding"}) == []


def test_every_hidden_test_of_the_course_uses_only_names_it_has():
    from course.section import sections

    found = [line for sec in sections() for line in hidden_lint.lint_section(sec)]
    assert not found, "\n".join(found)
