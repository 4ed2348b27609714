"""The book's per-page language extension (book/_ext/page_language.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.support import book_ext


def _extension():
    return book_ext.load("page_language")


def test_only_the_listed_page_gets_its_language():
    ext = _extension()
    app = SimpleNamespace(config=SimpleNamespace(qkv_page_languages={"book/chapter-at-a-glance-zh": "zh-Hans"}))
    zh, en = {"language": "en"}, {"language": "en"}
    ext._set_language(app, "book/chapter-at-a-glance-zh", "page.html", zh, None)
    ext._set_language(app, "book/chapter-at-a-glance", "page.html", en, None)
    assert zh["language"] == "zh-Hans" and en["language"] == "en"


@pytest.mark.parametrize("tag", ["zh-Hans", "en", "pt-BR", "yue"])
def test_language_tags_are_accepted(tag):
    _extension()._check(None, SimpleNamespace(qkv_page_languages={"book/page": tag}))


@pytest.mark.parametrize("tag", ["Chinese", "zh_Hans", "", 7, "zh-"])
def test_a_bad_tag_stops_the_build_naming_the_page(tag):
    with pytest.raises(ValueError, match=r"book/page.*BCP 47"):
        _extension()._check(None, SimpleNamespace(qkv_page_languages={"book/page": tag}))
