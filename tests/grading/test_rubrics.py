"""Model answers and rubrics of the written questions (autograder/rubrics.py, autograder/sections/*/rubric.toml).

Every answer cell has an entry whose points add up to the cell's; the model answers reach nbgrader's source
notebook and the solutions edition, and never the release, the student edition or the students' feedback; the
formgrader's exporter keeps the cell that shows them to graders while the course's feedback configuration drops it.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import nbformat
import pytest

from autograder import editions, rubrics
from course import notebooks as nbs
from course.section import Section, sections
from publish import build_book
from tests.support import corpus

SECTIONS = sections()
WITH_QUESTIONS = [s for s in SECTIONS if rubrics.answer_cells(s.read())]


def plain_runs(text: str, least: int = 24) -> list[str]:
    """Runs of plain words (letters, digits, spaces, commas) of at least ``least`` characters: pieces of a model
    answer that any rendering (markdown, HTML) keeps verbatim."""
    return [m.group(0).strip() for m in re.finditer(r"[A-Za-z0-9 ,]+", text) if len(m.group(0).strip()) >= least]


def needles(section: Section) -> list[str]:
    """The plain runs of the section's model answers and criteria that its student text does not hold itself
    (an answer may repeat a phrase of its question)."""
    book = " ".join(section.path.read_text(encoding="utf-8").split())
    runs = [run for r in rubrics.load(section).values() for line in r.lines() for run in plain_runs(line)]
    return [run for run in runs if run not in book]


# ---------------------------------------------------------------- structure


@pytest.mark.parametrize("section", SECTIONS, ids=lambda s: s.slug)
def test_every_answer_cell_has_a_rubric_whose_points_add_up_to_the_cells(section):
    assert rubrics.problems(section) == []
    entries, cells = rubrics.load(section), rubrics.answer_cells(section.read())
    assert set(entries) == set(cells)
    for gid, entry in entries.items():
        assert len(entry.answer.split()) >= 40, f"{gid}: the model answer should be a paragraph"
        assert sum(c.points for c in entry.criteria) == pytest.approx(cells[gid])


def test_the_course_has_written_questions_and_each_has_distinctive_text():
    assert WITH_QUESTIONS, "no section has a written question: the rubric tests would check nothing"
    assert sum(len(rubrics.load(s)) for s in SECTIONS) == sum(len(rubrics.answer_cells(s.read())) for s in SECTIONS)
    for section in WITH_QUESTIONS:
        assert needles(section), f"{section.slug}: no plain text to look for"


def _copy_section(tmp_path: Path, section: Section, rubric_text: str | None) -> Section:
    copy = Section(section.slug, root=tmp_path)
    copy.path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(section.path, copy.path)
    if rubric_text is not None:
        copy.rubric.parent.mkdir(parents=True, exist_ok=True)
        copy.rubric.write_text(rubric_text)
    return copy


def test_problems_name_a_missing_entry_an_extra_one_and_points_that_do_not_add_up(tmp_path):
    section = WITH_QUESTIONS[0]
    cells = list(rubrics.answer_cells(section.read()))
    entry = "[{g}]\nanswer = 'An answer.'\n[[{g}.rubric]]\npoints = {p}\ncriterion = 'Something.'\n"
    text = entry.format(g=cells[0], p=0.5) + entry.format(g="answer_nowhere", p=1)
    found = rubrics.problems(_copy_section(tmp_path, section, text))
    assert any(f"answer cell {cells[1]!r} has no entry" in p for p in found), found
    assert any("has no answer cell 'answer_nowhere'" in p for p in found), found
    assert any(f"[{cells[0]}]: the criteria give 0.5 points, the cell 1" in p for p in found), found
    assert all(f"answer cell {cells[0]!r} has no entry" not in p for p in found)
    missing = rubrics.problems(_copy_section(tmp_path / "none", section, None))
    assert len(missing) == len(cells) and all("write its model answer and rubric" in p for p in missing)


GOOD = "[answer_x]\nanswer = 'A model answer.'\n[[answer_x.rubric]]\npoints = 1\ncriterion = 'The point.'\n"


@pytest.mark.parametrize(
    "text, says",
    [
        ("[answer_x\n", "is not valid TOML"),
        ("[answer_x]\nanswer = 'A.'\n", "missing key(s) ['rubric']"),
        (GOOD.replace("answer = ", "model = "), "unknown key(s) ['model']"),
        (GOOD.replace("'A model answer.'", "'  '"), "answer must be a non-empty string"),
        (GOOD.replace("points = 1", "points = 0"), "points must be a positive number"),
        (GOOD.replace("points = 1", "points = true"), "points must be a positive number"),
        (GOOD.replace("criterion = ", "what = "), "each criterion has exactly points"),
        (GOOD.replace("A model answer.", "### BEGIN SOLUTION"), "marker text ['BEGIN SOLUTION']"),
        ("[answer_x]\nanswer = 'A.'\nrubric = []\n", "rubric must be a non-empty list"),
    ],
)
def test_a_malformed_rubric_is_refused_with_what_to_fix(tmp_path, text, says):
    path = tmp_path / "rubric.toml"
    path.write_text(text)
    with pytest.raises(rubrics.RubricError) as err:
        rubrics.read(path)
    assert says in str(err.value) and str(path) in str(err.value)
    assert rubrics.read(tmp_path / "absent.toml") == {}
    path.write_text(GOOD)
    assert rubrics.read(path)["answer_x"].points == 1.0


# ---------------------------------------------------------------- where they go


def test_nbgraders_clear_solutions_turns_the_source_answer_cell_back_into_the_books():
    from nbgrader.preprocessors import ClearSolutions

    section = WITH_QUESTIONS[0]
    entry = next(iter(rubrics.load(section).values()))
    for book_source in ("YOUR ANSWER HERE", "**Question 1.**\n\n  YOUR ANSWER HERE\n"):
        cell = nbformat.v4.new_markdown_cell(rubrics.solution_source(book_source, entry))
        cell.metadata["nbgrader"] = {"solution": True, "grade": True, "grade_id": entry.grade_id, "points": 1}
        assert entry.answer.splitlines()[0] in cell.source
        assert rubrics.from_source(nbformat.v4.new_notebook(cells=[cell])) == {entry.grade_id: entry.markdown()}
        cleared, _ = ClearSolutions(text_stub="YOUR ANSWER HERE").preprocess_cell(cell, {"language": "python"}, 0)
        assert cleared.source == book_source
    with pytest.raises(rubrics.RubricError, match="exactly once"):
        rubrics.solution_source("Nothing to replace here.", entry)


@pytest.fixture(scope="module")
def course():
    """A built nbgrader course (sources and release) of every section with written questions."""
    return corpus.course_template(tuple(s.slug for s in WITH_QUESTIONS))


@pytest.mark.slow
@pytest.mark.parametrize("section", WITH_QUESTIONS, ids=lambda s: s.slug)
def test_the_source_holds_every_model_answer_and_the_release_none(course, section):
    source = nbformat.read(course / "source" / section.assignment / f"{section.slug}.ipynb", as_version=4)
    release = nbformat.read(course / "release" / section.assignment / f"{section.slug}.ipynb", as_version=4)
    entries = rubrics.load(section)
    assert rubrics.from_source(source) == {gid: r.markdown() for gid, r in entries.items()}
    released = "\n".join(c.source for c in release.cells)
    leaked = [line for r in entries.values() for line in r.lines() if line in released]
    assert not leaked, f"model answer lines in the release: {leaked[:3]}"
    assert [c.source for c in release.cells if nbs.role(c) == "answer"] == ["YOUR ANSWER HERE"] * len(entries)


def test_the_solutions_edition_shows_each_model_answer_after_its_answer_cell_and_the_student_edition_none(tmp_path):
    editions.stage(tmp_path / "solutions")
    build_book.stage("student", tmp_path / "student")
    for section in WITH_QUESTIONS:
        rel = section.path.relative_to(section.root)
        solved = nbs.read(tmp_path / "solutions" / rel)
        entries = rubrics.load(section)
        for i, cell in enumerate(solved.cells):
            if nbs.role(cell) == "answer":
                after = solved.cells[i + 1]
                assert after.cell_type == "markdown" and after.source == rubrics.admonition(entries[nbs.grade_id(cell)])
                assert after.source.startswith(f":::{{admonition}} {rubrics.TITLE}")
        student = (tmp_path / "student" / rel).read_text()
        assert rubrics.TITLE not in student
        assert not [n for n in needles(section) if n in student], f"{section.slug}: model answer in the student edition"


def test_the_grader_cell_follows_each_answer_and_only_the_feedback_configuration_drops_it(tmp_path):
    """The formgrader renders with nbconvert's HTMLExporter on the course's configuration, and feedback with the
    preprocessors the configuration lists: the first must keep the graders' cell, the second must remove it."""
    from nbconvert.exporters import HTMLExporter
    from traitlets.config.loader import PyFileConfigLoader

    section = WITH_QUESTIONS[0]
    book = section.read()
    answers = {gid: r.markdown() for gid, r in rubrics.load(section).items()}
    graded = rubrics.for_graders(book, answers)
    assert len(graded.cells) == len(book.cells) + len(answers) and graded.cells is not book.cells
    for i, cell in enumerate(graded.cells):
        if nbs.role(cell) == "answer":
            marked = graded.cells[i + 1]
            assert marked.metadata["tags"] == [rubrics.TAG] and answers[nbs.grade_id(cell)] in marked.source
    assert rubrics.for_graders(book, {}) is book

    shutil.copyfile(nbs.ROOT / "autograder" / "nbgrader_config.py", tmp_path / "nbgrader_config.py")
    config = PyFileConfigLoader("nbgrader_config.py", path=str(tmp_path)).load_config()
    snippet = plain_runs(next(iter(rubrics.load(section).values())).answer)[0]
    formgrader = HTMLExporter(config=config)  # as nbgrader's formgrader builds it
    assert snippet in formgrader.from_notebook_node(graded)[0]
    feedback = HTMLExporter(config=config)
    listed = config.GenerateFeedback.preprocessors
    assert "ClearModelAnswers" in [pp.__name__ for pp in listed]
    # as nbgrader registers them; GetGrades reads the gradebook: tests/grading/test_grade_cli.py runs it
    for pp in listed:
        if pp.__name__ != "GetGrades":
            feedback.register_preprocessor(pp)
    html = feedback.from_notebook_node(graded)[0]
    assert snippet not in html and rubrics.TITLE not in html
    assert "YOUR ANSWER HERE" in html  # the rest of the notebook is still there


def test_source_answers_reads_a_course_notebook_and_nothing_without_one(tmp_path):
    section = WITH_QUESTIONS[0]
    from autograder import assemble

    source = assemble.solved(section.read(), section, markers=True)
    path = tmp_path / "source.ipynb"
    nbformat.write(source, str(path))
    assert rubrics.source_answers(path) == {gid: r.markdown() for gid, r in rubrics.load(section).items()}
    assert rubrics.source_answers(tmp_path / "missing.ipynb") == {}


def test_the_solutions_edition_lets_no_cell_fail_quietly(tmp_path):
    """Students' test cells carry raises-exception (Run All goes on past them); the solutions edition answers every
    stub, so there a failing test is the course's bug and must stop the build: no cell keeps the tag."""
    editions.stage(tmp_path / "solutions")
    staged = sorted((tmp_path / "solutions" / "book").glob("*.md"))
    assert staged
    tagged = []
    for path in staged:
        for i, cell in enumerate(nbs.read(path).cells):
            if build_book.RAISES in cell.metadata.get("tags", []):
                tagged.append(f"{path.name} cell {i}")
    assert not tagged, f"cells of the solutions edition that may fail quietly: {tagged}"
