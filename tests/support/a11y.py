"""Pages every reader can use: axe-core's accessibility audit and a phone-width check, run in an open page.

The book tier opens each page of the built book once in Chromium (``tests/book/test_book_browser.py``) and, in the
same visit, calls :func:`inspect`: it injects axe-core (npm's ``axe-core`` at the version pinned in
``publish/vendor.py``, read from the vendor cache, never from a CDN), audits the page in the theme's light and dark
colour modes (switched with the theme's own button, as a reader does), then narrows the window to a phone's width
and measures whether the page itself scrolls sideways.

Violations that belong to the theme or its extensions, not to the course, are listed in
``tests/book/axe_theme_known.toml`` (:data:`KNOWN_FILE`), each with the rule, a CSS selector for exactly the
elements it covers, and the upstream issue that tracks it. axe reports each violating element (a node); a node is
*known* when an entry of that rule matches it, and *owned* by the course otherwise. Automated checks find only part
of what makes a page hard to use; they keep the part they can find from coming back.

Typical use::

    known = a11y.load_known()
    page, visit = reader.open("book/intro.html")
    report = a11y.inspect(page, a11y.axe_source(), known)
    assert a11y.owned_problems(report) == []
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

KNOWN_FILE = Path(__file__).resolve().parents[1] / "book" / "axe_theme_known.toml"
THEMES = ("light", "dark")
#: The rules of axe-core that read colours: all that the dark colour mode can change.
COLOUR_RULES = ("color-contrast", "link-in-text-block")
#: The impacts that fail a page (axe's scale: minor, moderate, serious, critical).
FAILING = ("serious", "critical")
PHONE = (390, 844)  # a phone's CSS pixels (an iPhone 12-15), width x height
_KNOWN_KEYS = {"rule", "selector", "owner", "upstream", "why"}

# Runs axe on the whole document with its default rules (every WCAG 2.x A/AA rule and its best practices; the
# experimental ones off) and returns the violations, each node with the index of the known entry that covers it.
# axe preloads every stylesheet as a CSSOM for one experimental rule (css-orientation-lock), which costs seconds on a
# page of the book and is never used; it still preloads media, for the rules about audio and video.
_AUDIT_JS = """async ([known, rules]) => {
  const badSelectors = known.map(entry => entry.selector).filter(selector => {
    try { document.querySelector(selector); return false; } catch (err) { return true; }
  });
  const matches = (el, entry) => !badSelectors.includes(entry.selector) && el.matches(entry.selector);
  const options = {resultTypes: ['violations'], preload: {assets: ['media']}};
  if (rules) options.runOnly = {type: 'rule', values: rules};
  const results = await axe.run(document, options);
  const violations = results.violations.map(v => ({
    rule: v.id, impact: v.impact, help: v.help, helpUrl: v.helpUrl,
    nodes: v.nodes.map(n => {
      const target = n.target.length === 1 && typeof n.target[0] === 'string' ? n.target[0] : null;
      const el = target ? document.querySelector(target) : null;
      const index = el ? known.findIndex(entry => entry.rule === v.id && matches(el, entry)) : -1;
      return {target: n.target.flat().join(' >> '), html: n.html.slice(0, 240), known: index};
    }),
  }));
  return {violations, badSelectors, axe: axe.version};
}"""

# Switches the theme's colour mode with its own button (pydata-sphinx-theme cycles auto -> dark -> light), as a
# reader does; then lets the colour transitions end, so that contrast is measured on the final colours.
_THEME_JS = """async (want) => {
  const root = document.documentElement;
  const button = document.querySelector('.theme-switch-button');
  if (!button) return 'no colour-mode button (.theme-switch-button)';
  for (let i = 0; i < 3 && root.dataset.theme !== want; i++) button.click();
  const finite = document.getAnimations().filter(a => a.effect && a.effect.getTiming().iterations !== Infinity);
  await Promise.race([Promise.all(finite.map(a => a.finished.catch(() => null))),
                      new Promise(r => setTimeout(r, 2000))]);
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  return root.dataset.theme;
}"""

# The page's own width against the window's, the outermost elements that stick out of it (those not inside a box
# that scrolls or clips, nor fixed to the window as the theme's closed drawers are), and every figure's width
# against the box that holds it (a figure must be scaled down to fit, not cut off or scrolled).
_PHONE_JS = """() => {
  const root = document.documentElement, limit = root.clientWidth;
  const contained = el => {
    for (let p = el; p && p !== root; p = p.parentElement) {
      const style = getComputedStyle(p);
      if (style.position === 'fixed') return true;
      if (p !== el && p !== document.body && /(auto|scroll|hidden|clip)/.test(style.overflowX)) return true;
    }
    return false;
  };
  const describe = el => {
    const r = el.getBoundingClientRect();
    const name = el.tagName.toLowerCase() + [...el.classList].slice(0, 3).map(c => '.' + c).join('');
    return `${name} (${Math.round(r.left)}..${Math.round(r.right)} px): ${el.textContent.trim().slice(0, 60)}`;
  };
  let sticking = [];
  if (root.scrollWidth > limit) {
    const out = [...document.body.querySelectorAll('*')].filter(el => {
      const r = el.getBoundingClientRect();
      return r.width > 0 && r.right > limit + 0.5 && !contained(el);
    });
    sticking = out.filter(el => !out.includes(el.parentElement)).slice(0, 10).map(describe);
  }
  const article = document.querySelector('article.bd-article') || document.body;
  const figures = [...article.querySelectorAll('img, .cell_output svg')].filter(el => !el.closest('button'));
  const unscaled = figures.filter(el => {
    const r = el.getBoundingClientRect();
    if (r.width === 0) return false;
    let box = el.parentElement;
    while (box && box !== root && !/(auto|scroll|hidden|clip)/.test(getComputedStyle(box).overflowX)) {
      box = box.parentElement;
    }
    const room = box && box !== root ? box.clientWidth : limit;
    return r.width > room + 1 || r.right > limit + 0.5;
  }).map(el => `${el.getAttribute('src') || 'inline svg'} (${Math.round(el.getBoundingClientRect().width)} px wide)`);
  return {width: limit, scrollWidth: root.scrollWidth, sticking, figures: figures.length, unscaled};
}"""


@dataclass(frozen=True)
class Known:
    """One violation that belongs to the theme or an extension: axe's ``rule`` on the elements ``selector`` matches."""

    rule: str
    selector: str
    owner: str
    upstream: str
    why: str


def load_known(path: Path = KNOWN_FILE) -> list[Known]:
    """The entries of the known-violations file, checked: each has exactly the keys of :class:`Known`, non-empty."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise ValueError(f"{path}: cannot read the known theme violations: {err}") from err
    unexpected = set(data) - {"known"}
    if unexpected:
        raise ValueError(f"{path}: only [[known]] tables belong here, found {sorted(unexpected)}")
    out = []
    for i, entry in enumerate(data.get("known", []), start=1):
        keys = set(entry)
        if keys != _KNOWN_KEYS:
            raise ValueError(
                f"{path}: entry {i} needs exactly {sorted(_KNOWN_KEYS)}; missing {sorted(_KNOWN_KEYS - keys)}, "
                f"unknown {sorted(keys - _KNOWN_KEYS)}"
            )
        empty = sorted(key for key in _KNOWN_KEYS if not isinstance(entry[key], str) or not entry[key].strip())
        if empty:
            raise ValueError(f"{path}: entry {i} ({entry.get('rule')!r}) has empty or non-text {empty}")
        if not entry["upstream"].startswith(("https://", "none")):
            raise ValueError(
                f"{path}: entry {i}: upstream must be the issue's https:// address, or start with 'none' and say "
                f"where you looked; got {entry['upstream']!r}"
            )
        out.append(Known(**{key: entry[key].strip() for key in _KNOWN_KEYS}))
    return out


def axe_source() -> str:
    """The text of the pinned ``axe.min.js`` (fetched into the vendor cache on first use: ``publish/vendor.py``)."""
    from publish import vendor

    return vendor.axe_core_js().read_text(encoding="utf-8")


def audit(page, axe_js: str, known: list[Known], rules: tuple[str, ...] | None = None) -> dict:
    """axe's violations on ``page`` as it is now (injecting axe first if the page lacks it): of its default rules, or
    of ``rules`` alone."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.add_script_tag(content=axe_js)
    entries = [{"rule": k.rule, "selector": k.selector} for k in known]
    return page.evaluate(_AUDIT_JS, [entries, list(rules) if rules else None])


def set_theme(page, theme: str) -> None:
    """Put the page in the theme's ``theme`` colour mode, with the theme's own button; an error if it cannot."""
    if theme not in THEMES:
        raise ValueError(f"unknown colour mode {theme!r}: choose one of {THEMES}")
    got = page.evaluate(_THEME_JS, theme)
    if got != theme:
        raise RuntimeError(f"could not switch the page to its {theme} colour mode: {got}")


def phone_layout(page, size: tuple[int, int] = PHONE) -> dict:
    """Narrow the window to ``size`` and measure: the page's width against the window's, what sticks out, and the
    figures that are not scaled to fit."""
    page.set_viewport_size({"width": size[0], "height": size[1]})
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    return page.evaluate(_PHONE_JS)


def inspect(page, axe_js: str, known: list[Known], phone_shot: Path | None = None) -> dict:
    """Audit ``page`` in each colour mode (light with every default rule, then dark with the rules that depend on
    colour, :data:`COLOUR_RULES`: the others read the page's structure, which a colour mode does not change), then
    back in light mode measure it at a phone's width (:func:`phone_layout`) and, if ``phone_shot`` is given,
    photograph the whole page there. JSON-serialisable."""
    report: dict = {"axe": {}}
    for theme in THEMES:
        set_theme(page, theme)
        report["axe"][theme] = audit(page, axe_js, known, None if theme == "light" else COLOUR_RULES)
    set_theme(page, "light")
    report["phone"] = phone_layout(page)
    if phone_shot is not None:
        phone_shot.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(phone_shot), full_page=True)
    return report


def owned_problems(report: dict, known: list[Known]) -> list[str]:
    """One line per serious or critical violation that no known entry covers, in either colour mode."""
    out = []
    for theme, result in report["axe"].items():
        out += [f"[{theme}] a known entry's selector is not valid CSS: {s}" for s in result["badSelectors"]]
        for v in result["violations"]:
            if v["impact"] not in FAILING:
                continue
            for node in v["nodes"]:
                if node["known"] < 0:
                    out.append(
                        f"[{theme}] {v['impact']} {v['rule']} ({v['help']}; {v['helpUrl']}) at {node['target']}: "
                        f"{node['html']}"
                    )
    return out


def counts(report: dict) -> dict[str, dict[str, int]]:
    """Per colour mode, the number of violating elements: serious or critical owned by the course, serious or
    critical known (the theme's), moderate, minor."""
    out = {}
    for theme, result in report["axe"].items():
        tally = {"owned": 0, "known": 0, "moderate": 0, "minor": 0}
        for v in result["violations"]:
            for node in v["nodes"]:
                if v["impact"] in FAILING:
                    tally["known" if node["known"] >= 0 else "owned"] += 1
                elif v["impact"] in tally:
                    tally[v["impact"]] += 1
        out[theme] = tally
    return out


def known_used(report: dict) -> set[int]:
    """The indices of the known entries that covered at least one node of ``report``."""
    return {
        node["known"]
        for result in report["axe"].values()
        for v in result["violations"]
        for node in v["nodes"]
        if node["known"] >= 0
    }


def axe_version(report: dict) -> str:
    """The version of axe-core that made ``report`` (as axe itself says)."""
    return next(iter(report["axe"].values()))["axe"]
