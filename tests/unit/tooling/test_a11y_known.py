"""The list of the theme's own accessibility violations (tests/book/axe_theme_known.toml), as tests/support/a11y.py
reads it: every entry names its rule, a selector, its owner and its upstream issue; a malformed one stops the run."""

from __future__ import annotations

import pytest

from tests.support import a11y

_GOOD = """
[[known]]
rule = "label-content-name-mismatch"
selector = 'button.search-button__button[aria-label="Search"]'
owner = "pydata-sphinx-theme 0.17.1"
upstream = "https://github.com/pydata/pydata-sphinx-theme/issues/1499"
why = "The button shows Ctrl+K."
"""


def _write(tmp_path, text: str):
    path = tmp_path / "known.toml"
    path.write_text(text)
    return path


def test_the_books_list_reads_and_every_entry_is_complete():
    known = a11y.load_known()
    assert known, "the theme's known violations are listed (an empty list would make the file pointless)"
    for entry in known:
        assert entry.rule and entry.selector and entry.owner and entry.why
        assert entry.upstream.startswith(("https://", "none")), entry
    pairs = [(k.rule, k.selector) for k in known]
    assert len(pairs) == len(set(pairs)), "an entry is listed twice"


def test_a_good_entry_is_read_as_written(tmp_path):
    [entry] = a11y.load_known(_write(tmp_path, _GOOD))
    assert entry == a11y.Known(
        rule="label-content-name-mismatch",
        selector='button.search-button__button[aria-label="Search"]',
        owner="pydata-sphinx-theme 0.17.1",
        upstream="https://github.com/pydata/pydata-sphinx-theme/issues/1499",
        why="The button shows Ctrl+K.",
    )


@pytest.mark.parametrize(
    "edit, message",
    [
        (
            lambda t: t.replace('upstream = "https://github.com/pydata/pydata-sphinx-theme/issues/1499"\n', ""),
            "missing",
        ),
        (lambda t: t + 'pages = ["book/intro"]\n', "unknown"),
        (lambda t: t.replace('why = "The button shows Ctrl+K."', 'why = "  "'), "empty"),
        (lambda t: t.replace("https://github.com/pydata/pydata-sphinx-theme/issues/1499", "#1499"), "upstream must be"),
        (lambda t: t.replace("[[known]]", "[[ignored]]"), "only \\[\\[known\\]\\]"),
        (lambda t: t.replace("rule =", "rule = = "), "cannot read"),
    ],
)
def test_a_malformed_entry_stops_with_what_is_wrong(tmp_path, edit, message):
    with pytest.raises(ValueError, match=message):
        a11y.load_known(_write(tmp_path, edit(_GOOD)))


def test_counts_and_owned_problems_split_by_impact_and_by_owner():
    node = {"target": "button.x", "html": "<button>", "known": -1}
    serious = {"rule": "r1", "impact": "serious", "help": "h", "helpUrl": "u", "nodes": [node, {**node, "known": 0}]}
    report = {
        "axe": {
            "light": {
                "axe": "4.14.1",
                "badSelectors": [],
                "violations": [
                    serious,
                    {"rule": "r2", "impact": "moderate", "help": "h", "helpUrl": "u", "nodes": [node]},
                    {"rule": "r3", "impact": "critical", "help": "h", "helpUrl": "u", "nodes": [{**node, "known": 2}]},
                ],
            }
        }
    }
    assert a11y.counts(report) == {"light": {"owned": 1, "known": 2, "moderate": 1, "minor": 0}}
    assert a11y.known_used(report) == {0, 2}
    problems = a11y.owned_problems(report, [])
    assert len(problems) == 1 and problems[0].startswith("[light] serious r1") and "button.x" in problems[0]
    assert a11y.axe_version(report) == "4.14.1"
