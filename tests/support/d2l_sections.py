"""D2L 1.0.3's numbered sections, as the committed table ``tests/support/d2l_sections.csv`` lists them.

``tests/support/d2l_toc.py`` writes the table from d2l-en's sources; ``tests/unit/course/test_d2l_references.py`` checks
every D2L section number the course writes against it. ``load()`` gives ``{number: Entry}`` in D2L's order::

    >>> from tests.support import d2l_sections
    >>> d2l_sections.load()["10.7.8"].title
    'Evaluation of Predicted Sequences'
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from pathlib import Path

TABLE = Path(__file__).resolve().with_name("d2l_sections.csv")


@dataclass(frozen=True)
class Entry:
    """One numbered chapter, section or subsection of D2L: ``11.7.3``, its title and the file that holds it."""

    number: str
    title: str
    source: str

    @property
    def parent(self) -> str:
        """The number one level up (``11.7`` for ``11.7.3``; ``""`` for a chapter)."""
        return self.number.rpartition(".")[0]

    def __str__(self) -> str:
        return f"{self.number} {self.title}"


@functools.cache
def load(path: Path = TABLE) -> dict[str, Entry]:
    """``{number: Entry}`` of every row of the table, in the table's (D2L's) order."""
    with Path(path).open(encoding="utf-8", newline="") as f:
        return {row["number"]: Entry(row["number"], row["title"], row["source"]) for row in csv.DictReader(f)}


def nearest(number: str, table: dict[str, Entry] | None = None) -> list[Entry]:
    """The entries a wrong ``number`` was most likely meant to be: the deepest existing entry above it (``11.7``
    for ``11.7.12``) and that entry's children; for an unknown chapter, the chapters."""
    table = load() if table is None else table
    parts = number.split(".")
    for depth in range(len(parts) - 1, 0, -1):
        parent = ".".join(parts[:depth])
        if parent in table:
            return [table[parent], *(e for e in table.values() if e.parent == parent)]
    return [e for e in table.values() if not e.parent]
