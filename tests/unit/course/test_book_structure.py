"""The conventions every section notebook follows, so the assembler, nbgrader and the grader can rely on them."""

from __future__ import annotations

import ast
import re

import pytest

from autograder import assemble, mutants
from course import notebooks as nbs
from course.section import CHAPTER_FIGURES, sections

SECTIONS = sections()
IDS = [s.slug for s in SECTIONS]


def test_toc_lists_every_page_and_only_existing_ones():
    listed = {f"{name}.md" for name in nbs.toc_files()}
    on_disk = {f"book/{p.name}" for p in nbs.BOOK.glob("*.md")}
    assert listed == on_disk, (
        f"in the toc but missing: {listed - on_disk}; on disk but not in the toc: {on_disk - listed}"
    )
    assert [s.slug for s in SECTIONS][:1] == ["queries-keys-values"], "sections follow D2L's order, 11.1 first"


@pytest.mark.parametrize("section", SECTIONS, ids=IDS)
def test_cells_follow_the_nbgrader_conventions(section):
    nb = nbs.read(section.path)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    code = [c for c in nb.cells if c.cell_type == "code"]
    setup = code[0]
    assert nbs.grade_id(setup) == "setup" and nbs.role(setup) == "locked", "the first code cell is the locked setup"
    assert "from qkv import checks" in setup.source, "the setup cell imports qkv.checks before any student code"
    assert "checks.install()" in setup.source, (
        "the setup cell calls checks.install() after importing qkv.checks, so that a failed check shows as its "
        "message and an unwritten exercise by name"
    )
    ids = [nbs.grade_id(c) for c in nb.cells if nbs.role(c) != "plain"]
    assert len(ids) == len(set(ids)), f"duplicate grade_ids: {sorted(i for i in ids if ids.count(i) > 1)}"
    stubs = [c for c in nb.cells if nbs.role(c) == "stub"]
    tests = {nbs.grade_id(c): c for c in nb.cells if nbs.role(c) == "test"}
    assert stubs, "a section has at least one graded stub"
    for cell in nb.cells:
        meta = nbs.nbgrader_meta(cell)
        if meta:
            assert meta.get("schema_version") == 3, f"{meta.get('grade_id')}: nbgrader schema_version 3"
            if meta.get("grade"):
                assert meta.get("points", 0) > 0, f"{meta['grade_id']}: a graded cell has points"
    for stub in stubs:
        grade = nbs.grade_id(stub)
        assert "BEGIN SOLUTION" not in stub.source
        regions = nbs.stub_regions(stub.source)
        assert regions, f"{grade}: the stub is exactly '# YOUR CODE HERE' then 'raise NotImplementedError()'"
        assert stub.source.count("NotImplementedError") == len(regions), f"{grade}: a stray NotImplementedError"
        assert f"test_{grade}" in tests, f"stub {grade} has no test cell test_{grade}"
    for grade, cell in tests.items():
        assert nbs.nbgrader_meta(cell).get("locked"), f"{grade}: test cells are locked"
        second = (cell.source.splitlines() + ["", ""])[1]
        assert second.startswith("# Checks: "), (
            f"{grade}: a test cell says what it checks in its second line, '# Checks: <one sentence>.'"
        )
        assert second.endswith("."), f"{grade}: what the test checks is one line, a sentence ending in a full stop"


@pytest.mark.parametrize("section", SECTIONS, ids=IDS)
def test_cells_say_what_they_are(section):
    """A stub cell opens with its exercise's number and points, a test cell says it is a locked test, and each
    written answer is announced by the number of its question (CONTRIBUTING.md, "What the structure tests
    require")."""
    nb = nbs.read(section.path)
    points = {nbs.grade_id(c): nbs.nbgrader_meta(c).get("points") for c in nb.cells if nbs.role(c) == "test"}
    problems = []
    stubs = [c for c in nb.cells if nbs.role(c) == "stub"]
    for number, stub in enumerate(stubs, 1):
        grade = nbs.grade_id(stub)
        header = exercise_header(number, points.get(f"test_{grade}", 0), stub.source)
        if stub.source.splitlines()[0] != header:
            problems.append(f"stub {grade}: make its first line exactly\n    {header}")
        test = next((c for c in nb.cells if nbs.grade_id(c) == f"test_{grade}"), None)
        expected = locked_test_header(number)
        if test is not None and test.source.splitlines()[0] != expected:
            problems.append(
                f"test_{grade}: make its first line exactly\n    {expected}\n  followed by its '# Checks: ...' line"
            )
    question = 0
    for index, cell in enumerate(nb.cells):
        if nbs.role(cell) != "answer":
            continue
        question += 1
        grade = nbs.grade_id(cell)
        if cell.source.strip() != "YOUR ANSWER HERE":
            problems.append(f"{grade}: an answer cell holds nbgrader's prompt 'YOUR ANSWER HERE' and nothing else")
        before = nb.cells[index - 1] if index else None
        line = answer_heading(question)
        if before is None or before.cell_type != "markdown" or before.source.rstrip().splitlines()[-1] != line:
            problems.append(f"{grade}: end the markdown cell just before it with the line\n    {line}")
        elif (listed := re.findall(r"^(\d+)\. ", before.source, re.M)) and int(listed[-1]) != question:
            problems.append(
                f"{grade}: its question is numbered {listed[-1]} but it is answer {question} of the section: "
                "number the graded questions 1, 2, 3... in order, or renumber the answer headings"
            )
    assert not problems, f"{section.slug}:\n" + "\n".join(problems)


@pytest.mark.parametrize("section", SECTIONS, ids=IDS)
def test_run_all_reaches_every_exercise(section):
    """JupyterLab's Run All goes on past a failing cell tagged ``raises-exception``: every visible test, and
    every demo that uses the student's answers, carries it, so an unwritten stub stops nothing below it."""
    missing = [
        nbs.grade_id(c) or f"cell {i} (tagged {nbs.USES_ANSWERS})"
        for i, c in enumerate(nbs.read(section.path).cells)
        if (nbs.role(c) == "test" or nbs.USES_ANSWERS in c.metadata.get("tags", []))
        and "raises-exception" not in c.metadata.get("tags", [])
    ]
    assert not missing, (
        f"{section.slug}: add raises-exception to the tags of these cells (tags: [raises-exception], or "
        f"tags: [{nbs.USES_ANSWERS}, raises-exception]) in their YAML block: " + ", ".join(missing)
    )


def exercise_header(number: int, points, source: str) -> str:
    """The first line of stub cell ``number``: ``# Exercise 2 (2 points): write sharp_similarity.``, naming the
    functions and classes the cell defines."""
    import ast

    names = [n.name for n in ast.parse(source).body if isinstance(n, ast.FunctionDef | ast.ClassDef)]
    listed = " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names or ["the cell"])
    points = int(points) if float(points).is_integer() else points
    return f"# Exercise {number} ({points} point{'' if points == 1 else 's'}): write {listed}."


def locked_test_header(number: int) -> str:
    """The first line of the test cell of exercise ``number``."""
    return f"# Test of exercise {number}, locked: edits are not graded."


def answer_heading(question: int) -> str:
    """The last line of the markdown cell before written answer ``question``."""
    return f"**Your answer to question {question}:**"


@pytest.mark.parametrize("section", SECTIONS, ids=IDS)
def test_section_reads_as_a_chapter(section):
    text = section.path.read_text()
    title = re.search(r"^# (11\.\d|Lab)", text, re.M)
    assert title, "the title carries the D2L section number"
    for heading in ("## At a glance", "## Summary", "## Discussion"):
        assert heading in text, f"missing '{heading}'"
    assert "After this section you can" in text
    assert "$$" in text, "the idea is given as an equation"


@pytest.mark.parametrize("section", SECTIONS, ids=IDS)
def test_solutions_hidden_tests_and_mutants_match_the_stubs(section):
    nb = nbs.read(section.path)
    answers = assemble.solutions_module(section)
    stubs = {nbs.grade_id(c): c for c in nb.cells if nbs.role(c) == "stub"}
    tests = {nbs.grade_id(c) for c in nb.cells if nbs.role(c) == "test"}
    solved = {grade: assemble.fill_stubs(cell.source, grade, answers, markers=False) for grade, cell in stubs.items()}
    for grade, text in solved.items():
        assert "NotImplementedError" not in text
        compile(text, grade, "exec")
    hidden = set(section.hidden_tests())
    assert hidden == tests, f"hidden tests without a test cell: {hidden - tests}; test cells without: {tests - hidden}"
    known = mutants.load(section)  # rejects a grade_id that is not a stub
    keyed = {m.grade_id for m in known}
    assert keyed == set(stubs), f"{section.mutants} has no [[...]] entry for the stubs {sorted(set(stubs) - keyed)}"
    for mutant in known:
        assert mutant.apply(solved[mutant.grade_id]) != solved[mutant.grade_id]  # each edit still fits the solution


def _names_used(source: str) -> set[str]:
    return {node.id for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Name)}


@pytest.mark.parametrize("section", SECTIONS, ids=IDS)
def test_no_exercise_is_tested_through_another(section):
    """A graded exercise builds on qkv, never on another exercise (CONTRIBUTING.md): neither the visible nor the
    hidden test of an exercise names what another stub defines, so a wrong answer cannot cost points twice."""
    nb = nbs.read(section.path)
    defined = {}  # stub grade_id -> the functions and classes it defines
    for cell in nb.cells:
        if nbs.role(cell) == "stub":
            body = ast.parse(cell.source).body
            defined[nbs.grade_id(cell)] = {n.name for n in body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    for cell in nb.cells:
        if nbs.role(cell) != "test":
            continue
        test_id = nbs.grade_id(cell)
        others = {name for grade, names in defined.items() if f"test_{grade}" != test_id for name in names}
        hidden = section.hidden_test(test_id)
        for where, source in (("visible", cell.source), ("hidden", hidden.read_text() if hidden.exists() else "")):
            used = sorted(_names_used(source) & others)
            assert not used, (
                f"the {where} test {test_id} calls {used}, another exercise's answer: test it with qkv's reference "
                "or torch instead, so that a wrong answer there cannot fail this exercise"
            )


#: Characters of code the book's column shows before a line scrolls sideways: 84 in a 1280-px-wide window
#: (book/_assets/course.css's code font), 90 or more at other common widths.
CODE_COLUMNS = 84


@pytest.mark.parametrize("section", SECTIONS, ids=IDS)
def test_code_cells_fit_the_books_column(section):
    long = [
        f"cell {i}: {len(line)} characters: {line.strip()[:60]}..."
        for i, cell in enumerate(nbs.read(section.path).cells)
        if cell.cell_type == "code"
        for line in cell.source.splitlines()
        if len(line) > CODE_COLUMNS
    ]
    assert not long, f"{section.slug}: rewrap these lines to {CODE_COLUMNS} characters:\n" + "\n".join(long)


def test_every_section_has_a_glance_figure_and_every_figure_or_widget_module_a_section():
    """``qkv.figures.<module>.glance()`` draws each section's opening figure; ``qkv.figures`` and ``qkv.widgets``
    hold one module per section (docs/design.md, "A section is one name in every folder") and nothing else public."""
    import importlib
    import pkgutil

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    import qkv.figures
    import qkv.widgets

    problems = []
    for section in SECTIONS:
        path = section.figures_path.relative_to(section.root)
        try:
            module = importlib.import_module(section.figures_module)
        except ModuleNotFoundError as error:
            if error.name != section.figures_module:
                raise
            problems.append(f"{section.slug}: create {path} with a glance() that draws and returns its opening figure")
            continue
        glance = getattr(module, "glance", None)
        if not callable(glance):
            problems.append(f"{section.slug}: {path} has no glance(); add one that draws and returns the figure")
            continue
        fig = glance()
        try:
            drawn = isinstance(fig, Figure) and any(
                ax.patches or ax.lines or ax.texts or ax.collections or ax.images for ax in fig.axes
            )
        finally:
            plt.close("all")
        if not drawn:
            problems.append(
                f"{section.slug}: glance() in {path} returned {type(fig).__name__}, not a matplotlib Figure "
                "with something drawn on it"
            )

    modules = {s.module for s in SECTIONS}
    for package in (qkv.figures, qkv.widgets):
        for info in pkgutil.iter_modules(package.__path__):
            chapter = package is qkv.figures and info.name == CHAPTER_FIGURES  # the chapter page's panels
            if not info.name.startswith("_") and info.name not in modules and not chapter:
                path = f"lib/{package.__name__.replace('.', '/')}/{info.name}.py"
                problems.append(
                    f"{path} belongs to no section: name it after a section's module ({', '.join(sorted(modules))}), "
                    "or add its section to _toc.yml"
                )
    assert not problems, "\n".join(problems)


#: MyST roles that only Sphinx resolves: in JupyterLab (jupyterlab-myst) a citation shows as its raw key with a
#: warning, and a {doc} link leads to a missing page. Not preceded by a backtick, so prose may name them as code.
SPHINX_ONLY_ROLE = re.compile(r"(?<!`)\{(cite(?::\w+)?|footcite(?::\w+)?|doc)\}`([^`]*)`")


def test_links_and_citations_work_in_the_book_and_in_jupyterlab():
    problems = []
    for name in nbs.toc_files():
        path = nbs.ROOT / f"{name}.md"
        if nbs.is_notebook_source(path):
            texts = [c.source for c in nbs.read(path).cells if c.cell_type == "markdown"]
        else:
            texts = [path.read_text(encoding="utf-8")]
        for text in texts:
            for match in SPHINX_ONLY_ROLE.finditer(text):
                role, target = match.groups()
                fix = (
                    f"link the other page's file, [its title]({target}.md), which the book turns into a link to the "
                    "page and JupyterLab opens as the notebook"
                    if role == "doc"
                    else "cite by author and year, linked to the work itself: ([Vaswani et al., 2017]"
                    "(https://arxiv.org/abs/1706.03762)); references.bib keeps the entry for book/bibliography.md"
                )
                problems.append(f"{name}.md: {match.group(0)} renders only in the book; {fix}")
    assert not problems, "\n".join(problems)
