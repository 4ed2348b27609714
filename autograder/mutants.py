"""Mutants: known-wrong answers, written as small named edits of the solutions.

Every hidden test must reject the classic mistakes of its exercise (docs/design.md:
"for each a few known-wrong implementations ... that its tests must reject").
Each mistake is written down once, as an edit of the *solved stub cell*: the
stub from ``book/`` with its ``# YOUR CODE HERE`` regions filled from
``solutions/`` (:func:`solved_cell`), so that a mutant is the reference answer
with exactly one mistake in it, and a reader sees at a glance what changed.

A section's mutants live in ``autograder/sections/<module>/mutants.toml``
(:attr:`course.section.Section.mutants`), one array entry per mutant, keyed by
the stub's grade_id::

    [[masked_softmax]]
    name = "fill_zero"
    mistake = "Masked scores are filled with 0 instead of a large negative number, ..."
    replace = "X.masked_fill(~keep, -1e6)"
    by = "X.masked_fill(~keep, 0.0)"
    message = "give the masked scores a very large negative number"

    [[AdditiveAttention]]
    name = "with_bias"
    mistake = "..."
    edits = [
        { replace = "self.W_k = nn.LazyLinear(num_hiddens, bias=False)", by = "self.W_k = nn.LazyLinear(num_hiddens)" },
        ...
    ]

``message`` (optional) holds words that the visible test's first failure must
show a student who makes this mistake: the hint that names it (a test checks
it). The edits apply in order, each to the text the previous one left; each
``replace`` must occur exactly once in that text (make it longer, or include
its line's comment, until it does). The text is exact, indentation and
newlines included. The mutated cell must compile and must differ from the
solution. :func:`load` checks the file; :meth:`Mutant.apply` applies one
mutant; :func:`mutated_cell` gives the whole cell a student with that mistake
would hand in (what ``tests.support.inprocess.run_section(answers=...)`` and
the grading corpus take). ``tests/notebooks/test_grading_answers.py`` proves that the
hidden tests reject every one.

Variants are the positive counterpart: correct answers written differently from
the reference (a loop over time steps, ``einsum``, another masking constant that
gives the same weights), in ``autograder/sections/<module>/variants.toml``
(:attr:`course.section.Section.variants`), in the same format with ``correct``
(why the answer is still right) in place of ``mistake``. :func:`load_variants`
reads them; ``tests/notebooks/test_grading_answers.py`` proves that every one keeps full
points, so that a test made stricter never rejects a right answer. A variant named
``written_apart`` is a whole answer written from the docstring and D2L, not from ``qkv``'s
reference: the comparison with that reference (:mod:`autograder.reference`) is measured against
those (``benchmarks/reference_copies.py``), the other variants being edits of the reference answer.
"""

from __future__ import annotations

import copy
import functools
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from autograder import assemble
from course import notebooks as nbs
from course.section import Section

#: The keys a mutant may have: what each means.
KEYS = {
    "name": "a short identifier for the mutant, unique among its stub's mutants (letters, digits, _)",
    "mistake": "the realistic mistake it models, in a sentence or two",
    "replace": "text of the solved cell to replace (with `by`), when there is one edit",
    "by": "what replaces `replace`",
    "edits": "a list of { replace = ..., by = ... } tables, applied in order, when there are several edits",
    "class": "the kind of mistake, one of CLASSES (optional): what the hidden test's Classes block counts",
    "message": (
        "words that the visible test's first failure must show for this mistake (optional): the hint that names it, "
        "so that a student who makes it is told which mistake it is"
    ),
}

#: The kinds of mistake a hidden test must separate (issue 26; ``../shared/STYLE.md``, lesson 15), and what each
#: means. A hidden test file's ``# Classes:`` block says, for each, which check catches it or why none applies
#: (``tests/unit/autograder/test_hidden_contracts.py``); a class it checks has at least one mutant of that class.
CLASSES = {
    "value": "a wrong result on ordinary input (a formula, an axis, an off-by-one)",
    "dtype": "a dtype the contract names is lost (float64, float16, bfloat16 in, or the default dtype)",
    "device": "a tensor made on the wrong device (the 'meta' device serves as a second device)",
    "pass-through": "an argument the stub receives is ignored or replaced by a default",
    "state": "state that leaks from one call to the next, or a given object modified",
    "gradient": "no gradient, or the wrong one, where the output is trained through",
    "type": "the wrong type returned or accepted (a 0-d tensor for a float, a float for an int)",
    "edge": "an edge case the docstring names (empty, one element, none fits, masked out)",
    "symmetry": "a mistake that test data too symmetric could not see (k - q for q - k, a transpose)",
    "train-eval": "dropout or another training-only behaviour missing, present in eval, or a mode not restored",
    "efficiency": "a memory or time contract broken while the value stays right (O(n^2) where O(n) is promised)",
}
#: The keys a variant may have: a mutant's, with ``correct`` in place of ``mistake``.
VARIANT_KEYS = {
    "correct" if k == "mistake" else k: (
        "how it differs from the reference, and why it is still right, in a sentence or two" if k == "mistake" else v
    )
    for k, v in KEYS.items()
    if k not in ("class", "message")
}
EDIT_KEYS = ("replace", "by")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class MutantError(ValueError):
    """A mutants file, or one of its mutants, that cannot be used; the message says where and what to do."""


@dataclass(frozen=True)
class Edit:
    """Replace the text ``replace`` (which must occur exactly once) by ``by``."""

    replace: str
    by: str


@dataclass(frozen=True)
class Mutant:
    """One known-wrong answer to stub ``grade_id``: the solved cell with ``edits`` applied. (A variant, a
    known-right answer, is the same record; its ``mistake`` holds the variant's ``correct`` text.)"""

    grade_id: str
    name: str
    mistake: str
    edits: tuple[Edit, ...]
    path: Path | None = field(default=None, compare=False)  # the mutants file, for error messages
    kind: str = field(default="mutant", compare=False)  # "mutant" (must fail) or "variant" (must pass)
    klass: str | None = None  # one of CLASSES: the kind of mistake (the TOML key `class`)
    message: str = ""  # what the visible test's first failure must show for this mistake ("" if nothing is asked)

    @property
    def label(self) -> str:
        """Where the mutant is written down: ``FILE [[grade_id]] name``."""
        where = f"{self.path}: " if self.path else ""
        return f"{where}{self.kind} [[{self.grade_id}]] {self.name!r}"

    def apply(self, solved: str) -> str:
        """The solved cell ``solved`` with this mutant's edits applied, checked: every ``replace`` found
        exactly once, and the result compiles and differs from ``solved``."""
        text = solved
        for number, edit in enumerate(self.edits, 1):
            which = f"edit {number} of {len(self.edits)}" if len(self.edits) > 1 else "its edit"
            count = text.count(edit.replace)
            if count != 1:
                found = "is not found" if count == 0 else f"is found {count} times"
                raise MutantError(
                    f"{self.label}, {which}: the text to replace {found} in the solved cell of {self.grade_id!r} "
                    f"(after the edits before it); it must occur exactly once.\n"
                    f"replace = {edit.replace!r}\n"
                    + (
                        "Copy it from the solved cell (stub filled from solutions/), indentation included."
                        if count == 0
                        else "Make it longer (include more of its line) so that it is unique."
                    )
                )
            text = text.replace(edit.replace, edit.by)
        if text == solved:
            what = "no mistake" if self.kind == "mutant" else "no other way of writing it"
            raise MutantError(f"{self.label}: its edits leave the solution unchanged, so it models {what}")
        try:
            compile(text, f"<{self.label}>", "exec")
        except SyntaxError as err:
            raise MutantError(
                f"{self.label}: the mutated cell does not compile ({err.msg}, line {err.lineno}: "
                f"{(err.text or '').strip()!r}); a mutant must be code a student could run. Mind the indentation "
                "of every line of `by` after the first."
            ) from None
        return text


def _parse_edit(raw, where: str) -> Edit:
    if not isinstance(raw, dict):
        raise MutantError(f"{where}: an edit must be a table {{ replace = ..., by = ... }}, not {raw!r}")
    unknown = sorted(set(raw) - set(EDIT_KEYS))
    missing = [k for k in EDIT_KEYS if k not in raw]
    if unknown or missing:
        raise MutantError(
            f"{where}: an edit has exactly the keys replace and by"
            + (f"; unknown: {', '.join(unknown)}" if unknown else "")
            + (f"; missing: {', '.join(missing)}" if missing else "")
        )
    for key in EDIT_KEYS:
        if not isinstance(raw[key], str):
            raise MutantError(f"{where}: {key} must be a string, not {raw[key]!r}")
    if not raw["replace"]:
        raise MutantError(f"{where}: replace is empty; name the text of the solution to change")
    return Edit(raw["replace"], raw["by"])


def _parse_mutant(grade_id: str, raw, index: int, path: Path, kind: str = "mutant") -> Mutant:
    keys, says = (KEYS, "mistake") if kind == "mutant" else (VARIANT_KEYS, "correct")
    where = f"{path}: [[{grade_id}]] entry {index}"
    if not isinstance(raw, dict):
        raise MutantError(f"{where} must be a table (write [[{grade_id}]] then its keys)")
    if isinstance(raw.get("name"), str):
        where = f"{path}: {kind} [[{grade_id}]] {raw['name']!r}"
    unknown = sorted(set(raw) - set(keys))
    if unknown:
        known = "\n".join(f"  {k}: {v}" for k, v in keys.items())
        raise MutantError(f"{where}: unknown key(s) {', '.join(unknown)}; a {kind} has:\n{known}")
    for key in ("name", says):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise MutantError(f"{where}: {key} is missing or empty ({keys[key]})")
    klass = raw.get("class")
    if klass is not None and klass not in CLASSES:
        known = "\n".join(f"  {k}: {v}" for k, v in CLASSES.items())
        raise MutantError(f"{where}: class = {klass!r} is not one of the classes of mistake:\n{known}")
    message = raw.get("message", "")
    if not isinstance(message, str):
        raise MutantError(f"{where}: message must be a string (words of the visible test's failure), not {message!r}")
    if not _NAME.fullmatch(raw["name"]):
        raise MutantError(f"{where}: name must be letters, digits and _ (it names tests and students)")
    single = [k for k in EDIT_KEYS if k in raw]
    if "edits" in raw:
        if single:
            raise MutantError(f"{where}: give either replace and by (one edit) or edits (several), not both")
        if not isinstance(raw["edits"], list) or not raw["edits"]:
            raise MutantError(f"{where}: edits must be a non-empty list of {{ replace = ..., by = ... }} tables")
        edits = tuple(_parse_edit(e, f"{where}, edit {i}") for i, e in enumerate(raw["edits"], 1))
    elif len(single) == 2:
        edits = (_parse_edit({k: raw[k] for k in EDIT_KEYS}, where),)
    else:
        raise MutantError(f"{where}: say what to change, with replace and by (or edits, for several edits)")
    return Mutant(grade_id, raw["name"], raw[says].strip(), edits, path, kind, klass, " ".join(message.split()))


@functools.lru_cache(maxsize=16)
def _stub_cells(path: Path, mtime: float) -> dict[str, str]:
    return {nbs.grade_id(c): c.source for c in nbs.read(path).cells if nbs.role(c) == "stub"}


def stub_cells(section: Section | str) -> dict[str, str]:
    """The section's stub cells, as the student receives them, by grade_id (in the notebook's order)."""
    sec = assemble.as_section(section)
    return dict(_stub_cells(sec.path, sec.path.stat().st_mtime))


def load(section: Section | str) -> list[Mutant]:
    """Every mutant of a section, in the file's order, checked: known keys only, a grade_id that is one of
    the section's stubs, a name unique within its stub. (Whether each edit applies is checked by
    :meth:`Mutant.apply`, which needs the solved cell.)"""
    sec = assemble.as_section(section)
    if not sec.mutants.exists():
        raise MutantError(f"{sec.slug} has no mutants file {sec.mutants}: write one (see autograder/mutants.py)")
    return _load(sec, sec.mutants, "mutant")


def load_variants(section: Section | str) -> list[Mutant]:
    """Every variant (correct answer written differently) of a section, checked as :func:`load` checks
    mutants; none when the section has no ``variants.toml``."""
    sec = assemble.as_section(section)
    return _load(sec, sec.variants, "variant") if sec.variants.exists() else []


def _load(sec: Section, path: Path, kind: str) -> list[Mutant]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        raise MutantError(f"{path} is not valid TOML: {err}") from None
    stubs = list(stub_cells(sec))
    out: list[Mutant] = []
    for grade_id, entries in data.items():
        if grade_id not in stubs:
            raise MutantError(f"{path}: [[{grade_id}]] is not a stub of {sec.slug}; its stubs are: {', '.join(stubs)}")
        if not isinstance(entries, list):
            raise MutantError(f"{path}: write each {kind} of {grade_id} as an array entry, [[{grade_id}]]")
        seen: set[str] = set()
        for index, raw in enumerate(entries, 1):
            mutant = _parse_mutant(grade_id, raw, index, path, kind)
            if mutant.name in seen:
                raise MutantError(f"{path}: two {kind}s of [[{grade_id}]] are named {mutant.name!r}; rename one")
            seen.add(mutant.name)
            out.append(mutant)
    return out


def by_stub(section: Section | str) -> dict[str, list[Mutant]]:
    """The section's mutants grouped by stub, every stub present (in the notebook's order), even with none."""
    grouped: dict[str, list[Mutant]] = {g: [] for g in stub_cells(section)}
    for mutant in load(section):
        grouped[mutant.grade_id].append(mutant)
    return grouped


def find(section: Section | str, grade_id: str, name: str) -> Mutant:
    """The mutant ``name`` of stub ``grade_id``; a clear error lists the names there are."""
    group = by_stub(section).get(grade_id)
    if group is None:
        raise MutantError(f"{grade_id!r} is not a stub of {assemble.as_section(section).slug}")
    for mutant in group:
        if mutant.name == name:
            return mutant
    names = ", ".join(m.name for m in group) or "none"
    raise MutantError(f"stub {grade_id!r} has no mutant {name!r}; its mutants are: {names}")


def solved_cell(section: Section | str, grade_id: str) -> str:
    """Stub cell ``grade_id`` with every ``# YOUR CODE HERE`` region filled from ``solutions/``, without
    nbgrader's markers: the text every mutant of that stub edits."""
    sec = assemble.as_section(section)
    cells = stub_cells(sec)
    if grade_id not in cells:
        raise MutantError(f"{grade_id!r} is not a stub of {sec.slug}; its stubs are: {', '.join(cells)}")
    return assemble.fill_stubs(cells[grade_id], grade_id, assemble.solutions_module(sec), markers=False)


def mutated_cell(section: Section | str, grade_id: str, name: str) -> str:
    """The whole stub cell a student with mutant ``name``'s mistake hands in: the solved cell, edited."""
    return find(section, grade_id, name).apply(solved_cell(section, grade_id))


# ---------------------------------------------------------------- notebooks a student could hand in
# The solved notebook and the notebook with one known mistake: what the grading tests, the corpus of bad
# submissions and the grading benchmarks hand the grader.

#: What a perfect student writes in every written-answer cell (``nbs.role(cell) == "answer"``).
WRITTEN_ANSWER = "A short answer in my own words."


def answered(nb, section: Section | str):
    """``nb`` (changed in place, and returned) with every stub answered by the reference (``solutions/``) and every
    written answer filled with :data:`WRITTEN_ANSWER`: only the answer cells' sources change."""
    answers = assemble.solutions_module(section)
    for cell in nb.cells:
        if nbs.role(cell) == "stub":
            cell.source = assemble.fill_stubs(cell.source, nbs.grade_id(cell), answers, markers=False)
        elif nbs.role(cell) == "answer":
            cell.source = WRITTEN_ANSWER
    return nb


def solved_notebook(release_path: Path, section: Section | str):
    """What a perfect student hands in: the release notebook at ``release_path``, every stub answered by the
    reference and every written answer filled."""
    import nbformat

    return answered(nbformat.read(release_path, as_version=4), section)


def find_cell(nb, grade_id: str):
    """The first cell of ``nb`` whose nbgrader ``grade_id`` is ``grade_id``; a clear error names the ones it has."""
    for cell in nb.cells:
        if nbs.grade_id(cell) == grade_id:
            return cell
    ids = ", ".join(g for g in (nbs.grade_id(c) for c in nb.cells) if g)
    raise MutantError(f"the notebook has no cell {grade_id!r}; its cells are: {ids}")


def with_answer(nb, grade_id: str, source: str):
    """A copy of ``nb`` whose cell ``grade_id`` holds ``source`` (``nb`` is left as it was)."""
    out = copy.deepcopy(nb)
    find_cell(out, grade_id).source = source
    return out


def names_by_stub(section: Section | str) -> dict[str, list[str]]:
    """Every mutant of a section by name: stub grade_id -> mutant names, both sorted (a stable order)."""
    return {gid: sorted(m.name for m in group) for gid, group in sorted(by_stub(section).items())}
