"""A section of the course, and every path that belongs to it.

A section is one name in every folder (``docs/design.md``, "A section is one name
in every folder"). Its slug names the book's notebook and the nbgrader
assignment; its module name (the slug with ``_`` for ``-``) names its Python
files and folders. :class:`Section` derives every path from those two names, and
no other code rebuilds a path rule:

==================  ===============================================  =========
what                where                                            public
==================  ===============================================  =========
student text        ``book/<slug>.md``                               yes
glance figure etc.  ``lib/qkv/figures/<module>.py``                  yes
widgets             ``lib/qkv/widgets/<module>.py`` (if any)         yes
answers             ``solutions/<module>.py``                        no
hidden tests        ``autograder/sections/<module>/test_<gid>.py``   no
shared helpers      ``autograder/sections/<module>/_common.py``      no
course's probes     ``autograder/sections/_shared.py`` (all)         no
mutants             ``autograder/sections/<module>/mutants.toml``    no
variants            ``autograder/sections/<module>/variants.toml``   no
rubrics             ``autograder/sections/<module>/rubric.toml``     no
grading limits      the notebook's front matter, ``grading:``        yes
trained models      the notebook's front matter, ``trains:``         yes
==================  ===============================================  =========

Adding a section is adding files in this pattern and one ``_toc.yml`` line;
``tests/unit/course/test_book_structure.py`` says what a section lacks.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from course import notebooks as nbs

ROOT = nbs.ROOT


@dataclass(frozen=True)
class Section:
    """One graded section notebook. ``root`` is the repository (a temporary copy in some tests)."""

    slug: str
    root: Path = ROOT

    # ---------------------------------------------------------------- names
    @property
    def module(self) -> str:
        """The slug as a Python name: ``attention-scoring-functions`` -> ``attention_scoring_functions``."""
        return self.slug.replace("-", "_")

    @property
    def assignment(self) -> str:
        """The nbgrader assignment (and notebook) name: the slug."""
        return self.slug

    # ---------------------------------------------------------------- public files
    @property
    def path(self) -> Path:
        """The student text, a MyST text notebook."""
        return self.root / "book" / f"{self.slug}.md"

    @property
    def figures_module(self) -> str:
        """The module of the section's figures (its ``glance()`` opens the section)."""
        return f"qkv.figures.{self.module}"

    @property
    def figures_path(self) -> Path:
        return self.root / "lib" / "qkv" / "figures" / f"{self.module}.py"

    @property
    def widgets_module(self) -> str:
        """The module of the section's interactive explorers (optional: not every section has one)."""
        return f"qkv.widgets.{self.module}"

    @property
    def widgets_path(self) -> Path:
        return self.root / "lib" / "qkv" / "widgets" / f"{self.module}.py"

    # ---------------------------------------------------------------- instructors' files
    @property
    def solutions(self) -> Path:
        """The answers to every stub, by grade_id (``autograder.assemble`` reads them)."""
        return self.root / "solutions" / f"{self.module}.py"

    @property
    def grading_dir(self) -> Path:
        """The section's folder under ``autograder/sections``: hidden tests, mutants, rubrics."""
        return self.root / "autograder" / "sections" / self.module

    @property
    def shared_helpers(self) -> Path:
        """The course's probes that any section's hidden tests may import (``from _shared import ...``), beside the
        sections' folders: one file for the whole course."""
        return self.grading_dir.parent / "_shared.py"

    def hidden_test(self, grade_id: str) -> Path:
        """The hidden tests of test cell ``grade_id``."""
        return self.grading_dir / f"{grade_id}.py"

    def hidden_tests(self) -> dict[str, Path]:
        """Every hidden-test file, by the grade_id of its test cell."""
        return {p.stem: p for p in sorted(self.grading_dir.glob("test_*.py"))}

    @property
    def hidden_common(self) -> Path:
        """Reference helpers that several hidden tests of the section share (optional)."""
        return self.grading_dir / "_common.py"

    @property
    def mutants(self) -> Path:
        """Known-wrong answers, as named edits of the solutions (``autograder.mutants``)."""
        return self.grading_dir / "mutants.toml"

    @property
    def variants(self) -> Path:
        """Known-right answers written differently from the solutions, as named edits (``autograder.mutants``)."""
        return self.grading_dir / "variants.toml"

    @property
    def rubric(self) -> Path:
        """Model answers and rubrics of the written questions."""
        return self.grading_dir / "rubric.toml"

    # ---------------------------------------------------------------- the notebook
    def read(self):
        """The section's notebook, read with jupytext."""
        return nbs.read(self.path)

    @property
    def trains(self) -> tuple[str, ...]:
        """The recipes of the models the section's notebook shows, ``"module:function"`` each (callable without
        arguments), from the front matter's ``trains:`` list: what ``make release`` trains before the grader (which
        never trains) runs, what a cold ``make book`` trains before the pages, and what a Gradescope zip carries."""
        return training_recipes(self.read().metadata)

    @property
    def limits(self) -> dict:
        """What grading one submission may use, from the front matter's ``grading:`` block
        (``deadline_s``, ``memory_gib``); empty where the section keeps the grader's defaults."""
        return grading_limits(self.read().metadata)


def training_recipes(metadata) -> tuple[str, ...]:
    """The ``trains:`` list of a notebook's metadata, checked: ``"module:function"`` strings."""
    recipes = metadata.get("trains") or []
    if not isinstance(recipes, list) or not all(
        isinstance(r, str) and r.count(":") == 1 and all(r.split(":")) for r in recipes
    ):
        raise ValueError(f"the front matter's trains: must be a list of 'module:function' strings, not {recipes!r}")
    return tuple(recipes)


#: The keys a notebook's ``grading:`` front matter may set, with what they mean.
LIMIT_KEYS = {
    "deadline_s": "wall-clock seconds for the whole notebook",
    "memory_gib": "GiB of address space",
}


def grading_limits(metadata) -> dict:
    """The ``grading:`` block of a notebook's metadata, checked: only known keys, positive numbers."""
    block = metadata.get("grading") or {}
    if not isinstance(block, dict):
        raise ValueError(f"the front matter's grading: must be a mapping of {', '.join(LIMIT_KEYS)}, not {block!r}")
    unknown = sorted(set(block) - set(LIMIT_KEYS))
    if unknown:
        raise ValueError(f"unknown key(s) {unknown} in the front matter's grading:; known: {', '.join(LIMIT_KEYS)}")
    for key, value in block.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise ValueError(f"grading: {key} must be a positive number ({LIMIT_KEYS[key]}), not {value!r}")
    return dict(block)


#: Pages of the chapter that are not sections: notebooks without exercises, no nbgrader assignment and no files
#: named after them; their figures are the package ``qkv.figures.<CHAPTER_FIGURES>``, one module per panel.
CHAPTER_PAGES = ("chapter-at-a-glance", "chapter-at-a-glance-zh")
CHAPTER_FIGURES = "chapter"


def sections(root: Path = ROOT) -> list[Section]:
    """The graded section notebooks, in the order of ``_toc.yml``: pages that are notebooks with nbgrader cells
    (never the :data:`CHAPTER_PAGES`)."""
    out = []
    for name in nbs.toc_files(root / "_toc.yml"):
        path = root / f"{name}.md"
        if Path(name).name in CHAPTER_PAGES:
            continue
        if path.exists() and nbs.is_notebook_source(path) and any(nbs.role(c) != "plain" for c in nbs.read(path).cells):
            out.append(Section(slug=Path(name).name, root=root))
    return out


@functools.cache
def _by_slug(root: Path) -> dict[str, Section]:
    return {s.slug: s for s in sections(root)}


def section(slug: str, root: Path = ROOT) -> Section:
    """The section called ``slug``; a clear error names the sections there are."""
    found = _by_slug(root).get(slug)
    if found is None:
        known = ", ".join(_by_slug(root)) or "none"
        raise KeyError(f"no section {slug!r} in {root / '_toc.yml'}; the sections are: {known}")
    return found
