"""Answers alike beyond chance: for each exercise, the pairs of submissions whose answer code is mostly the same,
for a person to judge (``similarity.csv`` and a section of ``report.html``; :func:`find`).

The fingerprints are `copydetect <https://pypi.org/project/copydetect/>`_'s (the winnowing of MOSS): an answer is
tokenised, every name becomes one letter (``V`` a variable or attribute, ``F`` a function, ``O`` a class), strings
become ``S``, comments and whitespace go, and the hashes of its k-grams (:data:`NOISE` characters of that text) are its
fingerprints. So a copy with its variables renamed, its comments rewritten or its layout changed keeps them. Before
that, three things are taken out of each answer:

* **What every student was given.** The lines of the course's release notebook (the stub's header, signatures and
  ``raise NotImplementedError()``, the visible tests, the setup cell) and the answer's docstrings are left out, and the
  fingerprints of the release's code cells are copydetect's boilerplate. An unchanged stub has no code left.
* **The order of the statements.** What is left is fingerprinted statement by statement in a canonical order (by the
  statement's text with its names made one letter), so that a copy whose lines were reordered reads the same.
* **Nothing else**: the answer's own code, its size the denominator of its share.

Two answers are then scored only when they share at least :data:`MIN_MATCH` characters (about a line) of passages
that at most :data:`COMMON` answers of the exercise have (MOSS's ``-m``): code that much of the class wrote the same
way (the one obvious line, the solution half the class found) is no evidence for any one pair. An answer's share is
the part of its own code that the other answer has too, and a pair's ``similarity`` the larger share (an answer copied
whole into a longer one shows); pairs from :data:`THRESHOLD` on are listed. Every value is the same on every run:
every k-gram is kept (a winnowing window of 1), so no hash seed picks the fingerprints that count.

Nothing here accuses anyone or changes a grade. Independent answers to a short exercise can be alike, and a shared
mistake is as alike as shared code; a person reads the two answers side by side (:func:`side_by_side`) and decides.
Answers that match ``qkv``'s public reference, which this rule keeps silent when many students paste it, are listed
by :mod:`autograder.reference`, with these fingerprints.
"""

from __future__ import annotations

import bisect
import copy
import csv
import dataclasses
import io
import itertools
import json
import keyword
import re
import tokenize
from collections import Counter, defaultdict
from pathlib import Path

#: copydetect's noise threshold: the length of a fingerprinted k-gram, in characters of the filtered text
#: (``def F(V, V):`` is ``defF(V,V):``, 10 characters).
NOISE = 25
#: A passage found in more answers of one exercise than this is common knowledge, never a match (MOSS's ``-m``).
COMMON = 10
#: The fewest characters of filtered text, in passages at most :data:`COMMON` answers have, that two answers must
#: share to be scored at all (about one line of code).
MIN_MATCH = 40
#: A pair of answers is listed when the larger of their shares is at least this.
THRESHOLD = 0.8
#: The grading statuses whose notebooks hold no answer of the student's to compare.
NOT_ANSWERED = ("missing", "invalid notebook")
FIELDS = ("assignment", "notebook", "grade_id", "student_a", "student_b", "similarity", "share_a", "share_b")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Answer:
    """One student's answer to one exercise: the source of its answer cell (nbgrader ``solution`` code cell)."""

    student: str
    assignment: str
    notebook: str
    grade_id: str
    source: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class Pair:
    """Two answers to one exercise more alike than the threshold; ``matched_a``/``matched_b``: the line numbers
    (from 1) of each answer's source that lie in passages the other answer shares."""

    assignment: str
    notebook: str
    grade_id: str
    student_a: str
    student_b: str
    similarity: float
    share_a: float
    share_b: float
    source_a: str
    source_b: str
    matched_a: frozenset[int]
    matched_b: frozenset[int]


def fingerprint(source: str, given=()):
    """copydetect's fingerprint of ``source`` (Python), every k-gram kept, the hashes of ``given`` left out."""
    import numpy as np
    from copydetect import CodeFingerprint

    return CodeFingerprint(
        "answer.py", NOISE, 1, np.asarray(given, dtype=np.int64), language="python", fp=io.StringIO(source)
    )


@dataclasses.dataclass(frozen=True, eq=False)
class Given:
    """The code every student was given: its lines, stripped (an answer's line that is one of them is the stub's,
    or a visible test's), and its fingerprints (copydetect's boilerplate: a passage of given code within a line)."""

    lines: frozenset[str]
    hashes: object  # a sorted numpy array of int64, as copydetect takes its boilerplate

    @classmethod
    def of(cls, sources) -> Given:
        """What the code cells ``sources`` (the release notebook's) give every student."""
        import numpy as np

        sources = list(sources)
        lines = frozenset(line.strip() for source in sources for line in source.splitlines())
        hashes = {h for source in sources for h in fingerprint(source).hashes}
        return cls(lines, np.array(sorted(hashes), dtype=np.int64))


@dataclasses.dataclass
class _Statement:
    """One logical line of an answer (a call over three lines is one): its line numbers, and each line's text up
    to its comment."""

    numbers: list[int]
    code: dict[int, str]


def _statements(source: str) -> list[_Statement]:
    """The statements of ``source`` that are code: comment lines, and statements that are a string alone (a
    docstring, or a string left as a note), are left out, and so is each line's comment. When ``source`` does not
    tokenize (it does not parse), each line is a statement of its own, comments and all."""
    lines = source.splitlines()
    found: list[_Statement] = []
    try:
        current, kinds, cut = None, set(), {}
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                cut[token.start[0]] = token.start[1]
            elif token.type == tokenize.NEWLINE and current is not None:
                if kinds - {tokenize.STRING}:  # not a string alone
                    numbers = list(range(current, token.start[0] + 1))
                    found.append(_Statement(numbers, {n: lines[n - 1][: cut.get(n)].rstrip() for n in numbers}))
                current, kinds = None, set()
            elif token.type not in _NOT_CODE:
                current = token.start[0] if current is None else current
                kinds.add(token.type)
        if current is not None and kinds - {tokenize.STRING}:
            numbers = list(range(current, len(lines) + 1))
            found.append(_Statement(numbers, {n: lines[n - 1][: cut.get(n)].rstrip() for n in numbers}))
    except (tokenize.TokenError, SyntaxError):
        found = [_Statement([n], {n: line}) for n, line in enumerate(lines, 1)]
    return found


_NOT_CODE = (tokenize.COMMENT, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING, tokenize.ENDMARKER)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _order_key(text: str) -> str:
    """What orders the statements of an answer: its code with every name but Python's keywords one letter, and no
    spaces, so that renaming variables does not reorder the statements."""
    return "".join(_NAME.sub(lambda m: m[0] if keyword.iskeyword(m[0]) else "V", text).split())


def own_lines(source: str, given: Given, dictated=None) -> list[tuple[int, str]]:
    """``(number, code)`` of the lines of an answer that its student wrote, without their comments, statement by
    statement in a canonical order (so that two answers whose statements are the same in another order read
    alike): no blank line, no comment, no docstring, no line of the code every student was given (the stub's
    header, signatures, ``raise NotImplementedError()``). ``dictated`` (optional): a test of a statement's code
    (its kept lines joined by spaces); a statement it holds true for is left out too (what the stub's text spells
    out, :mod:`autograder.reference`)."""
    lines = source.splitlines()
    units = []
    for statement in _statements(source):
        kept = [(n, statement.code[n]) for n in statement.numbers if lines[n - 1].strip() not in given.lines]
        kept = [(n, code) for n, code in kept if code.strip()]
        if kept and dictated is not None and dictated(" ".join(code for _, code in kept)):
            continue
        if kept:
            units.append(kept)
    units.sort(key=lambda unit: _order_key("\n".join(code for _, code in unit)))
    return [line for unit in units for line in unit]


@dataclasses.dataclass
class OwnCode:
    """An answer's own lines, joined (what is fingerprinted), and their numbers in the answer."""

    answer: Answer
    numbers: list[int]
    print: object  # copydetect's CodeFingerprint of the joined lines

    def lines_of(self, slices) -> frozenset[int]:
        """The answer's line numbers that the character ranges ``slices`` (2 x N, in the joined text) touch."""
        joined = self.print.raw_code
        starts = [0] + [i + 1 for i, ch in enumerate(joined) if ch == "\n"]
        found: set[int] = set()
        for start, end in zip(*slices):
            first = bisect.bisect_right(starts, int(start))
            last = bisect.bisect_right(starts, max(int(start), int(end) - 1))
            found.update(self.numbers[k - 1] for k in range(first, last + 1) if k <= len(self.numbers))
        return frozenset(found)


def _without(fingerprint, common: set[int]):
    """A copy of ``fingerprint`` without the hashes in ``common`` (what is left to be evidence of copying)."""
    if not common & fingerprint.hashes:
        return fingerprint
    out = copy.copy(fingerprint)
    out.hashes = fingerprint.hashes - common
    out.hash_idx = {h: i for h, i in fingerprint.hash_idx.items() if h not in common}
    return out


def compare(
    answers: list[Answer],
    given: Given,
    threshold: float = THRESHOLD,
    common: int = COMMON,
    min_match: int = MIN_MATCH,
) -> list[Pair]:
    """The pairs of ``answers`` (all to one exercise) whose similarity is at least ``threshold``, most alike first;
    ``given``: the code every student was given (:meth:`Given.of`).

    Only the pairs that share at least ``min_match`` characters of passages found in at most ``common`` answers are
    scored (a pair alike only in what much of the class wrote has no evidence of its own); each distinct text is
    fingerprinted once. So a large class costs about as much as its distinct answers, not as its pairs."""
    if len(answers) < 2:
        return []
    from copydetect import compare_files

    cache: dict[str, object] = {}
    own = []
    for a in answers:
        lines = own_lines(a.source, given)
        text = "\n".join(line for _, line in lines) + "\n"
        if text not in cache:
            cache[text] = fingerprint(text, given.hashes)
        own.append(OwnCode(a, [n for n, _ in lines], cache[text]))
    seen_in = Counter(h for o in own for h in o.print.hashes)
    frequent = {h for h, n in seen_in.items() if n > common}
    rare = [_without(o.print, frequent) for o in own]
    holders: dict[int, list[int]] = defaultdict(list)
    for index, kept in enumerate(rare):
        for h in kept.hashes:
            holders[h].append(index)
    candidates = {pair for group in holders.values() for pair in itertools.combinations(group, 2)}
    pairs = []
    for i, j in sorted(candidates):
        if compare_files(rare[i], rare[j])[0] < min_match:
            continue
        _, (share_i, share_j), (slices_i, slices_j) = compare_files(own[i].print, own[j].print)
        similarity = max(share_i, share_j)
        if similarity < threshold:
            continue
        x, y = own[i], own[j]
        if y.answer.student < x.answer.student:
            x, y, share_i, share_j, slices_i, slices_j = y, x, share_j, share_i, slices_j, slices_i
        pairs.append(
            Pair(
                assignment=x.answer.assignment,
                notebook=x.answer.notebook,
                grade_id=x.answer.grade_id,
                student_a=x.answer.student,
                student_b=y.answer.student,
                similarity=round(float(similarity), 3),
                share_a=round(float(share_i), 3),
                share_b=round(float(share_j), 3),
                source_a=x.answer.source,
                source_b=y.answer.source,
                matched_a=x.lines_of(slices_i),
                matched_b=y.lines_of(slices_j),
            )
        )
    return sorted(pairs, key=lambda p: (-p.similarity, p.student_a, p.student_b))


def answer_cells(nb: dict):
    """``(grade_id, source)`` of each answer code cell of a notebook's JSON (nbgrader ``solution`` cells)."""
    for cell in nb.get("cells", []):
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.get("cell_type") == "code" and meta.get("solution") and meta.get("grade_id"):
            source = cell.get("source", "")
            yield meta["grade_id"], "".join(source) if isinstance(source, list) else source


def class_answers(course, results, at_least: int = 1, wanted=None):
    """Per graded notebook of the class ``results`` (of :func:`autograder.grading.cli.grade`) in ``course`` (an
    :class:`autograder.nbcourse.Course`) that at least ``at_least`` students answered: ``(assignment, notebook,
    release, answers)``, with the course's release notebook and the answers to each exercise (grade_id -> list of
    :class:`Answer`, by student), by assignment and notebook. ``wanted`` (optional): a test of ``(assignment,
    notebook)``; a notebook it fails is left out before anything of it is read.

    The answers are read from the autograded notebooks the grader wrote (the release with the student's answer
    cells, nothing else of the submission), the code every student was given from the course's release notebook.
    Missing and invalid notebooks hold no answer of the student's and are left out."""
    by_notebook: dict[tuple[str, str], list[str]] = defaultdict(list)
    for r in results:
        if r.status not in NOT_ANSWERED:
            by_notebook[r.assignment, r.notebook].append(r.student)
    for (assignment, notebook), students in sorted(by_notebook.items()):
        if len(students) < at_least or (wanted is not None and not wanted(assignment, notebook)):
            continue  # e.g. one notebook graded alone, as on Gradescope: no pair, so nothing read, nothing imported
        release = course.release(assignment, notebook)
        answers: dict[str, list[Answer]] = defaultdict(list)
        for student in sorted(students):
            path = course.path("autograded", assignment, notebook, student=student)
            try:
                nb = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            for grade_id, source in answer_cells(nb):
                answers[grade_id].append(
                    Answer(student=student, assignment=assignment, notebook=notebook, grade_id=grade_id, source=source)
                )
        yield assignment, notebook, release, answers


def find(course, results, threshold: float = THRESHOLD, common: int = COMMON) -> list[Pair]:
    """The similar pairs of every exercise of the graded class ``results`` (of :func:`autograder.grading.cli.grade`) in
    ``course`` (an :class:`autograder.nbcourse.Course`), by assignment, notebook and exercise (the answers as
    :func:`class_answers` reads them)."""
    pairs: list[Pair] = []
    for _, _, release, answers in class_answers(course, results, at_least=2):
        given = Given.of(c.source for c in release.cells if c.cell_type == "code")
        for grade_id in answers:
            pairs += compare(answers[grade_id], given, threshold, common)
    return pairs


def write_csv(pairs: list[Pair], path: Path) -> Path:
    """``similarity.csv``: one row per pair (:data:`FIELDS`), as :func:`find` orders them; a header alone when
    none is alike."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(FIELDS)
        for p in pairs:
            shares = (f"{p.similarity:.3f}", f"{p.share_a:.3f}", f"{p.share_b:.3f}")
            writer.writerow([p.assignment, p.notebook, p.grade_id, p.student_a, p.student_b, *shares])
    return path


def side_by_side(pair: Pair) -> list[tuple]:
    """The two answers line by line, for the report: ``(number_a, text_a, matched_a, number_b, text_b,
    matched_b)`` per row (:func:`columns`)."""
    return columns(pair.source_a, pair.matched_a, pair.source_b, pair.matched_b)


def columns(source_a: str, matched_a, source_b: str, matched_b) -> list[tuple]:
    """Two sources line by line: ``(number_a, text_a, matched_a, number_b, text_b, matched_b)`` per row, a line
    marked where its number (from 1) is in ``matched_a`` or ``matched_b``, the shorter source padded with
    ``(None, "", False)``."""
    a, b = source_a.splitlines(), source_b.splitlines()
    rows = []
    for n in range(max(len(a), len(b))):
        left = (n + 1, a[n], n + 1 in matched_a) if n < len(a) else (None, "", False)
        right = (n + 1, b[n], n + 1 in matched_b) if n < len(b) else (None, "", False)
        rows.append((*left, *right))
    return rows
