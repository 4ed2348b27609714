"""Tests for qkv.widgets._live, what every live explorer shares: one ES module per explorer, an anywidget widget in
Jupyter, the static figure and the page's container while the book is built, the static figure without anywidget."""

import json
import re
import sys
import zlib
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import anywidget  # noqa: E402
import IPython.display  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from qkv.widgets import _live as live  # noqa: E402

pytestmark = pytest.mark.usefixtures("close_figures")

#: Every explorer of the book, one module each (D2L 11.2 to 11.9).
MODULES = ("nadaraya_watson", "softmax_scaling", "bahdanau_decoding", "kv_cache", "positional_encoding",
           "cross_attention", "vit_patches", "sampling")  # fmt: skip


def _figure():
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    return fig


def _explorer(**settings):
    return live.explorer(
        "softmax_scaling",
        data=lambda: {"values": [0.5, 1e-300, -2.0], "note": "</script><script>alert(1)</script>"},
        settings=settings or {"d": 4, "scaled": True},
        static=_figure,
        label='a "test" explorer',
    )


def test_every_module_is_an_anywidget_module_with_a_render_function():
    found = {p.stem for p in live.JS_DIR.glob("*.js")} - {live.HOST}
    assert found == set(MODULES), "a module without its checks here, or a listed one missing"
    for name in MODULES:
        text = live.module_text(name)
        assert re.search(r"^export default \{ render \};$", text, re.M), f"{name}.js: anywidget's default export"
        assert not re.search(r"^\s*import\b", text, re.M), f"{name}.js must import nothing (it runs from a blob: URL)"


def test_module_names_are_checked_and_missing_modules_named():
    with pytest.raises(ValueError, match="letters, digits and _"):
        live.module_path("../etc/passwd")
    with pytest.raises(FileNotFoundError, match="no explorer module .*nope.js; the modules are .*softmax_scaling"):
        live.module_path("nope")


def test_in_jupyter_an_explorer_is_an_anywidget_with_synced_data_and_settings(jupyter):
    panel = _explorer()
    assert isinstance(panel, anywidget.AnyWidget)
    assert panel._esm == live.module_text("softmax_scaling")
    assert panel.data["values"] == [0.5, 1e-300, -2.0]
    assert (panel.d, panel.scaled) == (4, True)
    for name in ("data", "d", "scaled"):
        assert panel.trait_metadata(name, "sync"), f"{name} is synced with the page"
    panel.d = 64
    assert panel.get_state()["d"] == 64, "setting a traitlet changes the state the page reads"
    again = _explorer()
    assert type(again).__mro__[1] is type(panel).__mro__[1], "one class per explorer, made once"


def test_without_anywidget_an_explorer_is_its_static_figure_after_a_note(jupyter, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "anywidget", None)  # `import anywidget` raises ImportError
    made = []
    fig = live.explorer("softmax_scaling", data=lambda: made.append(1), settings={}, static=_figure, label="x")
    assert isinstance(fig, Figure) and not plt.fignum_exists(fig.number)
    assert made == [], "the data are not made for a figure that does not show them"
    assert capsys.readouterr().out == live.NO_ANYWIDGET_NOTE + "\n"


def test_in_the_book_an_explorer_is_the_figure_then_the_container(book_build, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "anywidget", None)  # the book needs no anywidget
    explorer = _explorer()
    assert isinstance(explorer, live.BookExplorer) and isinstance(explorer.figure, Figure)
    assert capsys.readouterr().out == "", "the printed book shows no note"
    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj: shown.append(obj))
    explorer._ipython_display_()
    assert len(shown) == 2 and shown[0] is explorer.figure, "first the figure (Jupyter Book gives it the cell's alt)"
    assert isinstance(shown[1], IPython.display.HTML) and shown[1].data == explorer.html(), "then the container"


def test_the_containers_html_holds_the_state_and_module_safely(book_build):
    first, second = _explorer(), _explorer(d=16, scaled=False)
    assert first.id != second.id
    page = first.html()
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", page, re.S)
    assert [attrs for attrs, _ in scripts] == [
        f' type="application/json" data-qkv="state" data-qkv-crc32="{zlib.crc32(scripts[0][1].encode()):08x}"',
        ' type="application/json" data-qkv="module"',
        ' type="module"',
    ], "the note's </script> must not end a script early; the state's CRC-32 beside it"
    state = json.loads(scripts[0][1])
    assert state == {"data": {"values": [0.5, 1e-300, -2.0], "note": "</script><script>alert(1)</script>"}, "d": 4,
                     "scaled": True}  # fmt: skip
    assert json.loads(scripts[1][1]) == live.module_text("softmax_scaling")
    assert scripts[2][1].strip() == live.module_text(live.HOST).strip()
    assert 'aria-label="a &quot;test&quot; explorer"' in page
    assert re.search(r'<div class="qkv-live" id="qkv-live-\d+" data-qkv-live="softmax_scaling" data-qkv-pending hidden',
                     page)  # fmt: skip


@pytest.mark.parametrize(
    "data, settings, error, message",
    [
        ({"x": float("nan")}, {}, ValueError, "finite"),
        ({"x": [1.0, float("inf")]}, {}, ValueError, "finite"),
        ({"x": object()}, {}, TypeError, "not JSON serializable"),
        ({}, {"d": [1, 2]}, TypeError, "bool, int, float or str"),
        ({}, {"data": 1}, ValueError, "may not be called 'data'"),
        ({}, {"_esm": "x"}, ValueError, "may not be called '_esm'"),
    ],
)
def test_bad_data_or_settings_raise_clear_errors(book_build, data, settings, error, message):
    with pytest.raises(error, match=message):
        live.explorer("softmax_scaling", data=lambda: data, settings=settings, static=_figure, label="x")


def test_a_built_page_gets_its_explorers_current_javascript(book_build, tmp_path):
    """The execution cache may hold a page run before its module changed: the build puts the current files in."""
    first, second = _explorer(), _explorer(d=16, scaled=False)
    current = f"<html><body>\n<p>text</p>\n{first.html()}<p>between</p>\n{second.html()}</body></html>\n"
    old_module = json.dumps("export default { render() {} }; // an older version").replace("<", "\\u003c")
    stale = current.replace(json.dumps(live.module_text("softmax_scaling")).replace("<", "\\u003c"), old_module)
    stale = stale.replace(live.module_text(live.HOST), "console.log('an older host');\n")
    assert stale.count("an older") == 4, "both explorers were made stale"
    assert live.refresh_page(stale) == current
    assert live.refresh_page(current) == current
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "page.html").write_text(stale)
    (tmp_path / "book" / "other.html").write_text("<p>no explorer</p>")
    assert live.refresh_book(tmp_path) == [tmp_path / "book" / "page.html"]
    assert (tmp_path / "book" / "page.html").read_text() == current
    assert live.refresh_book(tmp_path) == [], "nothing is rewritten twice"


def test_the_book_build_refreshes_the_explorers():
    from publish import build_book

    assert "live.refresh_book(html)" in Path(build_book.__file__).read_text()
    assert "</script" not in live.module_text(live.HOST).lower(), "the host's text sits inside a <script>"


@pytest.mark.parametrize("text", ["", "a", '{"data":{"x":[0.5,1e-300]},"d":4}', "\\u003c/script>" * 50])
def test_the_page_computes_the_checksum_the_build_wrote(text):
    """book_host.js's CRC-32 equals Python's, which the build writes beside the state; one changed character
    changes it (so a page cut or edited since its build keeps its static figure)."""
    from tests.support.js_modules import call_module

    edited = text[:-1] + ("b" if text[-1:] != "b" else "c")
    assert call_module("book_host", [("crc32", [text]), ("crc32", [edited])]) == [live.checksum(text),
                                                                                  live.checksum(edited)]  # fmt: skip
    assert live.checksum(text) == f"{zlib.crc32(text.encode()):08x}" != live.checksum(edited)
