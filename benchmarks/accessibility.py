"""Pages every reader can use (issue 42, section 2): axe-core's violations per page in both colour modes, and each
page's width on a phone, for one or more built editions of the book.

Each page is opened once, served on 127.0.0.1 by the test suite's reader (``tests/support/browser.py``: Debian's
Chromium, headless, no request leaves the book) and inspected exactly as the book tier inspects it
(``tests/support/a11y.py``): axe-core (the version pinned in ``publish/vendor.py``) with its default rules in the
theme's light colour mode, and with the rules that read colours (``a11y.COLOUR_RULES``) in its dark mode; then the
page at 390 px wide. Violations are counted by element (axe's nodes):
serious or critical in what the course owns, serious or critical that belong to the theme
(``tests/book/axe_theme_known.toml``), moderate and minor.

    .venv/bin/python benchmarks/accessibility.py [--html DIR ...] [--out benchmarks/results/accessibility.md]

``--html`` defaults to every edition that is built: ``make book``'s student and solutions editions and their smoke
builds (the test suite builds the student one; ``QKV_TRAIN_SMOKE=2 make book EDITION=solutions`` the other). It
prints the tables and writes them to ``--out``; the exit status is 1 if a page has a serious or critical violation
that the course owns or scrolls sideways on a phone.
"""

from __future__ import annotations

import argparse
import datetime
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from course import notebooks as nbs  # noqa: E402
from tests.support import a11y, browser  # noqa: E402

CANDIDATES = (
    ROOT / "_build" / "student" / "_build" / "html",  # make book
    ROOT / "_build" / "solutions" / "_build" / "html",  # make book EDITION=solutions
    ROOT / "_build" / "smoke" / "student" / "_build" / "html",  # the test suite's smoke build
    ROOT / "_build" / "smoke" / "solutions" / "_build" / "html",  # QKV_TRAIN_SMOKE=2 make book EDITION=solutions
)


def inspect_book(html: Path, chromium, known: list[a11y.Known], axe_js: str) -> dict[str, dict]:
    """Every page of the table of contents in ``html``, inspected: toc name -> :func:`tests.support.a11y.inspect`."""
    out = {}
    with browser.Reader(html, browser=chromium) as reader:
        for name in nbs.toc_files():
            page, visit = reader.open(f"{name}.html")
            try:
                if visit.status != 200:
                    raise SystemExit(f"{html}/{name}.html: HTTP {visit.status}; is the book fully built?")
                out[name] = a11y.inspect(page, axe_js, known)
            finally:
                page.context.close()
    return out


def table(reports: dict[str, dict]) -> list[str]:
    """The per-page table: counts per colour mode, and the page's width at 390 px."""
    lines = [
        "| page | light: owned | light: theme's | light: moderate / minor | dark: owned | dark: theme's "
        "| dark: moderate / minor | width at 390 px | figures not scaled |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    total = Counter()
    for name, report in reports.items():
        c = a11y.counts(report)
        phone = report["phone"]
        cells = []
        for theme in a11y.THEMES:
            cells += [c[theme]["owned"], c[theme]["known"], f"{c[theme]['moderate']} / {c[theme]['minor']}"]
            for key in ("owned", "known", "moderate", "minor"):
                total[theme, key] += c[theme][key]
        wide = phone["scrollWidth"] > phone["width"]
        total["wide"] += wide
        total["unscaled"] += len(phone["unscaled"])
        width = f"**{phone['scrollWidth']}**" if wide else str(phone["scrollWidth"])
        lines.append(f"| {name} | " + " | ".join(map(str, cells)) + f" | {width} | {len(phone['unscaled'])} |")
    cells = []
    for theme in a11y.THEMES:
        t = {key: total[theme, key] for key in ("owned", "known", "moderate", "minor")}
        cells += [t["owned"], t["known"], f"{t['moderate']} / {t['minor']}"]
    lines.append(
        f"| **all {len(reports)} pages** | "
        + " | ".join(f"**{x}**" for x in cells)
        + f" | {total['wide']} page(s) too wide | {total['unscaled']} |"
    )
    return lines


def rules(reports: dict[str, dict], known: list[a11y.Known]) -> list[str]:
    """Each rule axe reported: its impact, elements per colour mode, pages, and whose it is."""
    seen: dict[tuple[str, str], dict] = {}
    for name, report in reports.items():
        for theme, result in report["axe"].items():
            for v in result["violations"]:
                row = seen.setdefault((v["rule"], v["impact"]), {"light": 0, "dark": 0, "pages": set(), "who": set()})
                row[theme] += len(v["nodes"])
                row["pages"].add(name)
                for node in v["nodes"]:
                    row["who"].add(known[node["known"]].owner.split(" (")[0] if node["known"] >= 0 else "the course")
    lines = ["| rule | impact | elements (light / dark) | pages | whose |", "|---|---|---:|---:|---|"]
    for (rule, impact), row in sorted(seen.items(), key=lambda kv: (-_rank(kv[0][1]), kv[0][0])):
        who = "; ".join(sorted(row["who"])) if impact in a11y.FAILING else "not counted (below serious)"
        lines.append(f"| {rule} | {impact} | {row['light']} / {row['dark']} | {len(row['pages'])} | {who} |")
    return lines


def _rank(impact: str) -> int:
    return ("minor", "moderate", "serious", "critical").index(impact) if impact else -1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--html", type=Path, nargs="+", help="built book folders (default: every one that exists)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "accessibility.md")
    args = parser.parse_args(argv)
    folders = args.html or [c for c in CANDIDATES if (c / "index.html").exists()]
    if not folders:
        raise SystemExit("no built book found: make book (or make book EDITION=solutions), or give --html DIR")
    known, axe_js = a11y.load_known(), a11y.axe_source()
    from playwright.sync_api import sync_playwright

    sections, failed = [], False
    with sync_playwright() as playwright:
        chromium = browser.launch(playwright)
        try:
            for html in folders:
                started = datetime.datetime.now(datetime.UTC)
                reports = inspect_book(html, chromium, known, axe_js)
                where = html.resolve().relative_to(ROOT) if html.resolve().is_relative_to(ROOT) else html
                version = next(iter(reports.values()))["axe"]["light"]["axe"]
                sections += [
                    f"## `{where}`",
                    "",
                    f"{started:%Y-%m-%d %H:%M} UTC; axe-core {version} (default rules: WCAG 2.x A and AA and best "
                    f"practices), Chromium {chromium.version}, {len(reports)} pages. Elements counted per rule.",
                    "",
                    *table(reports),
                    "",
                    *rules(reports, known),
                    "",
                ]
                failed |= any(a11y.owned_problems(r, known) for r in reports.values())
                failed |= any(r["phone"]["scrollWidth"] > r["phone"]["width"] for r in reports.values())
        finally:
            chromium.close()
    named = (f.resolve().relative_to(ROOT) if f.resolve().is_relative_to(ROOT) else f for f in folders)
    command = "    .venv/bin/python benchmarks/accessibility.py --html " + " ".join(map(str, named))
    text = "\n".join(
        [
            "# Pages every reader can use: axe-core and a phone's width, per page",
            "",
            "Regenerate with:",
            "",
            command,
            "",
            "Columns: *owned*, serious or critical violations in what the course owns (the book tier fails on",
            "any); *theme's*, serious or critical ones listed in `tests/book/axe_theme_known.toml` with their upstream",
            "issue; *moderate / minor*, reported, not failed on; *width at 390 px*,",
            "`document.documentElement.scrollWidth` of the page in a 390 px window (more than 390: the whole page",
            "scrolls sideways).",
            "",
            *sections,
        ]
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n")
    print(text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
