"""Notebook cells for the grading tests: a code or markdown cell with the given nbgrader metadata."""

from __future__ import annotations

import nbformat


def cell(kind: str, source: str, **nbgrader):
    """A ``kind`` ("code" or "markdown") cell holding ``source``, with ``nbgrader`` as its nbgrader metadata (none
    when empty)."""
    new = nbformat.v4.new_code_cell if kind == "code" else nbformat.v4.new_markdown_cell
    return new(source, metadata={"nbgrader": nbgrader} if nbgrader else {})
