"""Fixtures of the book tier shared by several modules: one Chromium for every explorer's test (issue 42)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

from course import notebooks as nbs
from tests.support import browser
from tests.support import explorers as ex


class Explorers:
    """The explorers' pages in one Chromium that runs in a thread of its own (Playwright's sync API allows one
    driver per thread, and ``test_book_browser.py``'s session fixture holds the main thread's).

    ``run(session, *args)`` calls ``session(reader, *args)`` in that thread; ``open(reader, name)`` (inside a
    session) opens the page of explorer ``name`` and waits until it has drawn, returning ``(page, visit)``."""

    def __init__(self, reader_for: Callable[[], browser.Reader], pages: Callable[[], dict[str, str]], folder):
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="explorers-chromium")
        self._held: dict = {}
        self._reader_for, self._pages, self.folder = reader_for, pages, folder
        self._standalone: dict[str, Callable] = {}

    def start(self) -> None:
        def start():
            from playwright.sync_api import sync_playwright

            self._held["playwright"] = sync_playwright().start()
            self._held["browser"] = browser.launch(self._held["playwright"])
            self._held["reader"] = self._reader_for(self._held["browser"]).__enter__()

        self._pool.submit(start).result()

    def stop(self) -> None:
        def stop():
            for name, close in (("reader", lambda r: r.__exit__(None, None, None)), ("browser", lambda b: b.close()),
                                ("playwright", lambda p: p.stop())):  # fmt: skip
                if name in self._held:
                    close(self._held[name])

        try:
            self._pool.submit(stop).result()
        finally:
            self._pool.shutdown()

    def run(self, session: Callable, *args):
        return self._pool.submit(session, self._held["reader"], *args).result()

    def pages(self) -> dict[str, str]:
        """Each explorer and its page, relative to the folder served."""
        return self._pages()

    def path(self, name: str, standalone: Callable[[], object] | None = None) -> str:
        """The page of explorer ``name``: in the built book, or (``QKV_EXPLORER_STANDALONE=1``) one of its own made
        from ``standalone()``."""
        if ex.standalone():
            if standalone is None:
                pytest.skip(f"{name}'s test gives no standalone page")
            return ex.standalone_page(self.folder, name, standalone)
        pages = self.pages()
        if name not in pages:
            pytest.fail(f"no page of the built book holds the explorer {name!r}; explorers found: {sorted(pages)}")
        return pages[name]

    def open(self, reader, name: str, standalone: Callable[[], object] | None = None):
        page, visit = reader.open(self.path(name, standalone))
        page.wait_for_function(ex.READY_JS, arg=name, timeout=10_000)
        return page, visit


@pytest.fixture(scope="session")
def student_html():
    """The smoke book's student edition, built (incrementally) unless the last build is up to date."""
    try:
        return browser.built_book("student")
    except SystemExit as err:
        pytest.fail(f"the student edition did not build: {err}", pytrace=False)


@pytest.fixture(scope="session")
def explorers(request):
    """One :class:`Explorers` for the session: the built book's student edition (or, with
    ``QKV_EXPLORER_STANDALONE=1``, a folder of standalone pages under ``_build/explorer-pages``) in one Chromium."""
    if not browser.CHROMIUM.exists():
        pytest.skip(f"{browser.CHROMIUM} is missing: install Debian's chromium to read the book in a browser")
    if ex.standalone():
        folder = nbs.ROOT / "_build" / "explorer-pages"
        folder.mkdir(parents=True, exist_ok=True)
        held = Explorers(lambda chrome: browser.Reader(folder, browser=chrome), dict, folder)
    else:
        html = request.getfixturevalue("student_html")
        held = Explorers(lambda chrome: browser.Reader(html, browser=chrome), lambda: ex.book_pages(html), html)
    held.start()
    try:
        yield held
    finally:
        held.stop()
