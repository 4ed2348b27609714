"""The solutions edition of the book (``make book EDITION=solutions``): every stub answered from ``solutions/``,
each written question followed by its model answer and rubric, every cell executed.

It is built here, on the instructors' side, by :func:`publish.build_book.build` with :func:`solved_page` as its
transform: ``publish/`` ships in the public tree and never imports the grader.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import nbformat

from autograder import assemble
from course.section import Section
from publish import build_book

EDITION = "solutions"


def solved_page(nb: nbformat.NotebookNode, section: Section) -> nbformat.NotebookNode:
    """A graded page of the solutions edition: stubs filled, model answers shown, and no cell allowed to fail."""
    nb = assemble.solved(nb, section, model_answers=True)
    for cell in nb.cells:
        # Students' Run All goes past a failing test (raises-exception); with every stub answered, a failing test is
        # a bug of the course, and must stop this edition's build.
        tags = cell.metadata.get("tags", [])
        if build_book.RAISES in tags:
            cell.metadata["tags"] = [t for t in tags if t != build_book.RAISES]
    return nb


def stage(dest: Path) -> list[Path]:
    """Write the solutions edition's sources under ``dest`` (:func:`publish.build_book.stage`)."""
    return build_book.stage(EDITION, dest, solved_page)


def build(strict: bool = False, out: Path | None = None, quiet: bool = False) -> Path:
    """Build the solutions edition (:func:`publish.build_book.build`); returns the folder of the HTML site."""
    return build_book.build(EDITION, strict=strict, out=out, quiet=quiet, transform=solved_page)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strict", action="store_true", help="turn Sphinx warnings into errors")
    build(strict=parser.parse_args(argv).strict)


if __name__ == "__main__":
    main()
