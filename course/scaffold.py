"""Start a new section from the recipe: ``python -m course.scaffold SLUG --number 11.4 --title "Bahdanau Attention"``.

Writes the files a section needs, each where :class:`course.section.Section` says
it belongs, from the templates in ``course/template/``: the student text with one
stub and its visible test, the solution, a hidden test, two mutants and the glance
figure. The result passes the structure tests, the grading tests, the release and
nbval as it stands; then replace the example exercise with the section's own.
It never overwrites a file, and it prints the one ``_toc.yml`` line to add
(``CONTRIBUTING.md`` is the whole recipe).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from string import Template

from course.section import ROOT, Section

TEMPLATES = Path(__file__).resolve().parent / "template"
SLUG = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


def planned(sec: Section) -> dict[Path, str]:
    """Each file the new section needs, with the template it comes from."""
    return {
        sec.path: "book.md",
        sec.solutions: "solutions.py",
        sec.hidden_test("test_square"): "hidden_test.py",
        sec.mutants: "mutants.toml",
        sec.figures_path: "figures.py",
    }


def scaffold(slug: str, number: str, title: str, root: Path = ROOT) -> list[Path]:
    """Write the new section's files under ``root``; return their paths. Refuses to overwrite anything."""
    if not SLUG.match(slug):
        raise ValueError(
            f"slug {slug!r} must be lowercase words joined by hyphens (e.g. 'bahdanau-attention'): "
            "it names the notebook, the nbgrader assignment and, with '_' for '-', the Python modules"
        )
    if not re.fullmatch(r"\d+(\.\d+)*", number):
        raise ValueError(f"number {number!r} must be the D2L section number, such as 11.4")
    sec = Section(slug, root)
    files = planned(sec)
    existing = [p for p in files if p.exists()]
    if existing:
        raise FileExistsError(
            "these files exist already, so nothing was written: "
            + ", ".join(str(p.relative_to(root)) for p in existing)
        )
    values = {"slug": slug, "module": sec.module, "number": number, "title": title}
    for path, template in files.items():
        text = Template((TEMPLATES / template).read_text(encoding="utf-8")).substitute(values)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return list(files)


def toc_line(slug: str) -> str:
    """The ``_toc.yml`` entry of the section, to put in chapter order."""
    return f"      - file: book/{slug}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course.scaffold", description=__doc__.splitlines()[0])
    parser.add_argument("slug", help="the section's name in every folder, e.g. bahdanau-attention")
    parser.add_argument("--number", required=True, help="the D2L section number, e.g. 11.4")
    parser.add_argument("--title", required=True, help="the section's title, e.g. 'Bahdanau Attention'")
    args = parser.parse_args(argv)
    try:
        paths = scaffold(args.slug, args.number, args.title)
    except (ValueError, FileExistsError) as err:
        print(f"scaffold: {err}", file=sys.stderr)
        return 2
    for path in paths:
        print(f"wrote {path.relative_to(ROOT)}")
    print(f"\nNow add this line to _toc.yml, in chapter order:\n{toc_line(args.slug)}")
    print("then check the section: .venv/bin/python -m pytest -q -k " + args.slug + " (see CONTRIBUTING.md)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
