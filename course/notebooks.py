"""Reading the course's notebooks and telling their cells apart.

The sources in ``book/`` are MyST text notebooks (jupytext ``md:myst``). A
cell's role comes from its nbgrader metadata, which sits in the code cell's
YAML block and which jupytext carries into the ``.ipynb``:

========  ====================================================  ===========
role      nbgrader metadata                                     student sees
========  ====================================================  ===========
stub      ``solution: true`` on a code cell                     a stub to fill
test      ``grade: true, solution: false`` (locked)             visible tests
answer    ``solution: true`` on a markdown cell (manual grade)  a prompt
task      ``task: true``                                        a task
locked    ``locked: true`` and nothing else                     read-only
plain     no nbgrader metadata                                  prose, demos
========  ====================================================  ===========
"""

from __future__ import annotations

import copy
import functools
import re
from pathlib import Path

import jupytext
import nbformat
import yaml

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
TOC = ROOT / "_toc.yml"

# A demo cell that calls the student's answers: not executed in the student edition of the book.
USES_ANSWERS = "uses-answers"
# A hidden cell that asserts what the prose claims (with ``remove-cell``): run whenever the book is built, left out of
# the notebooks students get (course/student_notebook.py), which hold the course and not its quality checks.
BOOK_CHECK = "book-check"


def is_book_check(cell) -> bool:
    return BOOK_CHECK in cell.get("metadata", {}).get("tags", [])


def toc_files(toc: Path = TOC) -> list[str]:
    """The files of the table of contents, in reading order (without suffix, relative to the root)."""
    data = yaml.safe_load(toc.read_text())
    files = [data["root"]]

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                files.append(entry["file"])
            walk(entry.get("sections"))
            walk(entry.get("chapters"))

    for part in data.get("parts", []):
        walk(part.get("chapters"))
    walk(data.get("chapters"))
    return files


def is_notebook_source(path: Path) -> bool:
    """A MyST text notebook carries a jupytext header with a kernelspec; a plain page does not."""
    head = path.read_text(encoding="utf-8")[:2000]
    return head.startswith("---") and "kernelspec:" in head.split("\n---", 1)[0]


def read(path: Path) -> nbformat.NotebookNode:
    """Read a MyST text notebook (or an .ipynb) into an nbformat notebook: a fresh copy each call, which the caller
    may change (parsing MyST is slow, so the parse is kept while the file's size and modification time stay)."""
    path = Path(path)
    stat = path.stat()
    return copy.deepcopy(_parsed(str(path.resolve()), stat.st_mtime_ns, stat.st_size))


@functools.lru_cache(maxsize=64)
def _parsed(path: str, mtime_ns: int, size: int) -> nbformat.NotebookNode:
    return jupytext.read(path)


def write_if_changed(nb: nbformat.NotebookNode, path: Path, fmt: str | None = None) -> bool:
    """Write ``nb`` to ``path`` in ``fmt`` only if the text differs, so unchanged files keep their
    modification time (Sphinx then rebuilds only what changed). Returns whether it wrote."""
    fmt = fmt or ("ipynb" if path.suffix == ".ipynb" else "md:myst")
    text = jupytext.writes(nb, fmt=fmt)
    return write_text_if_changed(path, text)


def write_text_if_changed(path: Path, text: str) -> bool:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    path.write_text(text, encoding="utf-8")
    return True


def nbgrader_meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def role(cell) -> str:
    """The cell's role in the course (see the module docstring), decided by nbgrader's own predicates.

    For the course's trusted notebooks only (``book/``, the release). Untrusted submissions, whose
    metadata may be malformed, are read defensively by :mod:`autograder.grading.rebuild` instead.
    """
    if "nbgrader" not in cell.get("metadata", {}):
        return "plain"
    from nbgrader import utils as nbgrader_utils  # imported on first use: importing nbgrader takes a second

    if nbgrader_utils.is_task(cell):
        return "task"
    if nbgrader_utils.is_solution(cell):
        return "stub" if cell.cell_type == "code" else "answer"
    if nbgrader_utils.is_grade(cell):
        return "test"
    if nbgrader_utils.is_locked(cell):
        return "locked"
    return "plain"


def grade_id(cell) -> str | None:
    return nbgrader_meta(cell).get("grade_id")


_STUB_RE = re.compile(
    r"^(?P<indent>[ \t]*)# YOUR CODE HERE[ \t]*\n(?P=indent)raise NotImplementedError\(\)[ \t]*$", re.M
)


def stub_regions(source: str) -> list[re.Match]:
    """The ``# YOUR CODE HERE`` / ``raise NotImplementedError()`` pairs in a stub cell's source."""
    return list(_STUB_RE.finditer(source))


def language_info() -> dict:
    """The notebook's ``language_info`` as this environment's IPython kernel (ipykernel) writes it.

    JupyterLab fills it in from the kernel when a notebook opens, so a notebook without it opens as modified.
    """
    from ipykernel.ipkernel import IPythonKernel

    return copy.deepcopy(IPythonKernel.language_info)
