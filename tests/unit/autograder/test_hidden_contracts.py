"""Every hidden test says which sentences of the page it relies on, and the page still says them.

The rule (issue 25, part 4): each property a hidden test checks is stated in the stub's docstring or the text
above it. So each hidden test file ``autograder/sections/<module>/test_<grade_id>.py`` opens with a block

    # Contract: the page's sentences each check relies on.
    #   "<a fragment of the page, quoted verbatim>" -> <the check(s) that rely on it>

and each quoted fragment must appear in ``book/<slug>.md`` (whitespace collapsed). When the page is reworded, the
test names the fragment that is gone, so the contract and the hidden test are updated together.

The rule of issue 26: the same opening comment has a block

    # Classes: each kind of mistake, and the check that catches it.
    #   dtype -> <the check>
    #   device -> n/a: <why no mistake of this kind can occur in this stub>

naming every class of :data:`autograder.mutants.CLASSES` once, and each class it says is checked (not ``n/a``) has at
least one mutant of that class (``class = "..."`` in ``mutants.toml``, which
``tests/notebooks/test_grading_answers.py`` proves rejected, or one that :mod:`autograder.operators` generates and
``equivalents.toml`` does not list, which ``tests/grading/test_generated_mutants.py`` proves rejected).
"""

from __future__ import annotations

import re

import pytest

from autograder import mutants, operators
from course.section import sections

HEADER = "# Contract: the page's sentences each check relies on."
CLASSES_HEADER = "# Classes: each kind of mistake, and the check that catches it."
CLASS_ENTRY = re.compile(r"^#\s+(?P<klass>[a-z-]+)\s+->\s+(?P<how>\S.*)$")
ENTRY = re.compile(r'^#\s+"(?P<quote>.+)"\s+->\s+(?P<checks>\S.*)$')


def _hidden_files():
    for sec in sections():
        for path in sorted(sec.grading_dir.glob("test_*.py")):
            yield pytest.param(sec, path, id=f"{sec.slug}:{path.stem}")


def _normal(text: str) -> str:
    return " ".join(text.split())


def contract(source: str) -> list[tuple[str, str]]:
    """The (quote, checks) entries of a hidden test's contract block; empty when it has none.

    The block is the header line and the comment lines right after it; each entry is one line."""
    lines = source.splitlines()
    if HEADER not in lines:
        return []
    entries = []
    for line in lines[lines.index(HEADER) + 1 :]:
        if not line.startswith("#"):
            break
        found = ENTRY.match(line)
        if found:
            entries.append((found.group("quote"), found.group("checks")))
    return entries


@pytest.mark.parametrize("sec,path", list(_hidden_files()))
def test_each_hidden_test_quotes_the_page_sentences_it_relies_on(sec, path):
    source = path.read_text(encoding="utf-8")
    head = source.split("\n\n", 1)[0]
    assert HEADER in head.splitlines(), (
        f"{path.relative_to(sec.root)} has no contract block in its opening comment: add the line\n  {HEADER}\n"
        'then one line per sentence the checks rely on:  #   "<fragment of the page>" -> <which checks>'
    )
    entries = contract(source)
    assert entries, f'{path.name}: the contract block lists no sentence (lines of the form  #   "..." -> checks)'
    page = _normal(sec.path.read_text(encoding="utf-8"))
    missing = [quote for quote, _ in entries if _normal(quote) not in page]
    assert not missing, (
        f"{path.relative_to(sec.root)} relies on sentences that {sec.path.name} no longer says:\n"
        + "\n".join(f"  {q!r}" for q in missing)
        + "\nstate them again in the stub's docstring or the text above it, or update the contract and the checks"
    )


def test_the_contract_reader_reads_entries_and_stops_at_the_block_end():
    source = "\n".join(
        [
            "# Hidden: float64.",
            HEADER,
            '#   "returns X\'s dtype" -> the dtype check',
            '#   "on X\'s device" -> devices',
            "_x = 1",
            '#   "not part of the block" -> nothing',
        ]
    )
    assert contract(source) == [("returns X's dtype", "the dtype check"), ("on X's device", "devices")]
    assert contract("# Hidden: no block here.\n_x = 1") == []


def classes(source: str) -> dict[str, str]:
    """The entries of a hidden test's Classes block, class -> how it is checked (or ``n/a: why``); a class named
    twice is reported as the key ``"<class> (twice)"``."""
    lines = source.splitlines()
    if CLASSES_HEADER not in lines:
        return {}
    out: dict[str, str] = {}
    for line in lines[lines.index(CLASSES_HEADER) + 1 :]:
        found = CLASS_ENTRY.match(line)
        if not found:
            break
        key = found.group("klass")
        out[f"{key} (twice)" if key in out else key] = found.group("how")
    return out


@pytest.mark.parametrize("sec,path", list(_hidden_files()))
def test_each_hidden_test_names_every_class_of_mistake_and_has_its_mutants(sec, path):
    source = path.read_text(encoding="utf-8")
    head = source.split("\n\n", 1)[0]
    assert CLASSES_HEADER in head.splitlines(), (
        f"{path.relative_to(sec.root)} has no Classes block in its opening comment: add the line\n  {CLASSES_HEADER}\n"
        "then one line per class of mistake:  #   <class> -> <the check> (or: n/a: <why>); the classes are "
        + ", ".join(mutants.CLASSES)
    )
    found = classes(source)
    missing, unknown = sorted(set(mutants.CLASSES) - set(found)), sorted(set(found) - set(mutants.CLASSES))
    assert not missing and not unknown, (
        f"{path.name}: the Classes block should name each of {', '.join(mutants.CLASSES)} once; "
        f"missing: {missing}, unknown or repeated: {unknown}"
    )
    grade = path.stem.removeprefix("test_")
    stubs = mutants.by_stub(sec)
    if grade not in stubs:  # a hidden test of a stub that is not graded by mutants (none today)
        pytest.fail(f"{path.name} tests {grade!r}, which is not a stub of {sec.slug}")
    listed = {e.mutant for e in operators.equivalents(sec) if e.stub == grade}
    generated = {m.klass for m in operators.generate(sec) if m.grade_id == grade and m.name not in listed}
    have = {m.klass for m in stubs[grade]} | generated
    unproven = [k for k, how in found.items() if not how.startswith("n/a") and k not in have]
    assert not unproven, (
        f"{path.name} says it checks {unproven}, but neither {sec.mutants.name} nor the operators "
        f"(autograder/operators.py) have a mutant [[{grade}]] of that class that the hidden tests must reject: "
        'add one (class = "...") so that the check is proven to reject it, or say n/a: why'
    )
    for klass, how in found.items():
        if how.startswith("n/a"):
            assert how.removeprefix("n/a").strip(" :"), f"{path.name}: {klass} -> n/a needs a reason after 'n/a:'"


def test_the_classes_reader_reads_each_class_and_flags_a_repeat():
    source = "\n".join(
        [
            "# Hidden: x.",
            CLASSES_HEADER,
            "#   dtype -> float64 in",
            "#   device -> n/a: no tensors",
            "#   dtype -> again",
            "_x = 1",
        ]
    )
    assert classes(source) == {"dtype": "float64 in", "device": "n/a: no tensors", "dtype (twice)": "again"}
    assert classes("# Hidden: nothing.") == {}
