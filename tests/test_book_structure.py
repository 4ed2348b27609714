"""The conventions every section notebook follows, so the assembler, nbgrader and the grader can rely on them."""

from __future__ import annotations

import re

import pytest

from autograder import assemble, mutants
from course import notebooks as nbs
from course.section import sections

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
        first = cell.source.splitlines()[0]
        assert first.startswith("# Checks: "), f"{grade}: a test cell says what it checks in its first line"
        assert first.endswith("."), f"{grade}: what the test checks is one line, a sentence ending in a full stop"
    for cell in nb.cells:
        if nbs.role(cell) == "answer":
            assert cell.source.strip() == "YOUR ANSWER HERE", (
                f"{nbs.grade_id(cell)}: an answer cell is nbgrader's prompt"
            )


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
            if not info.name.startswith("_") and info.name not in modules:
                path = f"lib/{package.__name__.replace('.', '/')}/{info.name}.py"
                problems.append(
                    f"{path} belongs to no section: name it after a section's module ({', '.join(sorted(modules))}), "
                    "or add its section to _toc.yml"
                )
    assert not problems, "\n".join(problems)
