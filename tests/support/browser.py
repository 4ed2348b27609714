"""Reading the built book as a reader does: a local web server and headless Chromium.

The book must read on a machine with no network, so every page is opened
from a server on 127.0.0.1 and every request that leaves it (a CDN, a font
host, an analytics beacon) is blocked and recorded: a page that asks for one
is broken offline. Chromium is Debian's ``/usr/bin/chromium``, driven by
Playwright (whose own browser download is not needed).

Typical use::

    with Reader(html_dir) as reader:
        page, visit = reader.open("book/intro.html")
        assert visit.problems() == []
        page.close()
"""

from __future__ import annotations

import functools
import http.server
import os
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urljoin, urlsplit

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
LOCAL_HOST = "127.0.0.1"
# Waits for MathJax (when the page loads it) to finish its first typesetting pass, and for web fonts.
_SETTLE_JS = """async () => {
  const loads = [...document.scripts].some(s => /mathjax/i.test(s.src));
  let state = 'absent';
  if (loads) {
    for (let i = 0; i < 400 && !(window.MathJax && window.MathJax.startup && window.MathJax.startup.promise); i++) {
      await new Promise(r => setTimeout(r, 25));
    }
    if (window.MathJax && window.MathJax.startup && window.MathJax.startup.promise) {
      await window.MathJax.startup.promise;
      state = 'typeset';
    } else {
      state = 'not loaded';
    }
  }
  await document.fonts.ready;
  return state;
}"""


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    """A static-file handler that does not log every request to stderr."""

    def log_message(self, format, *args):  # noqa: A002 (the signature is http.server's)
        pass


@contextmanager
def serve(folder: Path | str) -> Iterator[str]:
    """Serve ``folder`` over HTTP on 127.0.0.1 at a free port, in a thread; yield its base URL (ending in ``/``)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"cannot serve {folder}: it is not a folder (build the book first: make book)")
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer((LOCAL_HOST, 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name=f"serve {folder.name}", daemon=True)
    thread.start()
    try:
        yield f"http://{LOCAL_HOST}:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def launch(playwright, chromium: Path | str = CHROMIUM):
    """Launch Debian's Chromium headless through Playwright, with the flags that keep it off the network."""
    chromium = Path(chromium)
    if not chromium.exists():
        raise FileNotFoundError(f"{chromium} not found: install Debian's chromium (apt-get install chromium)")
    return playwright.chromium.launch(executable_path=str(chromium), args=list(CHROMIUM_ARGS), headless=True)


@dataclass
class Visit:
    """What happened while one page loaded: its status and everything that went wrong."""

    url: str
    status: int | None = None
    mathjax: str = "absent"  # 'absent' (the page does not load MathJax), 'typeset' or 'not loaded'
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)
    bad_responses: list[str] = field(default_factory=list)
    blocked_requests: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        """Every problem, one line each; empty for a page that loaded cleanly and entirely from the book."""
        out = [] if self.status == 200 else [f"HTTP status {self.status} for {self.url}"]
        out += [f"request off the book (blocked): {url}" for url in self.blocked_requests]
        out += [f"console error: {text}" for text in self.console_errors]
        out += [f"uncaught exception: {text}" for text in self.page_errors]
        out += [f"failed request: {text}" for text in self.failed_requests]
        out += [f"bad response: {text}" for text in self.bad_responses]
        if self.mathjax == "not loaded":
            out.append("the page asks for MathJax but MathJax never started")
        return out


class Reader:
    """Headless Chromium over a folder of HTML served on 127.0.0.1; blocks and records requests that leave it."""

    def __init__(
        self, folder: Path | str, chromium: Path | str = CHROMIUM, viewport=(1280, 900), timeout_s=20.0, browser=None
    ):
        """Serve ``folder``; read it with ``browser`` (a Playwright browser) if given, else launch ``chromium``."""
        self.folder = Path(folder)
        self.timeout_ms = timeout_s * 1000
        self.chromium = Path(chromium)
        self.viewport = {"width": viewport[0], "height": viewport[1]}
        self.browser = browser
        self.base_url = ""
        self._stack = ExitStack()

    def __enter__(self) -> Reader:
        with ExitStack() as stack:
            self.base_url = stack.enter_context(serve(self.folder))
            if self.browser is None:
                from playwright.sync_api import sync_playwright

                playwright = sync_playwright().start()
                stack.callback(playwright.stop)
                self.browser = launch(playwright, self.chromium)
                stack.callback(self.browser.close)
            self._stack = stack.pop_all()
        return self

    def __exit__(self, *exc):
        self._stack.close()
        return False

    def url(self, path: str) -> str:
        """The served URL of ``path`` (relative to the folder)."""
        return urljoin(self.base_url, path)

    def is_local(self, url: str) -> bool:
        """Whether ``url`` is served by this reader's server (data: and blob: URLs never leave the page)."""
        parts = urlsplit(url)
        if parts.scheme in ("data", "blob", "about"):
            return True
        return parts.scheme in ("http", "https") and parts.netloc == urlsplit(self.base_url).netloc

    def open(self, path: str, arrive_at: str | None = None):
        """Open ``path`` in a fresh page, wait for MathJax and fonts; return ``(page, visit)``.

        ``arrive_at`` is the path a redirecting page (such as the root ``index.html``) must lead to; the page is
        inspected there. The caller closes the page (``page.context.close()`` closes its context too).
        """
        context = self.browser.new_context(viewport=self.viewport)
        visit = Visit(url=self.url(path))

        def route(route):
            if self.is_local(route.request.url):
                route.continue_()
            else:
                visit.blocked_requests.append(route.request.url)
                route.abort("blockedbyclient")

        context.route("**/*", route)
        page = context.new_page()
        page.set_default_timeout(self.timeout_ms)
        pending = set()
        page.on("request", lambda request: pending.add(request))
        page.on("requestfinished", lambda request: pending.discard(request))
        page.on("console", lambda msg: msg.type == "error" and visit.console_errors.append(_console_text(msg)))
        page.on("pageerror", lambda err: visit.page_errors.append(str(err)))

        def failed(request):
            pending.discard(request)
            if self.is_local(request.url):
                visit.failed_requests.append(f"{request.url}: {request.failure}")

        page.on("requestfailed", failed)
        page.on("response", lambda resp: resp.status >= 400 and visit.bad_responses.append(f"{resp.status} {resp.url}"))
        response = page.goto(visit.url, wait_until="load")
        visit.status = response.status if response is not None else None
        if arrive_at is not None:
            page.wait_for_url(self.url(arrive_at), wait_until="load")
        visit.mathjax = page.evaluate(_SETTLE_JS)
        _wait_until_idle(page, pending, self.timeout_ms / 1000)
        visit.failed_requests += [f"{request.url}: never finished" for request in pending]
        return page, visit


def _wait_until_idle(page, pending: set, timeout_s: float, quiet_s: float = 0.2) -> None:
    """Let the page run until no request has been in flight for ``quiet_s`` seconds (at most ``timeout_s``)."""
    deadline, quiet_since = time.monotonic() + timeout_s, None
    while time.monotonic() < deadline:
        if pending:
            quiet_since = None
        elif quiet_since is None:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since >= quiet_s:
            return
        page.wait_for_timeout(25)


def _console_text(msg) -> str:
    location = msg.location or {}
    where = location.get("url", "")
    if where:
        where = f" ({where}:{location.get('lineNumber', '?')})"
    return f"{msg.text}{where}"


#: What a test build of the book is made of: a change to any of these files builds it again. ``lib/qkv`` is among
#: them, since the pages' outputs come from it; so is the poster's code and every pin.
BOOK_INPUTS = ("book", "lib/qkv", "publish", "_config.yml", "_toc.yml", "references.bib", "constraints.txt")


def book_key(edition: str) -> str:
    """A hash of every input of ``edition``'s build (:data:`BOOK_INPUTS`) and of the smoke setting."""
    from tests.support import once

    smoke = os.environ.get("QKV_TRAIN_SMOKE", "")
    return once.digest(*(once.ROOT / name for name in BOOK_INPUTS), extra=f"{edition}\0smoke={smoke}")


def built_book(edition: str = "student") -> Path:
    """The HTML folder of ``edition``, built first unless the last build was made from the same inputs.

    The build lives where ``make book`` would put it in this run (``_build/smoke/<edition>`` in the test suite), so
    that Jupyter Book's execution cache there keeps a rebuild short. It counts as up to date when the hash of its
    inputs (:func:`book_key`) is the one recorded by the last build that finished. The student edition's graded pages
    are not executed again: their outputs are nbval's runs of the student notebooks, made once per session
    (:func:`tests.support.nbval_runs.prime_book_cache`). When ``lib/qkv`` changed, the
    execution cache is emptied first: it is keyed by the notebooks' text alone and would show outputs of the old
    library. A file lock keeps parallel test workers from building at once; the others wait and read the result.
    """
    from filelock import FileLock

    from publish import build_book

    out = build_book.default_out(edition)
    html = out / "_build" / "html"
    out.mkdir(parents=True, exist_ok=True)
    key, stamp = book_key(edition), out / ".inputs"
    with FileLock(str(out / ".build.lock")):
        recorded = stamp.read_text().split() if stamp.exists() else []
        if recorded[:1] == [key] and (html / "index.html").exists():
            return html
        # the pages' outputs of another qkv are forgotten (the explorers' modules left out: the build puts the
        # current ones in every page), before nbval's runs are put in the cache, so that the build keeps them
        library = build_book.library_digest()
        build_book.forget_stale_outputs(out, library)
        stamp.unlink(missing_ok=True)
        if edition == "student":  # the graded pages' outputs: nbval's runs of the student notebooks
            from course.section import sections
            from tests.support import nbval_runs

            build_book.stage(edition, out / "src")
            primed = nbval_runs.prime_book_cache(out / "src", out / "_build" / ".jupyter_cache", sections())
            print(f"[book] {len(primed)} page(s) from nbval's runs: {', '.join(primed)}", flush=True)
        if edition == "solutions":
            from autograder import editions

            html = editions.build(out=out)
        else:
            html = build_book.build(edition, out=out)
        stamp.write_text(f"{key} {library}\n")
        return html


def book_lock(edition: str = "student"):
    """The lock :func:`built_book` holds while it builds: hold it to copy the build without another worker
    rebuilding it meanwhile."""
    from filelock import FileLock

    from publish import build_book

    return FileLock(str(build_book.default_out(edition) / ".build.lock"))
