"""Sphinx extension: the bibliography's entries are items of its list, for screen readers too.

Docutils writes a page's citations as ``<div role="list" class="citation-list">`` holding one
``<div class="citation" role="doc-biblioentry">`` per entry. DPUB-ARIA 1.1 deprecated ``doc-biblioentry`` because it
is not a list item: a list whose children are all ``doc-biblioentry`` has no items, and axe-core reports the
bibliography page's list as a critical violation (aria-required-children) and each entry as a deprecated role
(https://www.w3.org/TR/dpub-aria-1.1/#doc-biblioentry says to use ``listitem`` instead). This extension gives each
entry the role ``listitem`` in the written page, the markup that specification recommends; nothing else changes.
"""

from __future__ import annotations

import re

#: A citation's opening tag as docutils writes it (``<div class="citation" id="id3" role="doc-biblioentry">``).
_ENTRY = re.compile(r'(<div class="citation"[^>]*?\brole=")doc-biblioentry(")')


def list_items(body: str) -> str:
    """``body`` with each citation's deprecated ``doc-biblioentry`` role replaced by ``listitem``."""
    return _ENTRY.sub(r"\1listitem\2", body)


def _rewrite(app, pagename, templatename, context, doctree) -> None:
    body = context.get("body")
    if isinstance(body, str) and "doc-biblioentry" in body:
        context["body"] = list_items(body)


def setup(app):
    # Returns nothing, so the theme's own html-page-context handlers still run (see page_language.py).
    app.connect("html-page-context", _rewrite, priority=1)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
