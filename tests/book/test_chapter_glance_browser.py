"""The chapter at a glance as a reader sees it: the Chinese page set in a CJK font, both pages linking each other
and the poster, ten figures on each; screenshots of the two pages and the poster for review.

Reads the student edition that ``tests/book/test_book_browser.py`` reads (built if out of date). The font check asks
Chromium itself (DevTools' ``CSS.getPlatformFontsForNode``) which fonts it drew a node's text with: Chinese text
drawn in a font without those characters would show as boxes. Playwright runs in a thread of its own, because
``tests/book/test_book_browser.py`` holds a synchronous Playwright in the main thread for the whole session, and a
thread may hold only one.
"""

from __future__ import annotations

import re
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from course import notebooks as nbs
from tests.support import browser

pytestmark = pytest.mark.browser

EN, ZH = "book/chapter-at-a-glance.html", "book/chapter-at-a-glance-zh.html"
SHOTS = nbs.ROOT / "_build" / "screenshots" / "chapter-at-a-glance"
CJK = re.compile(r"[\u4e00-\u9fff]")
#: Where the Chinese text is checked: the title, the prose and a printed output (the figures' labels are checked in
#: tests/unit/course/test_chapter_glance.py).
PROBES = ("article h1", "article p", "article .cell_output pre")

# Marks the innermost element under the first `selector` match that holds Chinese text directly, for DevTools.
_MARK_JS = """(selector) => {
  for (const el of document.querySelectorAll(selector)) {
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (/[\\u4e00-\\u9fff]/.test(node.textContent)) {
        node.parentElement.setAttribute('data-font-probe', selector);
        return node.parentElement.textContent.trim();
      }
    }
  }
  return null;
}"""
_PAGE_JS = """() => {
  const article = document.querySelector('article.bd-article') || document.body;
  return {
    images: [...article.querySelectorAll('img')].map(i => ({alt: i.alt, width: i.naturalWidth})),
    links: [...article.querySelectorAll('a[href]')].map(a => a.href),
  };
}"""


def _fonts_used(page, selector: str) -> dict:
    """The text of the first element under ``selector`` holding Chinese, and the fonts Chromium drew it with."""
    text = page.evaluate(_MARK_JS, selector)
    if not text:
        return {"text": None, "fonts": []}
    cdp = page.context.new_cdp_session(page)
    cdp.send("DOM.enable")
    cdp.send("CSS.enable")
    root = cdp.send("DOM.getDocument", {"depth": -1})["root"]["nodeId"]
    node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": f'[data-font-probe="{selector}"]'})["nodeId"]
    return {"text": text, "fonts": cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]}


def _read(html) -> dict:
    """Open both pages and the poster in Chromium (in this thread); return what the tests check."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    out = {}
    with browser.Reader(html) as reader:
        for name, path in (("zh", ZH), ("en", EN)):
            page, visit = reader.open(path)
            try:
                info = page.evaluate(_PAGE_JS)
                info["lang"] = page.evaluate("document.documentElement.lang")
                info["problems"] = visit.problems()
                if name == "zh":
                    info["fonts"] = {selector: _fonts_used(page, selector) for selector in PROBES}
                page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
                other = "chapter-at-a-glance.html" if name == "zh" else "chapter-at-a-glance-zh.html"
                page.click(f"article a[href$='/{other}'], article a[href='{other}']")
                page.wait_for_load_state("load")
                info["followed"] = page.url
            finally:
                page.context.close()
            out[name] = info
        posters = {link.rsplit(".", 1)[1]: link for link in out["en"]["links"] if "-poster." in link}
        out["posters"] = posters
        out["poster_bytes"] = {}
        for suffix, url in posters.items():
            assert reader.is_local(url), url
            with urllib.request.urlopen(url, timeout=10) as response:
                out["poster_bytes"][suffix] = (response.status, response.read(8))
        if "png" in posters:
            page, _ = reader.open(posters["png"].removeprefix(reader.base_url))
            try:
                page.screenshot(path=str(SHOTS / "poster.png"), full_page=True)
            finally:
                page.context.close()
    return out


@pytest.fixture(scope="module")
def seen():
    if not browser.CHROMIUM.exists():
        pytest.skip(f"{browser.CHROMIUM} is missing: install Debian's chromium to read the book in a browser")
    try:
        html = browser.built_book("student")
    except SystemExit as err:
        pytest.fail(f"the student edition did not build: {err}", pytrace=False)
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(_read, html).result()


def test_each_page_declares_its_own_language(seen):
    """<html lang>: screen readers and glyph choice follow it (book/_ext/page_language.py)."""
    assert seen["zh"]["lang"] == "zh-Hans"
    assert seen["en"]["lang"] == "en"


def test_chinese_text_is_drawn_with_a_cjk_font(seen):
    for selector, probe in seen["zh"]["fonts"].items():
        assert probe["text"], f"no Chinese text under {selector} on {ZH}"
        cjk = [f for f in probe["fonts"] if "CJK" in f["familyName"]]
        assert cjk, f"{selector} {probe['text'][:40]!r} was drawn with {probe['fonts']}, none a CJK font"
        assert sum(f["glyphCount"] for f in cjk) >= len(CJK.findall(probe["text"])), (selector, probe)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_each_page_shows_ten_figures_and_links_the_other(seen, lang):
    page = seen[lang]
    assert not page["problems"], page["problems"]
    images = page["images"]
    assert len(images) == 10 and all(i["width"] > 0 for i in images), images
    if lang == "zh":
        assert all(CJK.search(i["alt"] or "") for i in images), "the Chinese page's alt texts are Chinese"
    other = EN if lang == "zh" else ZH
    assert page["followed"].endswith("/" + other), f"the link to the other edition led to {page['followed']}"


def test_the_english_page_links_the_poster_as_pdf_and_png(seen):
    assert set(seen["posters"]) == {"pdf", "png"}, seen["en"]["links"]
    assert seen["poster_bytes"]["pdf"][0] == 200 and seen["poster_bytes"]["pdf"][1].startswith(b"%PDF")
    assert seen["poster_bytes"]["png"] == (200, b"\x89PNG\r\n\x1a\n")
    assert (SHOTS / "poster.png").exists() and (SHOTS / "zh.png").exists() and (SHOTS / "en.png").exists()
