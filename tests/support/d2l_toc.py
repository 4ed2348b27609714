"""Write ``tests/support/d2l_sections.csv``: the numbered sections of D2L 1.0.3 that the course cites.

The course names D2L sections in docstrings, comments and prose ("D2L 11.7.3", "D2L section 10.7.8"), and
``tests/unit/course/test_d2l_references.py`` checks every such number against this table. CI has no copy of D2L, so the
table is committed; this script is how it was made, and how to remake it (for another tag, or more chapters)::

    .venv/bin/python tests/support/d2l_toc.py /work/.mirror/d2l-ai+d2l-en/repo v1.0.3

The first argument is a git checkout or mirror (a bare repository is fine) of https://github.com/d2l-ai/d2l-en;
the files are read at ``tag`` with ``git show``, so the work tree, if any, does not matter. The numbering is D2L's
own, as its Sphinx build makes it:

* chapters: the order of the numbered ``toc`` block of ``index.md`` (chapter 1 ``chapter_introduction``);
* sections: the order of the ``toc`` blocks of the chapter's ``index.md`` (a chapter without one, such as the
  introduction, is one page whose ``##`` headings are its sections);
* subsections: the ``##`` headings of the section's file, in order (Summary and Exercises count, as in the
  rendered book), and their ``###`` headings one level further down (11.3.2.1 is "Masked Softmax Operation");
  lines in code blocks (a Python comment ``# ...``) are not headings.

Titles drop D2L's markup: ``## [**Decoder**]`` and ``## (**Encoder**)`` are "Decoder" and "Encoder", ``--`` is an
en dash; backquotes and ``$...$`` stay. The CSV has one row ``number,title,source`` per number, the chapter's row
first (its source is the chapter's ``index.md``). ``--chapters`` chooses the chapters; the default is the ones the
course cites (grep the repository for ``D2L``). Checked by hand against the rendered book: 10.7.8 is "Evaluation
of Predicted Sequences" (BLEU), 11.3.4 "Additive Attention", 11.7.3 "Residual Connection and Layer
Normalization".
"""

from __future__ import annotations

import argparse
import csv
import re
import subprocess
import sys
from pathlib import Path

#: The chapters the course cites (D2L 2.4 plotting, 3.2 and 3.4 training, 4.2-4.5 Fashion-MNIST and softmax,
#: 6.7 the GPU, 9.2-9.5 text and RNNs, 10.2-10.7 GRUs and seq2seq, 11 the course, 14.1 augmentation, 15.9 BERT).
CHAPTERS = (2, 3, 4, 6, 9, 10, 11, 14, 15)
OUT = Path(__file__).resolve().with_name("d2l_sections.csv")
FIELDS = ("number", "title", "source")

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^(#{1,3})\s+(.*?)\s*#*\s*$")


def show(repo: Path, tag: str, path: str) -> str:
    """The text of ``path`` at ``tag`` in the git repository ``repo``."""
    return subprocess.run(
        ["git", "-C", str(repo), "show", f"{tag}:{path}"], check=True, capture_output=True, text=True
    ).stdout


def toc_entries(text: str, numbered_only: bool = False) -> list[str]:
    """The entries of the ``toc`` blocks of a D2L index page, in order (``:numbered:`` blocks only if asked)."""
    entries, block, numbered = [], None, False
    for line in text.splitlines():
        stripped = line.strip()
        if block is None:
            if stripped.startswith("```toc"):
                block, numbered = [], False
            continue
        if stripped.startswith("```"):
            if numbered or not numbered_only:
                entries += block
            block = None
        elif stripped == ":numbered:":
            numbered = True
        elif stripped and not stripped.startswith(":"):
            block.append(stripped)
    return entries


def clean(title: str) -> str:
    """A heading's text without D2L's markup: ``[**Training**]`` -> ``Training``, ``--`` -> an en dash."""
    title = re.sub(r"\[\*\*(.*?)\*\*\]|\(\*\*(.*?)\*\*\)", lambda m: m.group(1) or m.group(2), title)
    title = title.replace("**", "").replace("--", "\u2013")
    title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", title)
    return " ".join(title.replace("[", "").replace("]", "").split())


def headings(text: str) -> list[tuple[int, str]]:
    """``(level, title)`` of each heading of a markdown page, outside code blocks."""
    found, in_code = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            in_code = not in_code
            continue
        match = None if in_code else _HEADING.match(line)
        if match:
            found.append((len(match.group(1)), clean(match.group(2))))
    return found


def numbered(prefix: str, text: str, source: str, top: int) -> tuple[str, list[tuple[str, str, str]]]:
    """The page's title (its first level-``top - 1`` heading) and a row for each heading below it, numbered
    from ``prefix``: level ``top`` headings are ``prefix.1, prefix.2, ...``, the level under them one more part."""
    title, rows, counts = "", [], [0, 0]
    for level, text_ in headings(text):
        if level == top - 1 and not title:
            title = text_
        elif level == top:
            counts = [counts[0] + 1, 0]
            rows.append((f"{prefix}.{counts[0]}", text_, source))
        elif level == top + 1 and counts[0]:
            counts[1] += 1
            rows.append((f"{prefix}.{counts[0]}.{counts[1]}", text_, source))
    return title, rows


def table(repo: Path, tag: str, chapters=CHAPTERS) -> list[tuple[str, str, str]]:
    """The rows ``(number, title, source)`` of the chosen chapters of D2L at ``tag``."""
    order = toc_entries(show(repo, tag, "index.md"), numbered_only=True)
    rows = []
    for chapter in chapters:
        folder = order[chapter - 1].rsplit("/", 1)[0]
        index = f"{folder}/index.md"
        text = show(repo, tag, index)
        sections = toc_entries(text)
        if not sections:  # a one-page chapter: its ## headings are sections
            title, below = numbered(str(chapter), text, index, top=2)
            rows += [(str(chapter), title, index), *below]
            continue
        rows.append((str(chapter), headings(text)[0][1], index))
        for number, name in enumerate(sections, start=1):
            source = f"{folder}/{name}.md"
            title, below = numbered(f"{chapter}.{number}", show(repo, tag, source), source, top=2)
            rows += [(f"{chapter}.{number}", title, source), *below]
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("repo", type=Path, help="a git checkout or mirror of d2l-ai/d2l-en")
    parser.add_argument("tag", help="the tag (or commit) to read, e.g. v1.0.3")
    parser.add_argument("--chapters", type=int, nargs="+", default=list(CHAPTERS))
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    rows = table(args.repo, args.tag, args.chapters)
    with args.out.open("w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(FIELDS)
        writer.writerows(rows)
    print(f"{args.out}: {len(rows)} rows, chapters {' '.join(map(str, args.chapters))} of D2L {args.tag}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
