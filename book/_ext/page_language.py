"""Sphinx extension: a page written in another language says so in its ``<html lang>``.

Sphinx has one ``language`` for the whole book (English here), and every page's ``<html lang="en">`` comes from it.
The chapter-at-a-glance page in Chinese is not English: a screen reader would read it with English rules, and a
browser would choose Han glyph forms without knowing that they are Simplified Chinese. ``qkv_page_languages``
(``_config.yml``) maps a page's name (``book/chapter-at-a-glance-zh``) to its BCP 47 language tag (``zh-Hans``);
this extension sets that page's ``language`` in the template context, which the theme writes into ``<html lang>``.
"""

from __future__ import annotations

import re

_TAG = re.compile(r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$")


def _set_language(app, pagename, templatename, context, doctree) -> None:
    tag = app.config.qkv_page_languages.get(pagename)
    if tag is not None:
        context["language"] = tag


def _check(app, config) -> None:
    for page, tag in config.qkv_page_languages.items():
        if not isinstance(tag, str) or not _TAG.match(tag):
            raise ValueError(
                f"qkv_page_languages[{page!r}] = {tag!r} is not a language tag; use a BCP 47 tag such as 'zh-Hans'"
            )


def setup(app):
    app.add_config_value("qkv_page_languages", {}, "html")
    app.connect("config-inited", _check)
    # Sphinx stops calling html-page-context handlers at the first that returns a value (a template name), and
    # some themes' handlers do; this one returns nothing and runs first.
    app.connect("html-page-context", _set_language, priority=1)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
