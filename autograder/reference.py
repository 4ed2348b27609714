"""Answers like the library's reference, for a person to judge: ``reference.csv`` and a section of ``report.html``
(:func:`find`).

``qkv`` is public, as D2L's library is, and holds the reference of many graded components: a student can read it and
paste it into the stub. The hidden tests reject an answer that *calls* the reference; nothing in them notices one
that *copies* it, and the similarity report (:mod:`autograder.similarity`) counts a passage that more than ten answers
share as no evidence, so a class of copies of the library is silent there. This module compares every answer with
the reference of its exercise instead.

**The reference of an exercise** (:func:`reference_cell`) is the stub cell with every ``# YOUR CODE HERE`` region
filled with ``qkv``'s code: where the solutions module imports the ``qkv`` component of the region's name, that
component (the solved cell, as :func:`autograder.assemble.fill_stubs` builds it, is then this very text); where it
writes the answer out, the function or class that ``qkv`` defines under that name, if any (``qkv.attention``'s
``AdditiveAttention`` for 11.3's). An exercise with no such component (most of 11.1's) has no reference and is not
compared. The reference comes from the repository's ``solutions/`` and ``qkv``, so :func:`find` compares only where
they are (``make grade``); a Gradescope zip holds no solutions and its report has no such list.

**What is compared** is what the student wrote beyond what every student was given (:class:`Handout`): the lines and
fingerprints of the release notebook's code, as in :mod:`autograder.similarity`, and also every statement that its
words spell out, the stub's docstring or the book's text (``self.ln = nn.LayerNorm(norm_shape)`` where the docstring
says so). Names become one letter, comments and layout go, and statements are taken in a canonical order before
copydetect's fingerprints (k-grams of :data:`~autograder.similarity.NOISE` characters of that text) are compared, so
renamed variables and reordered lines still match. An answer's ``share_answer`` is the part of its own code that the
reference has, ``share_reference`` the part of the reference's own code that the answer has, and its ``score`` the
larger (a reference pasted among lines of one's own, or pasted in part, still shows). Unlike the similarity report,
no passage is discounted for being common: a class of copies is a class of matches.

**The rule, and why** (measured by ``benchmarks/reference_copies.py``; ``benchmarks/results/reference_copies.md``):
an answer is listed when its ``score`` is at least :data:`THRESHOLD` (0.7) and the code it shares with the reference
is at least :data:`MIN_SHARED` (100) characters of that normalised text, about five statements. Over the 32 exercises
that have a reference, 96 mechanical copies of it (every local variable renamed; adjacent independent assignments
swapped; both, with the comments replaced) scored 0.90 to 1.00, at least 0.20 above the threshold. Of the 14 answers
written apart from it (the ``written_apart`` variants of ``autograder/sections/*/variants.toml``, each proved to keep
full points), those with at least :data:`MIN_SHARED` characters of their own scored at most 0.53, 0.17 below it;
none shared more than 86 characters with the reference (14 below the minimum), and the one that reached the
threshold is a short answer that any right one shares with the reference once its docstring is followed (11.7's
``AddNorm``: 1.00 over 68 characters, 32 below the minimum). So an exercise whose reference has fewer than
:data:`MIN_SHARED` characters of its own is never listed (7 of the 32: ``transpose_qkv``, ``transpose_output``,
``attention_costs``, ``PositionWiseFFN``, ``AddNorm``, ``TransformerEncoderBlock``, ``ViTBlock``). The repository's
other variants are edits of the reference answer; where that answer is ``qkv``'s own code, an edit of a line or a
constant leaves most of it, and 12 of those 76 are listed, as they should be.

Nothing here accuses anyone or changes a grade. Code that matches the reference may have been pasted, or written by
a student who studied the reference and remembered it, or be the one obvious way to write the exercise; a person
reads the answer beside the reference (:meth:`Match.rows`) and decides, and an oral check or the written questions
say more about who understood what.
"""

from __future__ import annotations

import ast
import csv
import dataclasses
import functools
import importlib
import importlib.util
import io
import logging
import re
import sys
import textwrap
import tokenize
from collections import defaultdict
from pathlib import Path
from types import ModuleType

from autograder import assemble, similarity
from course import notebooks as nbs
from course.section import Section

#: An answer is listed when the larger of its two shares (its own code found in the reference, the reference's own
#: code found in it) is at least this (measured: module docstring).
THRESHOLD = 0.7
#: ... and the code it shares with the reference is at least this many characters of normalised text (names one
#: letter, no spaces: ``self.ln = nn.LayerNorm(norm_shape)`` is ``V.V=V.V(V)``, 10), about five statements.
MIN_SHARED = 100
#: The fewest characters (without spaces) of a statement, or of what it returns or assigns, that count as spelled out
#: by the handout's words: a shorter text (``X``, ``None``) is in any text.
DICTATED = 12
FIELDS = (
    "student",
    "assignment",
    "notebook",
    "exercise",
    "score",
    "share_answer",
    "share_reference",
    "shared",
    "reference",
    "matched_lines",
)
log = logging.getLogger("autograder.grade")


# ---------------------------------------------------------------- the reference of an exercise


@dataclasses.dataclass(frozen=True)
class Reference:
    """``qkv``'s reference for one exercise: the stub cell filled with ``qkv``'s code (``source``), and the
    components it holds (``components``: ``qkv.attention.AdditiveAttention.forward``, ...)."""

    grade_id: str
    source: str
    components: tuple[str, ...]


@functools.cache
def qkv_definitions() -> dict[str, tuple[str, ...]]:
    """Every public function and class defined at the top of a module of ``qkv``, by name: the modules that define
    it (``{"masked_softmax": ("qkv.attention",), ...}``). Read from the source files; nothing is imported."""
    spec = importlib.util.find_spec("qkv")
    if spec is None or not spec.submodule_search_locations:
        return {}
    root = Path(next(iter(spec.submodule_search_locations)))
    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.name[0] != "_":
                found[node.name].append(module)
    return {name: tuple(modules) for name, modules in found.items()}


def _attribute(obj, qualname: str):
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _in_qkv(obj) -> bool:
    return (getattr(obj, "__module__", None) or "").partition(".")[0] == "qkv" and callable(obj)


def component(answers: ModuleType, qualname: str):
    """The ``qkv`` function that answers a stub region inside ``qualname`` (``f``, or ``C.m`` for a method), or
    None: the one the solutions module ``answers`` imports under that name, else the one ``qkv`` defines under that
    name (first in the modules that ``answers`` imports from)."""
    own = _attribute(answers, qualname)
    if own is not None and _in_qkv(own):
        return own
    used = {v.__name__ if isinstance(v, ModuleType) else getattr(v, "__module__", None) for v in vars(answers).values()}
    for module in sorted(qkv_definitions().get(qualname.partition(".")[0], ()), key=lambda m: (m not in used, m)):
        found = _attribute(importlib.import_module(module), qualname)
        if found is not None and _in_qkv(found):
            return found
    return None


def reference_cell(stub: str, grade_id: str, answers: ModuleType) -> Reference | None:
    """``qkv``'s reference for the stub cell ``stub`` (the release's, ``grade_id``), given the section's solutions
    module ``answers``: the stub with each region filled with the body of its :func:`component`, its names
    qualified as the assembler qualifies them (:func:`autograder.assemble.component_body`); a region with no
    component keeps the stub's text. None when no region has one."""
    tree = ast.parse(stub)
    namespace = ModuleType("reference_names")  # the solutions' names, and any other qkv module used, by full name
    namespace.__dict__.update(vars(answers))
    pieces, last, components = [], 0, []
    for match in nbs.stub_regions(stub):
        qualname = assemble._enclosing_function(tree, stub.count("\n", 0, match.start()) + 1)
        found = component(answers, qualname) if qualname else None
        if found is None:
            continue
        home = sys.modules[found.__module__]
        if not any(value is home for value in vars(namespace).values()):
            setattr(namespace, home.__name__, home)  # its names read as qkv.pretraining.causal_mask
        body = textwrap.indent(assemble.component_body(found, namespace), match.group("indent"), lambda line: True)
        pieces += [stub[last : match.start()], body]
        last = match.end()
        components.append(f"{found.__module__}.{found.__qualname__}")
    if not components:
        return None
    pieces.append(stub[last:])
    return Reference(grade_id, "".join(pieces), tuple(components))


def references(stubs: dict[str, str], answers: ModuleType) -> dict[str, Reference]:
    """The reference of every stub cell of ``stubs`` (grade_id -> source) that has one (:func:`reference_cell`)."""
    found = {grade_id: reference_cell(source, grade_id, answers) for grade_id, source in stubs.items()}
    return {grade_id: ref for grade_id, ref in found.items() if ref is not None}


# ---------------------------------------------------------------- what every student was given


_TARGET = re.compile(r"^(?:return\b|[A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*\s*=(?!=))\s*")


@dataclasses.dataclass(frozen=True, eq=False)
class Handout:
    """What every student was given: the release notebook's code (``given``, as :mod:`autograder.similarity` reads
    it) and its words (``prose``: the strings and docstrings of its code cells and its markdown, without
    whitespace)."""

    given: similarity.Given
    prose: str

    @classmethod
    def of(cls, cells) -> Handout:
        """The handout of a release notebook's ``cells``."""
        cells = list(cells)
        texts = []
        for cell in cells:
            if cell.cell_type == "markdown":
                texts.append(cell.source)
            elif cell.cell_type == "code":
                texts += _strings(cell.source)
        given = similarity.Given.of(c.source for c in cells if c.cell_type == "code")
        return cls(given, "".join("".join(texts).split()))

    def dictates(self, code: str) -> bool:
        """Whether the handout's words spell out the statement ``code``: the statement, or what it returns or
        assigns, without whitespace, is in them (``return self.ln(self.dropout(Y) + X)`` where the docstring says
        ``-> self.ln(self.dropout(Y) + X)``). Texts shorter than :data:`DICTATED` never count."""
        flat = "".join(code.split())
        value = "".join(_TARGET.sub("", code.strip(), count=1).split())
        return any(len(text) >= DICTATED and text in self.prose for text in {flat, value})

    def own(self, source: str) -> tuple[list[int], str]:
        """The line numbers of ``source`` that its author wrote beyond the handout, and their code joined (what is
        fingerprinted; :func:`autograder.similarity.own_lines`)."""
        lines = similarity.own_lines(source, self.given, self.dictates)
        return [n for n, _ in lines], "\n".join(code for _, code in lines) + "\n"


def _strings(source: str) -> list[str]:
    """The string literals of ``source``, as written (a cell that does not tokenize gives none)."""
    try:
        return [t.string for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type == tokenize.STRING]
    except (tokenize.TokenError, SyntaxError):
        return []


# ---------------------------------------------------------------- answers against the reference


@dataclasses.dataclass(frozen=True, kw_only=True)
class Match:
    """An answer that matches ``qkv``'s reference for its exercise: ``score`` (the larger of ``share_answer``, the
    part of the answer's own code that the reference has, and ``share_reference``, the part of the reference's own
    code that the answer has), ``shared`` (characters of normalised code the answer shares with it), and the line
    numbers (from 1) of the answer's source (``matched``) and of the reference's (``matched_reference``) that lie in
    shared passages."""

    student: str
    assignment: str
    notebook: str
    grade_id: str
    score: float
    share_answer: float
    share_reference: float
    shared: int
    source: str
    reference: str
    components: tuple[str, ...]
    matched: frozenset[int]
    matched_reference: frozenset[int]

    def rows(self) -> list[tuple]:
        """The answer and the reference line by line, for the report (:func:`autograder.similarity.columns`)."""
        return similarity.columns(self.source, self.matched, self.reference, self.matched_reference)


def _code(answer: similarity.Answer, handout: Handout) -> similarity.OwnCode:
    numbers, text = handout.own(answer.source)
    return similarity.OwnCode(answer, numbers, similarity.fingerprint(text, handout.given.hashes))


def scores(answers: list[similarity.Answer], reference: Reference, handout: Handout) -> list[Match]:
    """Every answer of ``answers`` (all to the exercise of ``reference``) against the reference, in their order,
    whatever its score (what :func:`compare` chooses from; the benchmark measures them all). Each distinct text is
    fingerprinted once."""
    if not answers:
        return []
    from copydetect import compare_files

    first = answers[0]
    ref = _code(dataclasses.replace(first, student="qkv", source=reference.source), handout)
    cache: dict[str, similarity.OwnCode] = {}
    out = []
    for answer in answers:
        if answer.source not in cache:
            cache[answer.source] = _code(answer, handout)
        own = cache[answer.source]
        shared, (share_a, share_r), (slices_a, slices_r) = compare_files(own.print, ref.print)
        out.append(
            Match(
                student=answer.student,
                assignment=answer.assignment,
                notebook=answer.notebook,
                grade_id=answer.grade_id,
                score=round(float(max(share_a, share_r)), 3),
                share_answer=round(float(share_a), 3),
                share_reference=round(float(share_r), 3),
                shared=int(shared),
                source=answer.source,
                reference=reference.source,
                components=reference.components,
                matched=own.lines_of(slices_a) if shared else frozenset(),
                matched_reference=ref.lines_of(slices_r) if shared else frozenset(),
            )
        )
    return out


def compare(
    answers: list[similarity.Answer],
    reference: Reference,
    handout: Handout,
    threshold: float = THRESHOLD,
    min_shared: int = MIN_SHARED,
) -> list[Match]:
    """The answers of ``answers`` (all to the exercise of ``reference``) that match it: a ``score`` of at least
    ``threshold`` over at least ``min_shared`` characters of shared code, most alike first."""
    found = [m for m in scores(answers, reference, handout) if m.score >= threshold and m.shared >= min_shared]
    return sorted(found, key=lambda m: (-m.score, m.student))


@dataclasses.dataclass(frozen=True)
class Findings:
    """What :func:`find` found in a graded class: the ``matches``, by assignment, exercise and score; the
    exercises compared (``(assignment, grade_id, components)`` of each that has a reference and answers); and the
    rule (``threshold``, ``min_shared``)."""

    matches: list[Match]
    compared: list[tuple[str, str, tuple[str, ...]]]
    threshold: float = THRESHOLD
    min_shared: int = MIN_SHARED


def _with_solutions(assignment: str, notebook: str) -> bool:
    return Section(slug=assignment).solutions.exists()


def find(course, results, threshold: float = THRESHOLD, min_shared: int = MIN_SHARED) -> Findings:
    """The answers of the graded class ``results`` (of :func:`autograder.grading.cli.grade`) in ``course`` that
    match ``qkv``'s reference for their exercise (:func:`compare`), read as :func:`autograder.similarity.find`
    reads them. Only the assignments whose solutions module is in this repository are compared (the reference is
    found through it); one whose references cannot be built is left out with a warning, and grading goes on."""
    matches: list[Match] = []
    compared = []
    for assignment, _, release, answers in similarity.class_answers(course, results, 1, _with_solutions):
        try:
            module = assemble.solutions_module(Section(slug=assignment))
            refs = references(dict(similarity.answer_cells(release)), module)
        except Exception as err:  # noqa: BLE001 (a report of its own: the grades are written already)
            log.warning("no comparison with qkv's reference for %s: %s: %s", assignment, type(err).__name__, err)
            continue
        handout = Handout.of(release.cells)
        for grade_id, group in answers.items():
            if grade_id in refs:
                compared.append((assignment, grade_id, refs[grade_id].components))
                matches += compare(group, refs[grade_id], handout, threshold, min_shared)
    return Findings(matches, compared, threshold, min_shared)


def line_ranges(numbers) -> str:
    """Line numbers as ranges: ``{3, 4, 5, 9}`` is ``"3-5 9"``."""
    out: list[list[int]] = []
    for n in sorted(numbers):
        if out and n == out[-1][1] + 1:
            out[-1][1] = n
        else:
            out.append([n, n])
    return " ".join(f"{a}-{b}" if b > a else f"{a}" for a, b in out)


def write_csv(matches: list[Match], path: Path) -> Path:
    """``reference.csv``: one row per answer that matches its exercise's reference (:data:`FIELDS`; ``reference``
    names the ``qkv`` components, ``matched_lines`` the answer's lines in shared passages); a header alone when
    none does."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(FIELDS)
        for m in matches:
            shares = (f"{m.score:.3f}", f"{m.share_answer:.3f}", f"{m.share_reference:.3f}")
            row = [m.student, m.assignment, m.notebook, m.grade_id, *shares, m.shared]
            writer.writerow([*row, " ".join(m.components), line_ranges(m.matched)])
    return path
