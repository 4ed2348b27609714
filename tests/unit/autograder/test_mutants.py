"""The mutants' format and tooling (``autograder/mutants.py``): a mutant is a small named edit of a solved stub cell,
and every way of writing one wrongly gives an error that says which mutant and what to do."""

from __future__ import annotations

import difflib
import shutil
import textwrap

import pytest

from autograder import mutants
from autograder.mutants import Edit, Mutant, MutantError
from course.section import Section, section

SOLVED = textwrap.dedent(
    """\
    def f(x):
        y = x + 1  # one more
        return y * 2
    """
)


def _mutant(*edits: tuple[str, str], name: str = "demo") -> Mutant:
    return Mutant("f", name, "a mistake", tuple(Edit(a, b) for a, b in edits))


def test_an_edit_changes_only_its_text():
    assert _mutant(("x + 1", "x - 1")).apply(SOLVED) == SOLVED.replace("x + 1", "x - 1")


def test_edits_apply_in_order_each_to_what_the_previous_left():
    out = _mutant(("x + 1", "x + 2"), ("x + 2", "x + 3")).apply(SOLVED)
    assert "y = x + 3" in out and "x + 1" not in out


def test_a_missing_text_names_the_mutant_and_the_text():
    with pytest.raises(MutantError) as err:
        _mutant(("x + 1", "x - 1"), ("x * 3", "x"), name="lost").apply(SOLVED)
    message = str(err.value)
    assert "[[f]] 'lost'" in message and "edit 2 of 2" in message
    assert "is not found" in message and "'x * 3'" in message


def test_a_text_found_twice_is_ambiguous():
    with pytest.raises(MutantError, match=r"\[\[f\]\] 'twice'.*is found 2 times") as err:
        _mutant(("y", "z"), name="twice").apply(SOLVED)
    assert "unique" in str(err.value)


def test_an_edit_that_leaves_the_solution_unchanged_is_rejected():
    with pytest.raises(MutantError, match="'same'.*unchanged"):
        _mutant(("x + 1", "x + 1"), name="same").apply(SOLVED)
    with pytest.raises(MutantError, match="unchanged"):  # two edits that undo each other
        _mutant(("x + 1", "x - 1"), ("x - 1", "x + 1")).apply(SOLVED)


def test_a_mutant_that_does_not_compile_is_rejected():
    with pytest.raises(MutantError, match="'broken'.*does not compile.*line 3"):
        _mutant(("    return y * 2", "  return y * 2"), name="broken").apply(SOLVED)


# ---------------------------------------------------------------- the TOML file

SLUG = "queries-keys-values"


@pytest.fixture
def scratch(tmp_path):
    """A copy of section 11.1's notebook and answers under ``tmp_path``; returns (Section, write(toml))."""
    real = section(SLUG)
    sec = Section(SLUG, root=tmp_path)
    for src, dest in ((real.path, sec.path), (real.solutions, sec.solutions)):
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, dest)
    sec.mutants.parent.mkdir(parents=True)

    def write(text: str) -> Section:
        sec.mutants.write_text(textwrap.dedent(text), encoding="utf-8")
        return sec

    return sec, write


GOOD = """\
    [[sharp_similarity]]
    name = "positive_sign"
    mistake = "No minus sign."
    replace = "return -beta *"
    by = "return beta *"

    [[sharp_similarity]]
    name = "two_edits"
    mistake = "Both."
    edits = [
        { replace = "return -beta *", by = "return beta *" },
        { replace = "beta=10.0):", by = "beta=1.0):" },
    ]
"""


def test_load_reads_every_mutant_in_order(scratch):
    sec = scratch[1](GOOD)
    loaded = mutants.load(sec)
    assert [(m.grade_id, m.name, len(m.edits)) for m in loaded] == [
        ("sharp_similarity", "positive_sign", 1),
        ("sharp_similarity", "two_edits", 2),
    ]
    assert loaded[1].edits[1] == Edit("beta=10.0):", "beta=1.0):")
    assert mutants.by_stub(sec) == {
        "attention_pooling": [],
        "sharp_similarity": loaded,
        "query_jacobian": [],
        "averaging_similarity": [],
    }


def test_mutated_cell_is_the_solved_cell_with_the_edits(scratch):
    sec = scratch[1](GOOD)
    solved = mutants.solved_cell(sec, "sharp_similarity")
    cell = mutants.mutated_cell(sec, "sharp_similarity", "two_edits")
    assert cell == solved.replace("return -beta *", "return beta *").replace("beta=10.0):", "beta=1.0):")
    with pytest.raises(MutantError, match="no mutant 'nope'; its mutants are: positive_sign, two_edits"):
        mutants.mutated_cell(sec, "sharp_similarity", "nope")


@pytest.mark.parametrize(
    "entry,expected",
    [
        ('name = "a"\nmistake = "m"\nreplace = "x"\nby = "y"\nwhy = "?"', "unknown key.*why"),
        ('name = "a"\nmistake = "m"\nreplace = "x"', "say what to change"),
        ('name = "a"\nmistake = "  "\nreplace = "x"\nby = "y"', "mistake is missing or empty"),
        ('mistake = "m"\nreplace = "x"\nby = "y"', "name is missing"),
        ('name = "a b"\nmistake = "m"\nreplace = "x"\nby = "y"', "letters, digits and _"),
        ('name = "a"\nmistake = "m"\nreplace = "x"\nby = "y"\nedits = [{ replace = "x", by = "y" }]', "not both"),
        ('name = "a"\nmistake = "m"\nedits = []', "non-empty list"),
        ('name = "a"\nmistake = "m"\nedits = [{ replace = "x", with = "y" }]', "unknown: with; missing: by"),
        ('name = "a"\nmistake = "m"\nreplace = ""\nby = "y"', "replace is empty"),
        ('name = "a"\nmistake = "m"\nreplace = "x"\nby = 3', "by must be a string"),
    ],
)
def test_a_malformed_mutant_is_rejected_with_its_place(scratch, entry, expected):
    sec = scratch[1]("[[sharp_similarity]]\n" + entry + "\n")
    with pytest.raises(MutantError, match=expected) as err:
        mutants.load(sec)
    assert str(sec.mutants) in str(err.value) and "[[sharp_similarity]]" in str(err.value)


def test_a_grade_id_that_is_not_a_stub_is_rejected(scratch):
    sec = scratch[1]('[[sharp_similarty]]\nname = "a"\nmistake = "m"\nreplace = "x"\nby = "y"\n')
    message = "not a stub of queries-keys-values; its stubs are: attention_pooling, sharp_similarity"
    with pytest.raises(MutantError, match=message):
        mutants.load(sec)


def test_a_table_instead_of_an_array_entry_is_rejected(scratch):
    sec = scratch[1]('[sharp_similarity]\nname = "a"\nmistake = "m"\nreplace = "x"\nby = "y"\n')
    with pytest.raises(MutantError, match=r"as an array entry, \[\[sharp_similarity\]\]"):
        mutants.load(sec)


def test_two_mutants_of_a_stub_with_one_name_are_rejected(scratch):
    entry = '[[sharp_similarity]]\nname = "same"\nmistake = "m"\nreplace = "x"\nby = "y"\n'
    sec = scratch[1](entry + "\n" + entry.replace('"x"', '"z"'))
    with pytest.raises(MutantError, match="two mutants of \\[\\[sharp_similarity\\]\\] are named 'same'"):
        mutants.load(sec)


def test_invalid_toml_and_a_missing_file_name_the_file(scratch):
    sec, write = scratch
    with pytest.raises(MutantError, match="has no mutants file"):
        mutants.load(sec)
    write("[[sharp_similarity]\n")
    with pytest.raises(MutantError, match="is not valid TOML"):
        mutants.load(sec)


# ---------------------------------------------------------------- the real mutants


def test_a_real_mutant_changes_exactly_its_named_text():
    """fill_zero of 11.3's masked_softmax: the solved cell and the mutated cell differ in that one line, by exactly
    the edit the file names."""
    mutant = mutants.find("attention-scoring-functions", "masked_softmax", "fill_zero")
    assert mutant.mistake and len(mutant.edits) == 1
    (edit,) = mutant.edits
    solved = mutants.solved_cell("attention-scoring-functions", "masked_softmax")
    cell = mutant.apply(solved)
    before, after = solved.split(edit.replace)
    assert cell == before + edit.by + after
    changed = [d for d in difflib.ndiff(solved.splitlines(), cell.splitlines()) if d[0] in "+-"]
    assert len(changed) == 2, changed
    assert changed[0].replace(edit.replace, edit.by)[1:] == changed[1][1:]


def test_every_real_mutant_applies_and_is_a_small_edit():
    """Each mutant of every section applies to its solved cell and changes a few lines, not the whole cell
    (a mutant that replaced everything would not say what the mistake is)."""
    from course.section import sections

    count = 0
    for sec in sections():
        for mutant in mutants.load(sec):
            solved = mutants.solved_cell(sec, mutant.grade_id)
            cell = mutant.apply(solved)
            changed = [d for d in difflib.ndiff(solved.splitlines(), cell.splitlines()) if d[0] in "+-"]
            assert 0 < len(changed) <= 12, f"{mutant.label} changes {len(changed)} lines"
            count += 1
    assert count >= 70
