"""Adding a section is adding files in one pattern and one ``_toc.yml`` line (CONTRIBUTING.md).

In a copy of the repository, ``python -m course.scaffold`` writes a throwaway section (a tiny notebook with one stub,
its solution, a hidden test, two mutants and a glance figure) and one line goes into ``_toc.yml``; nothing else is
edited. Then the copy's own tools must pick the section up: its structure and grading tests (solution passes, stub
and mutants fail), the nbgrader release (equal to the book), nbval, the book, and the grader, which grades a class
of two notebooks of the new assignment.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from course.notebooks import ROOT
from publish import build_book

SLUG, MODULE = "throwaway-section", "throwaway_section"
#: The copy's test files that must each run at least one test of the new section, and pass.
TEST_FILES = (
    "tests/unit/course/test_book_structure.py",
    "tests/unit/course/test_layout.py",
    "tests/notebooks/test_grading_answers.py",
    "tests/grading/test_release.py",
    "tests/notebooks/test_notebooks_nbval.py",
)

pytestmark = pytest.mark.slow


def _run(cmd, cwd: Path, env: dict, timeout: int = 600) -> subprocess.CompletedProcess:
    result = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, (
        f"{' '.join(map(str, cmd))} failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    )
    return result


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    """A copy of the repository (what git tracks, or would) with the throwaway section added from the recipe."""
    repo = tmp_path_factory.mktemp("new-section") / "repo"
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        src = ROOT / name
        if src.is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, repo / name)
    # The student book of this checkout (built first if out of date, once for all workers), execution cache
    # included, so that the copy's build executes only the new page whatever order the tests run in.
    from tests.support import browser

    browser.built_book("student")
    built = build_book.default_out("student").relative_to(ROOT)  # _build/smoke/student in the test suite
    with browser.book_lock("student"):
        shutil.copytree(ROOT / built, repo / built, symlinks=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = f"{repo / 'lib'}{os.pathsep}{repo}"  # the copy's qkv, course, publish, autograder
    env.pop("PYTEST_XDIST_WORKER", None)
    env.pop("PYTEST_ADDOPTS", None)  # the outer run's options (a plugin, a report path) are not the copy's
    before = {p.relative_to(repo) for p in repo.rglob("*") if p.is_file() and "_build" not in p.parts}
    _run(
        [sys.executable, "-m", "course.scaffold", SLUG, "--number", "11.10", "--title", "A Throwaway Section"],
        repo,
        env,
    )
    toc = repo / "_toc.yml"
    lines = toc.read_text().splitlines()
    last = max(
        i for i, line in enumerate(lines) if line.strip().startswith("- file: book/") and "bibliography" not in line
    )
    lines.insert(last + 1, f"      - file: book/{SLUG}")
    toc.write_text("\n".join(lines) + "\n")
    # The scaffold adds the new section's own figures module to qkv (the next test checks that it adds nothing else),
    # which changes nothing the other pages show: their copied outputs are still good for the copy's qkv.
    (repo / built / build_book.OUTPUTS_STAMP).write_text(build_book.library_digest(repo) + "\n")
    after = {p.relative_to(repo) for p in repo.rglob("*") if p.is_file() and "_build" not in p.parts}
    return {"repo": repo, "env": env, "added": after - before}


def test_the_recipe_adds_only_the_sections_own_files(copy):
    added = {str(p) for p in copy["added"]}
    assert added == {
        f"book/{SLUG}.md",
        f"solutions/{MODULE}.py",
        f"autograder/sections/{MODULE}/test_square.py",
        f"autograder/sections/{MODULE}/mutants.toml",
        f"lib/qkv/figures/{MODULE}.py",
    }, added


def test_the_copys_own_tests_pick_the_section_up(copy):
    repo, report = copy["repo"], copy["repo"] / "_build" / "new-section.xml"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", SLUG, f"--junitxml={report}"]
    env = copy["env"] | {"QKV_TEST_SECTIONS": SLUG}  # the copy's fixtures (its release) build this section only
    result = subprocess.run([*cmd, *TEST_FILES], cwd=repo, env=env, capture_output=True, text=True, timeout=900)
    output = result.stdout[-3000:] + result.stderr[-3000:]
    assert report.exists(), f"the copy's pytest stopped before writing its report:\n{output}"
    cases = ET.parse(report).getroot().iter("testcase")
    outcome: dict[str, list[str]] = {f: [] for f in TEST_FILES}
    for case in cases:
        path = case.get("classname", "").replace(".", "/") + ".py"
        failed = any(child.tag in ("failure", "error") for child in case)
        skipped = any(child.tag == "skipped" for child in case)
        if path in outcome:
            outcome[path].append("failed" if failed else "skipped" if skipped else "passed")
    assert result.returncode == 0, f"the copy's tests failed for {SLUG}:\n{result.stdout[-6000:]}"
    for path, results in outcome.items():
        assert "passed" in results, f"{path} ran no test of {SLUG}: {results}"


def test_the_book_builds_the_new_page(copy):
    repo = copy["repo"]
    _run([sys.executable, "-m", "publish.build_book", "--edition", "student"], repo, copy["env"], timeout=900)
    site = repo / build_book.default_out("student").relative_to(ROOT) / "_build" / "html"  # smoke runs: _build/smoke
    page = site / "book" / f"{SLUG}.html"
    assert page.exists(), f"the book has no page {page}"
    html = page.read_text(encoding="utf-8")
    assert "A Throwaway Section" in html
    assert "<img" in html, "the glance figure was not drawn"
    index = (site / "book" / "intro.html").read_text(encoding="utf-8")
    assert f"{SLUG}.html" in index, "the table of contents does not link the new section"


def test_the_grader_grades_the_new_assignment(copy):
    repo, env = copy["repo"], copy["env"]
    _run([sys.executable, "-m", "autograder.release", "--only", SLUG, "--no-warm"], repo, env)
    release = repo / "_build" / "course" / "release" / SLUG / f"{SLUG}.ipynb"
    nb = json.loads(release.read_text())
    klass = repo / "_build" / "class"
    for student, answer in (("ann", "    return x * x\n"), ("bob", None)):
        mine = json.loads(json.dumps(nb))
        for cell in mine["cells"]:
            if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "square" and answer:
                source = "".join(cell["source"])
                cell["source"] = source.replace("    # YOUR CODE HERE\n    raise NotImplementedError()", answer)
        path = klass / student / SLUG / f"{SLUG}.ipynb"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(mine))
    out = repo / "_build" / "reports"
    cmd = [sys.executable, "-m", "autograder.grade", str(klass), "--course", str(repo / "_build" / "course")]
    _run([*cmd, "--out", str(out), "--no-feedback", "--quiet", "--jobs", "1"], repo, env)
    rows = {r["student"]: r for r in csv.DictReader((out / "grades.csv").open())}
    assert rows["ann"]["status"] == "graded" and float(rows["ann"]["score"]) == 1.0, rows["ann"]
    assert float(rows["bob"]["score"]) == 0.0, rows["bob"]
