"""Code that a page gives students to paste (a fenced ``python`` block in its prose) runs as typed.

A snippet is not executed by the book, so nothing else would notice one that fails: a name the page never
imports, an argument a function does not take. Each test runs one in the namespace a student has at that point
of the solved notebook (the cells it names, stubs answered), with models trained as smoke runs.
"""

from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")

from autograder import assemble  # noqa: E402
from course import notebooks as nbs  # noqa: E402
from course.section import section  # noqa: E402

FENCED = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def snippets(slug: str) -> list[str]:
    """The fenced ``python`` blocks of the page's markdown cells, in order."""
    cells = nbs.read(section(slug).path).cells
    return [m.group(1) for c in cells if c.cell_type == "markdown" for m in FENCED.finditer(c.source)]


def namespace(slug: str, *markers: str) -> dict:
    """The names a student has after running the solved notebook's setup cell and the code cells that contain
    each of ``markers`` (in the page's order)."""
    solved = assemble.solved(nbs.read(section(slug).path), slug)
    code = [c.source for c in solved.cells if c.cell_type == "code"]
    chosen = [code[0]] + [src for src in code[1:] if any(m in src for m in markers)]
    assert len(chosen) == len(markers) + 1, f"{slug}: the cells of {markers} are not all on the page"
    ns: dict = {"__name__": "__main__"}
    for source in chosen:
        exec(compile(source, slug, "exec"), ns)  # noqa: S102 (the course's own page)
    return ns


def test_the_bahdanau_experiment_snippet_trains_and_scores_a_dot_product_translator(capsys):
    (snippet,) = snippets("bahdanau-attention")
    ns = namespace("bahdanau-attention", "class BahdanauDecoder", 'train_d2l("bahdanau"', "pairs = [")
    exec(compile(snippet, "snippet", "exec"), ns)  # noqa: S102
    model = ns["dot"].model
    assert type(model.decoder.attention).__name__ == "DotProductAttention"
    assert type(model.decoder).__mro__[1] is ns["BahdanauDecoder"]  # the student's decoder, not the reference's
    printed = capsys.readouterr().out.splitlines()
    assert printed[-5].startswith("trained in ") and [line.split()[0] for line in printed[-4:]] == [
        "go",
        "i",
        "he's",
        "i'm",
    ]
