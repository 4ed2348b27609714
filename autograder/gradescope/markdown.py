"""The Markdown of ``results.json``: Gradescope renders every output string of our results as Markdown (they
declare ``"md"``, :data:`FORMAT`), so plain text is escaped and whatever a notebook printed goes in a code block.

Gradescope's formats for an output string (its autograder specification, "Output String Formatting"): ``text``
(plain, the default for a test's output and name), ``simple_format`` (HTML with line breaks, the default for the
submission's output), ``html``, ``md`` and ``ansi``. A notebook's output is the student's text, so it is never
rendered: in a fenced code block its ``<script>``, ``**`` or ``# heading`` is shown as written.
"""

from __future__ import annotations

import re

#: Gradescope's values for ``output_format``, ``test_output_format``, ``test_name_format`` and a test's
#: ``output_format`` and ``name_format``.
FORMATS = ("text", "html", "simple_format", "md", "ansi")
#: The format our results declare for every output.
FORMAT = "md"

#: Characters that mean something to Markdown anywhere in a line (HTML's ``<`` and ``&`` included).
_INLINE = re.compile(r"([\\`*_\[\]<>{}|~&#!])")
#: What makes a line a list item or a rule when it starts the line (``#`` and ``>`` are escaped everywhere).
_BULLET = re.compile(r"^(\s*)([-+=])", re.MULTILINE)
_NUMBERED = re.compile(r"^(\s*\d+)([.)])", re.MULTILINE)


class Markdown(str):
    """Text that is Markdown already (a ``str`` otherwise): where plain text and Markdown meet, this one is shown as
    it is."""


def escape(text: str) -> str:
    """``text`` as Markdown that shows it as written: no emphasis, link, heading, list or HTML made of it. Its
    lines stay lines (each ends with a hard break)."""
    escaped = _INLINE.sub(r"\\\1", text)
    escaped = _NUMBERED.sub(r"\1\\\2", _BULLET.sub(r"\1\\\2", escaped))
    return "  \n".join(escaped.splitlines()) if "\n" in escaped else escaped


def code_block(text: str) -> str:
    """``text`` in a fenced code block, whose fence is longer than any run of backticks in it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text.rstrip()}\n{fence}"


def paragraphs(*parts: str) -> str:
    """Markdown paragraphs from ``parts`` (already Markdown), the empty ones left out."""
    return "\n\n".join(part for part in parts if part)
