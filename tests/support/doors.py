"""The notebook of a section as a student gets it through each door, for the grading tests (issue 37).

Every door gives :func:`course.student_notebook.student_notebook`'s notebook, and the grader must take each as it
comes back: nbgrader's release, the book's download button, Colab's notebook (``make notebooks``), a jupytext
conversion of the page (which the README offers for reading), and a Colab notebook as Colab saves it back (its own
top-level and cell metadata, no cell ids, sources as lists of lines, outputs with execution counts).
"""

from __future__ import annotations

import copy
import json
import random
import string
import tempfile
from pathlib import Path

import jupytext
import nbformat

from course.section import Section
from publish import build_book, colab
from tests.support import corpus

DOORS = ("release", "book_download", "colab", "jupytext", "colab_saved")


def _book_download(section: Section) -> nbformat.NotebookNode:
    """What the page's download button serves: :func:`publish.build_book.write_downloads` over the theme's copy."""
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "_sources" / section.path.relative_to(build_book.ROOT).with_suffix(".ipynb")
        target.parent.mkdir(parents=True)
        target.write_text("{}")  # the executed copy sphinx-book-theme puts there
        (written,) = build_book.write_downloads(Path(tmp))
        return nbformat.read(written, as_version=4)


def _jupytext(section: Section) -> nbformat.NotebookNode:
    """``jupytext --to ipynb book/<slug>.md``, as a student who opens the page as a notebook saves it."""
    text = jupytext.writes(jupytext.read(section.path), fmt="ipynb")
    return nbformat.reads(text, as_version=4)


def colab_saved(nb: nbformat.NotebookNode, seed: int = 0) -> nbformat.NotebookNode:
    """``nb`` as Colab writes it back (File > Download .ipynb): nbformat 4.0 without cell ids, Colab's
    kernelspec and language_info, its ``colab`` and ``accelerator`` metadata, a Colab id in every cell's metadata,
    no ``editable``/``deletable`` (Colab does not lock cells), sources as lists of lines, code cells run."""
    rng = random.Random(seed)
    data = json.loads(nbformat.writes(nb))
    data["nbformat"], data["nbformat_minor"] = 4, 0
    data["metadata"] = {
        "colab": {"provenance": [], "name": data["metadata"].get("colab", {}).get("name", "nb.ipynb")},
        "kernelspec": {"name": "python3", "display_name": "Python 3"},
        "language_info": {"name": "python"},
        "accelerator": "GPU",
    }
    for i, cell in enumerate(data["cells"]):
        cell.pop("id", None)
        meta = cell["metadata"]
        meta.pop("editable", None)
        meta.pop("deletable", None)
        meta["id"] = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(12))
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        cell["source"] = source.splitlines(keepends=True)
        if cell["cell_type"] == "code":
            meta["colab"] = {"base_uri": "https://localhost:8080/"}
            meta["outputId"] = f"{rng.getrandbits(64):016x}"
            cell["execution_count"] = i + 1
            cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["ran on Colab\n"]}]
    return nbformat.reads(json.dumps(data), as_version=4)


def notebook(door: str, section: Section, release_path: Path) -> nbformat.NotebookNode:
    """``section``'s notebook as ``door`` gives it to a student, unanswered."""
    if door == "release":
        return nbformat.read(release_path, as_version=4)
    if door == "book_download":
        return _book_download(section)
    if door == "jupytext":
        return _jupytext(section)
    url, branch, _ = colab.repository()
    made = colab.colab_notebook(section, url, branch)
    if door == "colab":
        return nbformat.reads(nbformat.writes(made), as_version=4)
    if door == "colab_saved":
        return colab_saved(made)
    raise ValueError(f"unknown door {door!r}: one of {', '.join(DOORS)}")


def solved(door: str, section: Section, release_path: Path) -> nbformat.NotebookNode:
    """The door's notebook with every stub answered by the reference and every written answer filled in, the way
    a student answers: only the answer cells' sources change."""
    return corpus.answered(notebook(door, section, release_path), section.slug)


def edited(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """``nb`` with its first visible test replaced by ``pass``: tampering, from whatever door."""
    from course import notebooks as nbs

    out = copy.deepcopy(nb)
    test = next(c for c in out.cells if nbs.role(c) == "test")
    test.source = "pass"
    return out


def grade_every_door(out: Path, slugs=None, jobs: int = 2) -> list[dict]:
    """Grade, with ``make grade``'s command, a correct notebook of each section (``slugs``: every section) from every
    door, in a course built for them under ``out``; return the rows of ``grades.csv``."""
    import csv
    import shutil

    from autograder.grading import cli
    from course.section import sections

    chosen = [s for s in sections() if slugs is None or s.slug in slugs]
    course_dir, class_dir = out / "course", out / "class"
    shutil.copytree(corpus.course_template(tuple(s.slug for s in chosen)), course_dir)
    for section in chosen:
        path = course_dir / "release" / section.assignment / f"{section.slug}.ipynb"
        for door in DOORS:
            folder = class_dir / door / section.assignment
            folder.mkdir(parents=True, exist_ok=True)
            nbformat.write(solved(door, section, path), str(folder / f"{section.slug}.ipynb"))
    args = [str(class_dir), "--course", str(course_dir), "--jobs", str(jobs), "--out", str(out / "out")]
    if cli.main([*args, "--quiet", "--no-feedback", "--no-similarity"]) != 0:
        raise SystemExit("make grade's command failed; see above")
    with open(out / "out" / "grades.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def main(argv=None) -> None:
    """``python -m tests.support.doors [OUT]``: the doors table of issue 37 for every section, as markdown."""
    import sys

    argv = sys.argv[1:] if argv is None else argv
    out = Path(argv[0] if argv else tempfile.mkdtemp(prefix="doors-"))
    rows = grade_every_door(out)
    by = {(r["assignment"], r["student"]): r for r in rows}
    print("| section | " + " | ".join(DOORS) + " |")
    print("|---|" + "---:|" * len(DOORS))
    for slug in dict.fromkeys(r["assignment"] for r in rows):
        release = nbformat.read(out / "course" / "release" / slug / f"{slug}.ipynb", as_version=4)
        auto = sum(corpus.points_of_tests(release).values())  # the written answers wait for a person
        cells = []
        for door in DOORS:
            r = by[slug, door]
            full = r["status"] == "graded" and not r["reason"] and float(r["score"]) == auto
            verdict = "full marks" if full else f"{r['status']}: {r['reason']}"
            cells.append(f"{float(r['score']):g}/{auto:g} {verdict}")
        print(f"| {slug} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
