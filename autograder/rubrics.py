"""Model answers and rubrics of the written questions, for graders only.

A written question is a markdown answer cell (nbgrader ``solution: true``,
``grade: true``, graded by a person; :func:`course.notebooks.role` says
``"answer"``) after the markdown cell that asks it. Each section keeps the model
answer and the rubric of every one of its answer cells in
``autograder/sections/<module>/rubric.toml`` (:attr:`course.section.Section.rubric`),
one table per answer cell, keyed by its grade_id::

    [answer_exact_lookup]
    answer = '''
    A short paragraph: what a full answer says, checked against the section and D2L.
    '''

    [[answer_exact_lookup.rubric]]
    points = 0.5
    criterion = "What earns these points, in one sentence."

    [[answer_exact_lookup.rubric]]
    points = 0.5
    criterion = "..."

The criteria's points add up to the cell's ``points`` (:func:`problems` checks it,
and that every answer cell has an entry and every entry an answer cell).

Where graders see them, and where nobody else does:

* **nbgrader's source notebook** (``make release``): :func:`autograder.assemble.solved`
  with ``markers=True`` writes the model answer and rubric into the answer cell,
  inside nbgrader's solution markers (:func:`solution_source`). ``nbgrader
  generate_assignment`` replaces that region with ``YOUR ANSWER HERE``, so the
  release (and every student) never gets it; ``nbgrader generate_solution`` shows it.
* **The formgrader**: nbgrader cannot show a model answer there by itself (it shows
  the autograded notebook, a markdown answer cell holds the student's text, and
  ``OverwriteCells`` restores locked cells only; a mark scheme must sit in a
  "task" cell, which the release would then contain). So the grader
  (:mod:`autograder.grade`) writes each autograded notebook with a read-only
  markdown cell right after every answer cell, tagged ``model-answer``
  (:func:`for_graders`), taken from the course's own source notebook
  (:func:`from_source`). The grader sees the student's answer and, under it, the
  model answer and rubric.
* **Feedback**: nbgrader's ``GenerateFeedback`` renders the autograded notebook, so
  the course's ``nbgrader_config.py`` adds a preprocessor that removes the cells
  tagged ``model-answer`` (nbgrader's own feedback would show them, as it shows a
  task cell's mark scheme). Delete it there to return the model answers with the
  feedback.
* **The solutions edition of the book**: an admonition "Model answer and rubric
  (instructors)" after each answer cell (:func:`admonition`, through
  :func:`autograder.assemble.solved` with ``rubrics=True``).
* Never in ``book/``, the student edition, the Colab notebooks or the public tree
  (``make public``, whose test checks that no line of a ``rubric.toml`` is there).
"""

from __future__ import annotations

import copy
import functools
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path

import nbformat

from autograder.sandboxed import protocol
from course import notebooks as nbs
from course.section import Section

#: The keys of an entry, and what each holds.
KEYS = {
    "answer": "the model answer, a short paragraph of markdown (a multi-line string)",
    "rubric": "the criteria, each a [[<grade_id>.rubric]] table with `points` and `criterion`",
}
CRITERION_KEYS = {"points": "a positive number", "criterion": "what earns those points, in a sentence"}
#: The tag of the cell that shows graders the model answer in an autograded notebook.
TAG = "model-answer"
TITLE = "Model answer and rubric (instructors)"
TEXT_STUB = protocol.TEXT_STUB  # nbgrader's ClearSolutions.text_stub, as autograder/nbgrader_config.py sets it
BEGIN_SOLUTION, END_SOLUTION = protocol.BEGIN_SOLUTION, protocol.END_SOLUTION
# Text that nbgrader's preprocessors read as markers: a model answer holding one would break the release.
_DELIMITERS = (*protocol.SOLUTION_WORDS, *protocol.HIDDEN_WORDS, "MARK SCHEME")


class RubricError(ValueError):
    """A ``rubric.toml`` that cannot be read or does not fit its section; the message says what and how to fix it."""


@dataclass(frozen=True)
class Criterion:
    points: float
    text: str


@dataclass(frozen=True)
class Rubric:
    """The model answer and rubric of one answer cell."""

    grade_id: str
    answer: str
    criteria: tuple[Criterion, ...]

    @property
    def points(self) -> float:
        return sum(c.points for c in self.criteria)

    def markdown(self) -> str:
        """The model answer, then the rubric as a list, in markdown (what graders read)."""
        lines = [f"**Model answer.** {self.answer}", "", f"**Rubric** ({_points(self.points)}):", ""]
        lines += [f"- {_points(c.points)}: {c.text}" for c in self.criteria]
        return "\n".join(lines)

    def lines(self) -> list[str]:
        """Every line of the model answer and every criterion, as written: what must never reach a student."""
        return [line.strip() for line in self.answer.splitlines() if line.strip()] + [c.text for c in self.criteria]


def _points(points: float) -> str:
    return f"{points:g} point" + ("" if points == 1 else "s")


def _entry(path: Path, gid: str, table) -> Rubric:
    where = f"{path}, [{gid}]"
    if not isinstance(table, dict):
        raise RubricError(f"{where}: must be a table with {', '.join(KEYS)}, not {table!r}")
    unknown = sorted(set(table) - set(KEYS))
    missing = sorted(set(KEYS) - set(table))
    if unknown or missing:
        raise RubricError(
            f"{where}: unknown key(s) {unknown}, missing key(s) {missing}; an entry has exactly "
            + "; ".join(f"{k}: {v}" for k, v in KEYS.items())
        )
    answer = table["answer"]
    if not isinstance(answer, str) or not answer.strip():
        raise RubricError(f"{where}: answer must be a non-empty string (the model answer)")
    criteria = table["rubric"]
    if not isinstance(criteria, list) or not criteria:
        raise RubricError(f"{where}: rubric must be a non-empty list of [[{gid}.rubric]] tables")
    out = []
    for i, item in enumerate(criteria, 1):
        if not isinstance(item, dict) or set(item) != set(CRITERION_KEYS):
            keys = sorted(item) if isinstance(item, dict) else item
            raise RubricError(
                f"{where}: criterion {i} has {keys!r}; each criterion has exactly "
                + ", ".join(f"{k} ({v})" for k, v in CRITERION_KEYS.items())
            )
        points, text = item["points"], item["criterion"]
        if isinstance(points, bool) or not isinstance(points, int | float) or not points > 0:
            raise RubricError(f"{where}: criterion {i}'s points must be a positive number, not {points!r}")
        if not isinstance(text, str) or not text.strip():
            raise RubricError(f"{where}: criterion {i}'s criterion must be a non-empty sentence")
        out.append(Criterion(float(points), " ".join(text.split())))
    found = [d for d in _DELIMITERS if d in answer or any(d in c.text for c in out)]
    if found:
        raise RubricError(f"{where}: holds nbgrader's marker text {found}, which would cut the release: reword it")
    return Rubric(gid, answer.strip(), tuple(out))


def read(path: Path) -> dict[str, Rubric]:
    """The entries of one ``rubric.toml``, checked (:class:`RubricError` says what is wrong); ``{}`` without a file."""
    path = Path(path)
    if not path.exists():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        raise RubricError(f"{path} is not valid TOML: {err}") from None
    return {gid: _entry(path, gid, table) for gid, table in data.items()}


def load(section: Section) -> dict[str, Rubric]:
    """The model answers and rubrics of ``section``, by grade_id (``{}`` when it has no written question)."""
    return read(section.rubric)


def answer_cells(nb) -> dict[str, float]:
    """The answer cells of a course notebook: grade_id -> points."""
    return {nbs.grade_id(c): float(nbs.nbgrader_meta(c).get("points", 0)) for c in nb.cells if nbs.role(c) == "answer"}


def problems(section: Section) -> list[str]:
    """What keeps the section's rubrics from fitting its answer cells (empty when they fit)."""
    try:
        entries = load(section)
    except RubricError as err:
        return [str(err)]
    cells = answer_cells(section.read())
    where = section.rubric.relative_to(section.root)
    out = [
        f"answer cell {g!r} has no entry [{g}] in {where}: write its model answer and rubric"
        for g in cells
        if g not in entries
    ]
    out += [
        f"{where} has [{g}], but {section.slug} has no answer cell {g!r}: remove it" for g in entries if g not in cells
    ]
    for gid, points in cells.items():
        if gid in entries and not math.isclose(entries[gid].points, points):
            out.append(
                f"{where}, [{gid}]: the criteria give {entries[gid].points:g} points, the cell {points:g}: "
                "make them agree"
            )
    return out


# ---------------------------------------------------------------- where they are shown


def solution_source(source: str, rubric: Rubric) -> str:
    """An answer cell's source with its ``YOUR ANSWER HERE`` line replaced by the model answer and rubric inside
    nbgrader's solution markers: ``nbgrader generate_assignment`` turns it back into exactly ``source``."""
    lines = source.split("\n")
    at = [i for i, line in enumerate(lines) if line.strip() == TEXT_STUB]
    if len(at) != 1:
        raise RubricError(
            f"answer cell {rubric.grade_id!r} must hold the line {TEXT_STUB!r} exactly once (nbgrader's text stub, "
            f"which the release puts back in place of the model answer); it has it {len(at)} times"
        )
    indent = lines[at[0]][: len(lines[at[0]]) - len(lines[at[0]].lstrip())]
    lines[at[0]] = f"{indent}{BEGIN_SOLUTION}\n{rubric.markdown()}\n{indent}{END_SOLUTION}"
    return "\n".join(lines)


def admonition(rubric: Rubric) -> str:
    """The solutions edition's box under an answer cell (a MyST admonition)."""
    return f":::{{admonition}} {TITLE}\n:class: note\n{rubric.markdown()}\n:::"


def from_source(source_nb) -> dict[str, str]:
    """The model answers in an nbgrader source notebook: grade_id -> the solution region of each answer cell."""
    found = {}
    for cell in source_nb.cells:
        if nbs.role(cell) != "answer":
            continue
        lines = cell.source.split("\n")
        begin = [i for i, line in enumerate(lines) if protocol.SOLUTION_WORDS[0] in line]
        end = [i for i, line in enumerate(lines) if protocol.SOLUTION_WORDS[1] in line]
        if len(begin) == 1 and len(end) == 1 and begin[0] < end[0]:
            found[nbs.grade_id(cell)] = "\n".join(lines[begin[0] + 1 : end[0]]).strip()
    return found


@functools.lru_cache(maxsize=64)
def _source_answers(path: str, stamp: tuple[int, int]) -> dict[str, str]:
    return from_source(nbformat.read(path, as_version=4))


def source_answers(path: Path) -> dict[str, str]:
    """:func:`from_source` of the notebook at ``path`` (read once per version of the file); ``{}`` without one."""
    path = Path(path)
    if not path.is_file():
        return {}
    st = path.stat()
    return _source_answers(str(path), (st.st_mtime_ns, st.st_size))


def grader_cell(text: str) -> nbformat.NotebookNode:
    """The read-only markdown cell that shows a grader the model answer and rubric (tagged :data:`TAG`)."""
    cell = nbformat.v4.new_markdown_cell(f"**{TITLE}** (graders only: not in the students' feedback)\n\n{text}")
    cell.metadata.update({"tags": [TAG], "editable": False, "deletable": False})
    return cell


def for_graders(nb, answers: dict[str, str]):
    """A copy of an autograded notebook with :func:`grader_cell` of the model answer right after each answer cell
    that has one in ``answers`` (grade_id -> text, e.g. :func:`source_answers`)."""
    if not answers:
        return nb
    out = copy.copy(nb)
    out.cells = []
    for cell in nb.cells:
        out.cells.append(cell)
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.cell_type == "markdown" and meta.get("solution") and meta.get("grade_id") in answers:
            out.cells.append(grader_cell(answers[meta["grade_id"]]))
    return out
