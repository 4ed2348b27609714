"""The student edition of the book, read as a reader sees it: built once, served on 127.0.0.1, opened in Chromium.

Every page of the table of contents must load with no console error, no failed request and no request that
leaves the book (the book reads offline); its equations must be typeset; each section must show the figures
its executed notebook drew; the sidebar must reach every page; the download and launch buttons must be
there; and no answer from ``solutions/`` and no hidden test may appear anywhere in the student edition.
In the same visit each page is audited with axe-core in the theme's light and dark colour modes (no serious or
critical violation in what the course owns; the theme's own are listed in ``axe_theme_known.toml``) and read at a
phone's width, 390 px (the page itself never scrolls sideways; figures are scaled to fit): ``tests/support/a11y.py``.
A full-page screenshot of each page is kept under ``_build/screenshots/student/`` for review, and of a few pages at
a phone's width under ``_build/screenshots/student/phone/``.
"""

from __future__ import annotations

import dataclasses
import html as htmllib
import json
import os
import re
import textwrap
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urldefrag, urlsplit

import nbformat
import pytest
import yaml

from autograder import assemble
from course import notebooks as nbs
from course.section import sections
from course.student_notebook import differences, student_notebook
from publish import colab
from tests.support import a11y, browser, once

pytestmark = pytest.mark.browser

ROOT = nbs.ROOT
PAGES = nbs.toc_files()  # "book/intro", ... in reading order
SECTIONS = {f"book/{s.slug}": s for s in sections()}  # the graded sections
NOTEBOOK_PAGES = [name for name in PAGES if nbs.is_notebook_source(ROOT / f"{name}.md")]
SCREENSHOTS = ROOT / "_build" / "screenshots" / "student"
PHONE_SCREENSHOTS = SCREENSHOTS / "phone"
#: The pages photographed at a phone's width too (every page is measured there): the chapter's overview and three
#: sections dense with display equations, tables and code (11.3, 11.7, 11.9).
PHONE_SHOTS = (
    "book/chapter-at-a-glance",
    "book/attention-scoring-functions",
    "book/transformer",
    "book/large-pretraining-transformers",
)
GLANCE_SECTION = "at-a-glance"  # the id Sphinx gives the "## At a glance" heading's section
SITE_TEXT_SUFFIXES = (".html", ".ipynb", ".md", ".txt", ".js")  # what a reader can read or download
MIN_NEEDLE = 16  # answer lines shorter than this (``return x``) are not distinctive

# Collected in the page once it has settled: figures, mathematics, visible text, sidebar and header buttons.
_COLLECT_JS = """() => {
  const article = document.querySelector('article.bd-article') || document.querySelector('main') || document.body;
  const sectionsOf = el => {  // the ids of the sections that hold el, innermost first
    const ids = [];
    for (let s = el.closest('section[id]'); s; s = s.parentElement && s.parentElement.closest('section[id]')) {
      ids.push(s.id);
    }
    return ids;
  };
  const images = [...article.querySelectorAll('img')].map(img => ({
    src: img.getAttribute('src'), alt: img.getAttribute('alt'), width: img.naturalWidth, complete: img.complete,
    sections: sectionsOf(img)}));
  const svgs = [...article.querySelectorAll('.cell_output svg')].filter(svg => !svg.closest('button')).map(svg => ({
    src: 'inline svg', alt: svg.getAttribute('aria-label'), width: svg.getBoundingClientRect().width,
    complete: true, sections: sectionsOf(svg)}));
  const untypeset = [...document.querySelectorAll('.math')].filter(m => !m.querySelector('mjx-container'))
    .map(m => m.textContent.trim().slice(0, 120));
  const mathErrors = [...document.querySelectorAll('mjx-merror')]
    .map(e => e.getAttribute('data-mjx-error') || e.textContent);
  const code = [...document.querySelectorAll('pre, code')];
  const display = code.map(el => el.style.display);
  code.forEach(el => { el.style.display = 'none'; });
  const prose = document.body.innerText;  // the visible text, code blocks left out
  code.forEach((el, i) => { el.style.display = display[i]; });
  return {
    title: (article.querySelector('h1') || {textContent: ''}).textContent.replace(/#$/, '').trim(),
    figures: images.concat(svgs),
    mathElements: document.querySelectorAll('.math').length,
    typeset: document.querySelectorAll('mjx-container').length,
    untypeset, mathErrors,
    bodyText: document.body.innerText, prose,
    sidebar: [...document.querySelectorAll('nav.bd-docs-nav a[href]')].map(a => ({
      href: a.href, text: a.textContent.trim(), visible: a.getClientRects().length > 0})),
    mathjaxScripts: [...document.scripts].filter(s => /mathjax/i.test(s.src)).map(s => s.getAttribute('src')),
    downloads: [...document.querySelectorAll('.dropdown-download-buttons a[href]')].map(a => a.href),
    launches: [...document.querySelectorAll('.dropdown-launch-buttons a[href]')].map(a => a.href),
  };
}"""
# TeX a reader should never see: display or inline delimiters, environments, commands, and $...$ spans holding a
# TeX command, a superscript or a subscript (plain dollar amounts hold none of those).
RAW_TEX = re.compile(r"\$\$|\\\(|\\\)|\\\[|\\\]|\\begin\{|\\[A-Za-z]+|\$[^$\s][^$\n]{0,200}?[\\^_][^$\n]*?\$")


@dataclass
class PageReport:
    name: str  # the toc name, e.g. "book/intro"
    visit: browser.Visit
    info: dict
    screenshot: Path
    access: dict  # axe-core's audit in each colour mode and the phone-width layout (tests.support.a11y.inspect)


def _html_path(name: str) -> str:
    return f"{name}.html"


def _page_name(url: str, base_url: str) -> str | None:
    """The toc name of a served URL ("http://127.0.0.1:8000/book/intro.html#x" -> "book/intro"), else None."""
    url = urldefrag(url)[0]
    if not url.startswith(base_url) or not url.endswith(".html"):
        return None
    return url[len(base_url) : -len(".html")]


# --- fixtures ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def chromium():
    """One headless Chromium for the session (Playwright allows one sync driver per thread)."""
    if not browser.CHROMIUM.exists():
        pytest.skip(f"{browser.CHROMIUM} is missing: install Debian's chromium to read the book in a browser")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chrome = browser.launch(playwright)
        yield chrome
        chrome.close()


@pytest.fixture(scope="session")
def reader(chromium, student_html):
    with browser.Reader(student_html, browser=chromium) as reader:
        yield reader


#: What stands for the served book's address in a page's stored report: each worker serves the book on a port of
#: its own, and reads the other's reports with its own address put back.
_BASE = "{served book}/"


@pytest.fixture(scope="session")
def known_theme_violations() -> list[a11y.Known]:
    """The theme's own accessibility violations (``tests/book/axe_theme_known.toml``), checked."""
    return a11y.load_known()


@pytest.fixture(scope="session")
def axe_js() -> str:
    """The pinned axe-core's ``axe.min.js`` (``publish/vendor.py``: fetched with npm into the vendor cache once)."""
    try:
        return a11y.axe_source()
    except SystemExit as err:
        pytest.fail(f"axe-core is not available: {err}", pytrace=False)


@pytest.fixture(scope="session")
def pages(reader, student_html, known_theme_violations, axe_js):
    """A function from a toc name to its PageReport: each page is opened once per session (lazily), inspected,
    audited for accessibility in both colour modes, measured at a phone's width and photographed, by whichever
    worker asks first (:func:`tests.support.once.build_once`); the other reads the report it stored. (The browser
    tests of one page run on one worker, but the sidebar test follows every page.)"""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    cache: dict[str, PageReport] = {}
    book = once.digest(student_html / "searchindex.js", extra=os.environ.get("QKV_TEST_SESSION", ""))

    def produce(name: str, folder: Path) -> None:
        page, visit = reader.open(_html_path(name))
        try:
            info = page.evaluate(_COLLECT_JS)
            page.screenshot(path=str(SCREENSHOTS / f"{Path(name).name}.png"), full_page=True)
            phone_shot = PHONE_SCREENSHOTS / f"{Path(name).name}.png" if name in PHONE_SHOTS else None
            access = a11y.inspect(page, axe_js, known_theme_violations, phone_shot)
        finally:
            page.context.close()
        text = json.dumps({"visit": dataclasses.asdict(visit), "info": info, "access": access})
        (folder / "report.json").write_text(text.replace(reader.base_url, _BASE))

    def report(name: str) -> PageReport:
        if name not in cache:
            folder = once.build_once("page-" + name.replace("/", "-"), book, lambda f: produce(name, f))
            stored = json.loads((folder / "report.json").read_text().replace(_BASE, reader.base_url))
            shot = SCREENSHOTS / f"{Path(name).name}.png"
            cache[name] = PageReport(name, browser.Visit(**stored["visit"]), stored["info"], shot, stored["access"])
        return cache[name]

    return report


@pytest.fixture(scope="session")
def executed(student_html):
    """The executed student-edition notebook of a section (from Jupyter Book's execution cache), by toc name."""
    from jupyter_cache import get_cache

    out = student_html.parent.parent  # _build/student
    cache = get_cache(out / "_build" / ".jupyter_cache")

    def notebook(name: str):
        staged = nbs.read(out / "src" / f"{name}.md")
        try:
            return cache.merge_match_into_notebook(staged)[1]
        except KeyError:
            pytest.fail(f"{name}: no executed notebook in {cache.path}; rebuild the book (make book)", pytrace=False)

    return notebook


# --- every page loads cleanly -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", PAGES)
def test_page_loads_from_the_book_alone_without_errors(pages, name):
    report = pages(name)
    scripts = report.info["mathjaxScripts"]
    assert len(scripts) <= 1, (
        f"{name}.html loads {len(scripts)} MathJax scripts ({scripts[:4]}...): when the staged source has a _static/ "
        "folder (even an empty one), Jupyter Book adds every .js file under html_static_path to every page; stage "
        "MathJax under _vendor/ and leave no _static/ folder in _build/<edition>/src"
    )
    problems = report.visit.problems()
    assert not problems, f"{name}.html (screenshot {report.screenshot}):\n  " + "\n  ".join(problems)
    assert report.info["title"], f"{name}.html has no title (h1): is the page empty?"


# --- equations ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", PAGES)
def test_equations_are_typeset(pages, name):
    info = pages(name).info
    if name in SECTIONS:
        assert info["mathElements"] > 0, f"{name}: a section gives its idea as equations, but the page has no math"
    if info["mathElements"]:
        assert pages(name).visit.mathjax == "typeset", f"{name}: MathJax did not run ({pages(name).visit.mathjax})"
    assert not info["untypeset"], f"{name}: math left as raw TeX by MathJax: {info['untypeset'][:5]}"
    assert not info["mathErrors"], f"{name}: MathJax could not typeset: {info['mathErrors'][:5]}"
    assert info["typeset"] >= info["mathElements"], (
        f"{name}: {info['mathElements']} equations, {info['typeset']} typeset"
    )
    for label, text in (("visible text", info["prose"]), ("document.body.innerText", info["bodyText"])):
        hits = [m for m in RAW_TEX.finditer(text) if label == "visible text" or m.group() in ("$$", "\\(")]
        shown = [text[max(0, m.start() - 40) : m.end() + 40].replace("\n", " ") for m in hits[:5]]
        assert not hits, f"{name}: raw TeX in the {label} (outside code), e.g. {shown}"


# --- figures -----------------------------------------------------------------------------------------------------


def _figure_cells(nb) -> list[int]:
    """Indices of the code cells whose outputs hold an image, except outputs the book removes."""
    out = []
    for i, cell in enumerate(nb.cells):
        tags = cell.metadata.get("tags", [])
        if cell.cell_type != "code" or {"remove-output", "remove-cell"} & set(tags):
            continue
        if any(k.startswith("image/") for o in cell.get("outputs", []) for k in o.get("data", {})):
            out.append(i)
    return out


@pytest.mark.parametrize("name", list(SECTIONS))
def test_each_section_shows_its_figures(pages, executed, name):
    nb = executed(name)
    expected = _figure_cells(nb)
    glance = next(
        (i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and "## At a glance" in c.source), None
    )
    assert glance is not None, f"{name}: no '## At a glance' heading"
    glance_cell = next((i for i in range(glance + 1, len(nb.cells)) if nb.cells[i].cell_type == "code"), None)
    assert glance_cell in expected, f"{name}: the code cell under 'At a glance' drew no figure when executed"

    figures = pages(name).info["figures"]
    broken = [f["src"] for f in figures if not f["complete"] or f["width"] <= 0]
    assert not broken, f"{name}: figures that did not load: {broken}"
    assert len(figures) >= len(expected), (
        f"{name}: the executed notebook drew {len(expected)} figures (cells {expected}) but the page shows "
        f"{len(figures)}: {[f['src'] for f in figures]}"
    )
    assert any(GLANCE_SECTION in f["sections"] for f in figures), f"{name}: no figure under 'At a glance' on the page"


def _useful_alt(alt: str | None) -> bool:
    """Alt text that tells a reader who cannot see the figure what it shows (not a file name, not a stub)."""
    alt = (alt or "").strip()
    return len(alt) >= 25 and "_images/" not in alt and not re.search(r"\.(svg|png|jpe?g)$", alt)


@pytest.mark.parametrize("name", PAGES)
def test_every_figure_has_alt_text(pages, name):
    figures = pages(name).info["figures"]
    bad = [f"{f['src']} (alt {f['alt']!r}) in {f['sections'][:1]}" for f in figures if not _useful_alt(f["alt"])]
    assert not bad, f"{name}: figures without useful alt text (the cell's mystnb: image: alt:):\n" + "\n".join(bad)


# --- pages every reader can use ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", PAGES)
def test_no_serious_accessibility_violation_in_what_the_course_owns(pages, known_theme_violations, name):
    report = pages(name)
    problems = a11y.owned_problems(report.access, known_theme_violations)
    assert not problems, (
        f"{name}: serious or critical accessibility violations (axe-core {a11y.axe_version(report.access)}) in "
        f"what the course owns; fix them, or, if the theme or an extension writes that markup, add an entry with its "
        f"upstream issue to {a11y.KNOWN_FILE.relative_to(ROOT)}:\n  " + "\n  ".join(problems)
    )


@pytest.mark.parametrize("name", PAGES)
def test_page_fits_a_phone_screen(pages, name):
    phone = pages(name).access["phone"]
    assert phone["scrollWidth"] <= phone["width"], (
        f"{name}: at {phone['width']} px wide the page is {phone['scrollWidth']} px wide, so a phone scrolls the "
        "whole page sideways; give what sticks out a box of its own that scrolls (overflow-x: auto) or let it wrap "
        "(book/_assets/course.css):\n  " + "\n  ".join(phone["sticking"])
    )
    assert not phone["unscaled"], f"{name}: figures wider than their column at {phone['width']} px: {phone['unscaled']}"
    if name in SECTIONS:
        assert phone["figures"] > 0, f"{name}: no figure measured at a phone's width: did the page change its markup?"


def test_every_known_theme_violation_is_still_there(pages, known_theme_violations):
    used = set().union(*(a11y.known_used(pages(name).access) for name in PAGES))
    stale = [f"{k.rule} on {k.selector} ({k.owner})" for i, k in enumerate(known_theme_violations) if i not in used]
    assert not stale, (
        f"entries of {a11y.KNOWN_FILE.relative_to(ROOT)} that no page of the book needs any more (fixed upstream, "
        "or the markup changed): delete them, so that the list only holds what is still there:\n  " + "\n  ".join(stale)
    )


@pytest.mark.parametrize("name", PHONE_SHOTS)
def test_phone_screenshot_is_kept_for_review(pages, name):
    shot = PHONE_SCREENSHOTS / f"{Path(pages(name).name).name}.png"
    assert shot.exists() and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"no PNG screenshot at {shot}"
    width = int.from_bytes(shot.read_bytes()[16:20], "big")
    assert width == a11y.PHONE[0], f"{shot}: {width} px wide, not a phone's {a11y.PHONE[0]} px"


# --- navigation --------------------------------------------------------------------------------------------------


def test_sidebar_reaches_every_page_from_the_root(reader, pages):
    page, visit = reader.open("index.html", arrive_at=_html_path(PAGES[0]))
    try:
        sidebar = page.evaluate(_COLLECT_JS)["sidebar"]
    finally:
        page.context.close()
    assert visit.status == 200 and not visit.problems(), f"index.html: {visit.problems()}"
    hidden = [link["text"] for link in sidebar if not link["visible"]]
    assert not hidden, f"sidebar links on the root page that a reader cannot see: {hidden}"

    reached, queue = {PAGES[0]}, [PAGES[0]]
    links = {PAGES[0]: sidebar}
    while queue:
        current = queue.pop(0)
        for link in links.get(current) or pages(current).info["sidebar"]:
            target = _page_name(link["href"], reader.base_url)
            if target and target not in reached:
                reached.add(target)
                queue.append(target)
    missing = [name for name in PAGES if name not in reached]
    assert not missing, f"toc pages the sidebar never links to (starting from {PAGES[0]}): {missing}"
    strays = sorted(reached - set(PAGES))
    assert not strays, f"sidebar links to pages outside the table of contents: {strays}"


# --- download and launch buttons ---------------------------------------------------------------------------------


def _launch_urls() -> dict[str, str]:
    config = yaml.safe_load((ROOT / "_config.yml").read_text())["launch_buttons"]
    return {key: config[key] for key in ("binderhub_url", "jupyterhub_url", "colab_url") if config.get(key)}


@pytest.mark.parametrize("name", PAGES)
def test_download_and_launch_buttons(reader, pages, name):
    info = pages(name).info
    downloads = {Path(urlsplit(url).path).suffix: url for url in info["downloads"]}
    wanted = [".ipynb", ".md"] if name in NOTEBOOK_PAGES else [".md"]
    assert set(wanted) <= set(downloads), f"{name}: download buttons {sorted(downloads)}, expected {wanted}"
    for suffix in wanted:
        assert reader.is_local(downloads[suffix]), f"{name}: the {suffix} download is not in the book"
        with urllib.request.urlopen(downloads[suffix], timeout=10) as response:  # served by the test's own server
            assert response.status == 200, f"{name}: {downloads[suffix]} answers {response.status}"
            body = response.read().decode("utf-8")
        if suffix == ".ipynb":
            assert json.loads(body)["cells"], f"{name}: the downloaded notebook has no cells"
            if name in SECTIONS:  # a graded page: the download is the student's notebook of every door
                got = differences(student_notebook(SECTIONS[name]), nbformat.reads(body, as_version=4))
                assert got == [], f"{name}: the download is not the student's notebook: {got}"
        assert body.strip(), f"{name}: the {suffix} download is empty"
    if name in NOTEBOOK_PAGES:
        expected = _launch_urls()
        assert set(expected) == {"binderhub_url", "jupyterhub_url", "colab_url"}, "_config.yml names all three"
        for key, base in expected.items():
            assert any(url.startswith(base.rstrip("/")) for url in info["launches"]), (
                f"{name}: no launch button for {key} ({base}); launch links: {info['launches']}"
            )
        # Colab opens the .ipynb that `make notebooks` writes (publish/colab.py), on its own branch.
        url, _, colab_branch = colab.repository()
        colab_links = [u for u in info["launches"] if u.startswith(expected["colab_url"].rstrip("/"))]
        path = urlsplit(url).path
        assert colab_links == [f"{expected['colab_url']}/github{path}/blob/{colab_branch}/{name}.ipynb"], (
            f"{name}: the Colab button opens {colab_links}"
        )
        # Binder and the hub open the same notebook in the public repository (notebooks/), not the .md.
        for key in ("binderhub_url", "jupyterhub_url"):
            links = [u for u in info["launches"] if u.startswith(expected[key].rstrip("/"))]
            assert links and all(f"notebooks/{name}.ipynb" in u for u in links), f"{name}: {key} opens {links}"


# --- screenshots ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", PAGES)
def test_screenshot_is_kept_for_review(pages, name):
    shot = pages(name).screenshot
    assert shot.exists() and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"no PNG screenshot at {shot}"
    width, height = int.from_bytes(shot.read_bytes()[16:20], "big"), int.from_bytes(shot.read_bytes()[20:24], "big")
    assert width >= 1000 and height >= 600, f"{shot}: {width}x{height} is not a full page"


# --- no solution text ----------------------------------------------------------------------------------------------


def _normal(text: str) -> str:
    return " ".join(text.split())


def _site_text(html_dir: Path) -> dict[str, str]:
    """The text a reader can get from each file of the site (tags stripped, notebooks' JSON decoded), by path."""
    out = {}
    for path in sorted(html_dir.rglob("*")):
        rel = path.relative_to(html_dir).as_posix()
        if not path.is_file() or rel.startswith("_static/") or path.suffix not in SITE_TEXT_SUFFIXES:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if path.suffix == ".html":
            text = htmllib.unescape(re.sub(r"<[^>]+>", "", text))
        elif path.suffix == ".ipynb":
            nb = json.loads(text)
            parts = []
            for cell in nb.get("cells", []):
                parts.append("".join(cell.get("source", [])))
                for output in cell.get("outputs", []):
                    parts.append("".join(output.get("text", [])))
                    parts += ["".join(v) if isinstance(v, list) else str(v) for v in output.get("data", {}).values()]
            text = "\n".join(parts)
        out[rel] = _normal(text)
    return out


def _needles(text: str, public: str) -> set[str]:
    """Distinctive lines of ``text`` (and their code without a trailing comment) that the public book lacks."""
    out = set()
    for line in text.splitlines():
        candidates = {_normal(line), _normal(line.split("  #", 1)[0])}
        for candidate in candidates:
            if len(candidate) >= MIN_NEEDLE and re.search(r"[A-Za-z_]{3}", candidate) and candidate not in public:
                out.add(candidate)
    return out


def _answer_bodies(section) -> dict[str, str]:
    """What the assembler would put into each stub of ``section``, by grade_id."""
    nb = nbs.read(section.path)
    answers = assemble.solutions_module(section.slug)
    bodies = {}
    for cell in nb.cells:
        if nbs.role(cell) == "stub":
            grade = nbs.grade_id(cell)
            filled = assemble.fill_stubs(cell.source, grade, answers, markers=True)
            pattern = re.escape(assemble.BEGIN_SOLUTION) + r"\n(.*?)\n\s*" + re.escape(assemble.END_SOLUTION)
            bodies[grade] = "\n".join(textwrap.dedent(m) for m in re.findall(pattern, filled, re.S))
    return bodies


@pytest.fixture(scope="session")
def site_text(student_html) -> dict[str, str]:
    return _site_text(student_html)


@pytest.mark.parametrize("name", list(SECTIONS))
def test_no_solution_or_hidden_test_text_in_the_student_edition(site_text, name):
    section = SECTIONS[name]
    site = site_text
    public = _normal("\n".join(p.read_text(encoding="utf-8") for p in nbs.BOOK.glob("*.md")))

    # The matcher sees highlighted code: each stub's own definition line is found on its page.
    page_text = site[_html_path(name)]
    for cell in nbs.read(section.path).cells:
        if nbs.role(cell) == "stub":
            signature = next((line for line in cell.source.splitlines() if re.match(r"\s*(def|class) ", line)), None)
            if signature is not None:
                assert _normal(signature) in page_text, f"{name}: the stub line {signature!r} is not on its page"

    bodies = _answer_bodies(section)
    assert bodies, f"{name}: a graded section has stubs to answer"
    secret = {f"the answer to {grade}": _needles(body, public) for grade, body in bodies.items()}
    hidden_dir = section.grading_dir
    for path in sorted(hidden_dir.glob("*.py")):
        secret[f"the hidden tests {path.relative_to(ROOT)}"] = _needles(path.read_text(encoding="utf-8"), public)
    vacuous = [what for what, needles in secret.items() if not needles]
    assert not vacuous, f"{name}: nothing distinctive to look for (every line is short or in book/): {vacuous}"

    leaks = [
        f"{what}: {needle!r} in {rel}"
        for what, needles in secret.items()
        for needle in sorted(needles)
        for rel, text in site.items()
        if needle in text
    ]
    assert not leaks, f"{name}: solution text in the student edition:\n  " + "\n  ".join(leaks[:20])


# --- the reader itself: what it reports on a page that does everything wrong --------------------------------------


@pytest.fixture(scope="module")
def tiny_site(chromium, tmp_path_factory):
    """A two-page site: one clean page, and one that calls a CDN, misses an image, logs an error and throws."""
    site = tmp_path_factory.mktemp("site")
    (site / "clean.html").write_text("<html><body><h1>Clean</h1><p>Nothing wrong here.</p></body></html>")
    (site / "broken.html").write_text(
        "<html><head><script src='https://cdn.example.org/lib.js'></script></head><body><h1>Broken</h1>"
        "<img src='missing.png'><script>console.error('boom'); throw new Error('kaput');</script></body></html>"
    )
    with browser.Reader(site, browser=chromium) as reader:
        yield reader


def test_reader_reports_nothing_on_a_clean_page(tiny_site):
    page, visit = tiny_site.open("clean.html")
    page.context.close()
    assert tiny_site.base_url.startswith("http://127.0.0.1:")
    assert visit.status == 200 and visit.problems() == [], visit.problems()


def test_reader_blocks_and_reports_everything_a_broken_page_does(tiny_site):
    page, visit = tiny_site.open("broken.html")
    page.context.close()
    assert visit.blocked_requests == ["https://cdn.example.org/lib.js"]
    assert [r for r in visit.bad_responses if r.endswith("/missing.png")] and visit.bad_responses[0].startswith("404")
    assert any("boom" in e for e in visit.console_errors), visit.console_errors
    assert any("kaput" in e for e in visit.page_errors), visit.page_errors
    problems = "\n".join(visit.problems())
    for expected in ("cdn.example.org", "missing.png", "boom", "kaput"):
        assert expected in problems, f"{expected!r} not in the report:\n{problems}"


# --- the accessibility and phone checks themselves: what they report on pages made to fail them ------------------

_PIXEL = "data:image/gif;base64,R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7"  # one grey pixel
_PLAIN = (
    "<!doctype html><html lang='en'><head><meta name='viewport' content='width=device-width'><title>{title}</title>"
)
_THEME_SEARCH = (  # pydata-sphinx-theme's search button, as it writes it
    "<button class='btn search-button-field search-button__button' aria-label='Search'>"
    "<span class='search-button__default-text'>Search</span>"
    "<span class='search-button__kbd-shortcut'><kbd>Ctrl</kbd>+<kbd>K</kbd></span></button>"
)


@pytest.fixture(scope="module")
def a11y_site(chromium, tmp_path_factory):
    """Pages that fail the checks on purpose, and one that passes them."""
    site = tmp_path_factory.mktemp("a11y-site")
    (site / "mixed.html").write_text(
        _PLAIN.format(title="Mixed")
        + "</head><body><header>"
        + _THEME_SEARCH
        + "</header><main><h1>Mixed</h1>"
        # the same rule as the theme's button, on a button of the page's own: still the course's to fix
        + "<button class='explorer-reset' aria-label='Reset'>Start again</button>"
        + f"<img src='{_PIXEL}' width='20' height='20'></main></body></html>"
    )
    (site / "wide.html").write_text(
        _PLAIN.format(title="Wide")
        + "</head><body><main><h1>Wide</h1><p><code style='white-space: nowrap'>"
        + "torch.nn.functional.scaled_dot_product_attention" * 3
        + f"</code></p><div><img alt='a figure drawn wider than a phone' src='{_PIXEL}'"
        + " style='width: 700px; height: 10px'></div></main></body></html>"
    )
    (site / "narrow.html").write_text(
        _PLAIN.format(title="Narrow")
        + "<style>img { max-width: 100%; }</style></head><body><main><h1>Narrow</h1>"
        + "<pre tabindex='0' style='overflow-x: auto'>"
        + "x = 1  # a long line of code scrolls inside its own box " * 4
        + "</pre><img alt='a figure scaled down to the width of a phone' width='900' height='10' "
        + f"src='{_PIXEL}'></main></body></html>"
    )
    with browser.Reader(site, browser=chromium) as reader:
        yield reader


@pytest.fixture(scope="module")
def theme_search_known() -> list[a11y.Known]:
    entries = [k for k in a11y.load_known() if "search-button__button" in k.selector]
    assert len(entries) == 1, "axe_theme_known.toml lists the theme's search button once"
    return entries


def test_axe_tells_the_themes_known_violation_from_the_courses_own(a11y_site, axe_js, theme_search_known):
    page, _ = a11y_site.open("mixed.html")
    try:
        result = a11y.audit(page, axe_js, theme_search_known)
    finally:
        page.context.close()
    report = {"axe": {"light": result}}
    problems = "\n".join(a11y.owned_problems(report, theme_search_known))
    assert "explorer-reset" in problems and "label-content-name-mismatch" in problems, problems
    assert "image-alt" in problems, problems  # critical: an image with no text alternative
    assert "search-button__button" not in problems, problems
    assert a11y.counts(report)["light"]["known"] == 1 and a11y.known_used(report) == {0}


def test_a_known_entry_with_a_bad_selector_is_reported(a11y_site, axe_js):
    page, _ = a11y_site.open("mixed.html")
    try:
        bad = [a11y.Known("label-content-name-mismatch", "button[aria-label=", "x", "none", "x")]
        result = a11y.audit(page, axe_js, bad)
    finally:
        page.context.close()
    assert result["badSelectors"] == ["button[aria-label="]
    assert any("not valid CSS" in line for line in a11y.owned_problems({"axe": {"light": result}}, bad))


def test_phone_layout_names_what_widens_the_page_and_the_unscaled_figure(a11y_site):
    page, _ = a11y_site.open("wide.html")
    try:
        phone = a11y.phone_layout(page)
    finally:
        page.context.close()
    assert 0 < phone["width"] <= a11y.PHONE[0]
    assert phone["scrollWidth"] > phone["width"]
    assert any(line.startswith("code") for line in phone["sticking"]), phone["sticking"]
    assert phone["figures"] == 1 and len(phone["unscaled"]) == 1, phone


def test_phone_layout_accepts_code_that_scrolls_in_its_box_and_a_scaled_figure(a11y_site):
    page, _ = a11y_site.open("narrow.html")
    try:
        phone = a11y.phone_layout(page)
        with pytest.raises(RuntimeError, match="no colour-mode button"):
            a11y.set_theme(page, "dark")
    finally:
        page.context.close()
    assert phone["scrollWidth"] <= phone["width"] and phone["sticking"] == [], phone
    assert phone["figures"] == 1 and phone["unscaled"] == [], phone
