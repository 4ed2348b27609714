"""The chapter at a glance as a reader sees it: the Chinese page set in a CJK font, both pages linking each other
and the poster, ten figures on each; screenshots of the two pages and the poster for review.

Reads the student edition that ``tests/test_book_browser.py`` builds (its fixtures), in the same Chromium. The font
check asks Chromium itself (DevTools' ``CSS.getPlatformFontsForNode``) which fonts it drew a node's text with:
Chinese text drawn in a font without those characters would show as boxes.
"""

from __future__ import annotations

import re
import urllib.request

import pytest

from course import notebooks as nbs
from tests import test_book_browser as book_browser

pytestmark = pytest.mark.browser
# The student edition, Chromium and the reader of tests/test_book_browser.py, shared with it.
student_html, chromium, reader = book_browser.student_html, book_browser.chromium, book_browser.reader

EN, ZH = "book/chapter-at-a-glance.html", "book/chapter-at-a-glance-zh.html"
SHOTS = nbs.ROOT / "_build" / "screenshots" / "chapter-at-a-glance"
CJK = re.compile(r"[\u4e00-\u9fff]")

# Marks the first element of the article matching a selector whose text holds Chinese characters, for DevTools.
_MARK_JS = """(selector) => {
  const el = [...document.querySelectorAll(selector)].find(e => /[\\u4e00-\\u9fff]/.test(e.textContent));
  if (!el) return null;
  el.setAttribute('data-font-probe', selector);
  return el.textContent.trim();
}"""
_PAGE_JS = """() => {
  const article = document.querySelector('article.bd-article') || document.body;
  return {
    images: [...article.querySelectorAll('img')].map(i => ({src: i.getAttribute('src'), alt: i.alt,
                                                            width: i.naturalWidth})),
    links: [...article.querySelectorAll('a[href]')].map(a => a.href),
  };
}"""


def _fonts_used(page, selector: str) -> tuple[str, list[dict]]:
    """The text of the first ``selector`` element holding Chinese, and the fonts Chromium drew it with."""
    text = page.evaluate(_MARK_JS, selector)
    assert text, f"no {selector} with Chinese text on {page.url}"
    cdp = page.context.new_cdp_session(page)
    cdp.send("DOM.enable")
    cdp.send("CSS.enable")
    root = cdp.send("DOM.getDocument", {"depth": -1})["root"]["nodeId"]
    node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": f'[data-font-probe="{selector}"]'})["nodeId"]
    return text, cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]


@pytest.fixture(scope="module")
def shots():
    SHOTS.mkdir(parents=True, exist_ok=True)
    return SHOTS


def test_chinese_page_is_set_in_a_cjk_font_and_links_back(reader, shots):
    page, visit = reader.open(ZH)
    try:
        assert not visit.problems(), visit.problems()
        # The title, the prose and a printed output (the figures' labels: tests/test_chapter_glance.py).
        for selector in ("h1", "article p", ".cell_output pre"):
            text, fonts = _fonts_used(page, selector)
            cjk = [f for f in fonts if "CJK" in f["familyName"]]
            assert cjk, f"{selector} {text[:40]!r} was drawn with {fonts}, none a CJK font"
            assert sum(f["glyphCount"] for f in cjk) >= len(CJK.findall(text)), (selector, fonts)
        info = page.evaluate(_PAGE_JS)
        images = info["images"]
        assert len(images) == 10 and all(i["width"] > 0 for i in images), images
        assert all(CJK.search(i["alt"] or "") for i in images), "alt texts in Chinese"
        assert any(link.endswith("/book/chapter-at-a-glance.html") for link in info["links"])
        page.screenshot(path=str(shots / "zh.png"), full_page=True)
        page.click("article a[href$='chapter-at-a-glance.html']")
        page.wait_for_url(reader.url(EN))
    finally:
        page.context.close()


def test_english_page_links_the_chinese_page_and_the_poster(reader, shots):
    page, visit = reader.open(EN)
    try:
        assert not visit.problems(), visit.problems()
        info = page.evaluate(_PAGE_JS)
        assert len(info["images"]) == 10 and all(i["width"] > 0 for i in info["images"])
        assert any(link.endswith("/book/chapter-at-a-glance-zh.html") for link in info["links"])
        page.screenshot(path=str(shots / "en.png"), full_page=True)
        posters = {link.rsplit(".", 1)[1]: link for link in info["links"] if "chapter-at-a-glance-poster." in link}
        assert set(posters) == {"pdf", "png"}, info["links"]
        for suffix, magic in (("pdf", b"%PDF"), ("png", b"\x89PNG")):
            assert reader.is_local(posters[suffix])
            with urllib.request.urlopen(posters[suffix], timeout=10) as response:
                assert response.status == 200 and response.read(4) == magic, posters[suffix]
    finally:
        page.context.close()
    page, visit = reader.open(posters["png"].removeprefix(reader.base_url))
    try:
        page.screenshot(path=str(shots / "poster.png"), full_page=True)
    finally:
        page.context.close()
