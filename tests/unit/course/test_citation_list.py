"""The bibliography's entries as list items (book/_ext/citation_list.py)."""

from __future__ import annotations

from tests.support import book_ext

_DOCUTILS = (
    '<div role="list" class="citation-list">\n'
    '<div class="citation" id="id16" role="doc-biblioentry">\n<span class="label">[Bah14]</span>\n</div>\n'
    '<div class="citation" id="id5" role="doc-biblioentry">\n<span class="label">[Vas17]</span>\n</div>\n'
    "</div>"
)


def test_each_citation_becomes_a_list_item_and_nothing_else_changes():
    out = book_ext.load("citation_list").list_items(_DOCUTILS)
    assert "doc-biblioentry" not in out and out.count('role="listitem"') == 2
    assert out == _DOCUTILS.replace('role="doc-biblioentry"', 'role="listitem"')


def test_the_role_is_changed_on_citations_only():
    text = '<p role="doc-biblioentry">prose quoting the markup</p>'
    assert book_ext.load("citation_list").list_items(text) == text


def test_the_page_context_body_is_rewritten_and_other_pages_are_left_alone():
    ext = book_ext.load("citation_list")
    bibliography, other = {"body": _DOCUTILS}, {"body": "<p>no citations</p>"}
    ext._rewrite(None, "book/bibliography", "page.html", bibliography, None)
    ext._rewrite(None, "book/intro", "page.html", other, None)
    assert bibliography["body"].count('role="listitem"') == 2 and other["body"] == "<p>no citations</p>"
