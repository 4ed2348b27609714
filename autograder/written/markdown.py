"""A student's written answer, Markdown that may hold TeX math, as HTML that cannot run or fetch anything.

Answers are untrusted text: a student may write ``<script>``, an ``<img>`` that calls a server when a grader opens
the page, or a ``javascript:`` link. So the parser is markdown-it's CommonMark with raw HTML off (every ``<`` is
text), tables and strike-through on, and math with ``$...$`` and ``$$...$$`` (mdit-py-plugins' dollarmath, as
Jupyter reads a notebook's Markdown). What it writes:

* raw HTML: escaped text (markdown-it's ``html: False``);
* a link: only to ``http``, ``https`` or ``mailto`` (:func:`safe_link`); any other stays its Markdown source, as text;
* an image: never loaded; ``[image: ALT]`` as text (an image could call a server, or, in the PDF, read a local file);
* math: its TeX, escaped. For the web page (:func:`to_html`) inside ``\\(...\\)`` or ``\\[...\\]`` in a ``math``
  element, which the page's MathJax typesets (and only there); for the PDF (:func:`to_pdf_html`) as the TeX itself
  between its dollars, in a monospaced font: fpdf2 cannot typeset TeX, and a grader reads TeX.
"""

from __future__ import annotations

import functools
import html

from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin

#: Links a grader may follow; anything else (``javascript:``, ``data:``, ``file:``, a relative path) stays text.
LINK_SCHEMES = ("http://", "https://", "mailto:")
#: The most characters of one answer shown; the rest is cut, and the cut says how much (a pasted log or notebook
#: would otherwise make a page nobody can grade, and a PDF that takes minutes).
MAX_CHARS = 20_000
#: The font fpdf2 uses for TeX and code (:mod:`autograder.written.pdf` registers it).
PDF_MONO = "mono"
PDF_MATH_COLOUR = "#1f4e79"


def safe_link(url: str) -> bool:
    """Whether a link may be a link: an absolute ``http(s)`` or ``mailto`` address."""
    return url.strip().lower().startswith(LINK_SCHEMES)


def _image_as_text(self, tokens, idx, options, env) -> str:
    alt = self.renderInlineAsText(tokens[idx].children or [], options, env).strip()
    return html.escape(f"[image: {alt}]" if alt else "[image]")


def _web_math(tex: str, display: bool, block: bool) -> str:
    tex = html.escape(tex.strip())
    math = f"\\[{tex}\\]" if display else f"\\({tex}\\)"
    return f'<div class="math">{math}</div>\n' if block else f'<span class="math">{math}</span>'


def _pdf_math(tex: str, display: bool, block: bool) -> str:
    dollars = "$$" if display else "$"
    text = f'<font face="{PDF_MONO}" color="{PDF_MATH_COLOUR}">{dollars}{html.escape(tex.strip())}{dollars}</font>'
    return f"<p>{text}</p>\n" if block else text


def _math_rule(math, display: bool, block: bool):
    """A markdown-it render rule (a method of the renderer) that writes a math token with ``math``."""

    def rule(self, tokens, idx, options, env) -> str:
        return math(tokens[idx].content, display, block)

    return rule


#: dollarmath's tokens: whether each is displayed math (``$$``), and whether it is a block of its own.
_MATH_TOKENS = {
    "math_inline": (False, False),
    "math_inline_double": (True, False),
    "math_block": (True, True),
    "math_block_label": (True, True),
}


def _parser(pdf: bool) -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.use(dollarmath_plugin, double_inline=True)
    md.validateLink = safe_link
    md.add_render_rule("image", _image_as_text)
    for token, (display, block) in _MATH_TOKENS.items():
        md.add_render_rule(token, _math_rule(_pdf_math if pdf else _web_math, display, block))
    return md


@functools.cache
def _md(pdf: bool) -> MarkdownIt:
    return _parser(pdf)


def clipped(text: str) -> str:
    """``text`` cut to :data:`MAX_CHARS`, with a last line saying how much was left out."""
    if len(text) <= MAX_CHARS:
        return text
    return f"{text[:MAX_CHARS]}\n\n*[cut: {len(text) - MAX_CHARS:,} more characters, in the graded notebook]*"


def to_html(text: str) -> str:
    """The answer as safe HTML for the web page (math for MathJax; see the module docstring)."""
    return _md(False).render(clipped(text))


#: fpdf2 sets a paragraph's lines one font size apart unless its tag says otherwise: a little more reads better.
LINE_HEIGHT = 1.3
_PDF_SPACING = {f"<{tag}>": f'<{tag} line-height="{LINE_HEIGHT}">' for tag in ("p", "ul", "ol")}


def _spaced(html_text: str) -> str:
    # Only tags the renderer wrote have a literal "<": a student's text is escaped.
    for tag, spaced in _PDF_SPACING.items():
        html_text = html_text.replace(tag, spaced)
    return html_text


def to_pdf_html(text: str) -> str:
    """The answer as the HTML that fpdf2's ``write_html`` draws (TeX as text; see the module docstring)."""
    return _spaced(_md(True).render(clipped(text)))
