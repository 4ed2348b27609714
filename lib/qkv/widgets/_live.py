"""Live explorers: one JavaScript module per explorer, the same in JupyterLab and in the book (D2L 11.2 to 11.9).

Every explorer is written once, as a small ES module under
``lib/qkv/widgets/js/<name>.js`` that draws it and redraws it as the reader
moves a control. An explorer of pure arithmetic (a softmax, a kernel, a table
of sines, a cache's size, a resized image) recomputes in float64 in the page.
An explorer of a trained model (11.4's and 11.7's attention, 11.9's next
character) cannot run the model there: its Python side runs the model when the
cell runs (for the book, when the page is built) and embeds what it computed,
float32 values written exactly, and the page draws those numbers (11.9's page
still does the arithmetic after the model: temperature and top-k on the
logits). Its Python side (``qkv.widgets.<section>``) computes the data the
module needs (random draws, training points, a model's outputs) and calls
:func:`explorer`, which gives:

* in Jupyter, an ``anywidget`` widget (:func:`widget_class`): the data and each
  setting are traitlets, so ``panel.d = 64`` moves the slider and a moved slider
  changes ``panel.d``;
* while the book is built (:func:`qkv.widgets.static_mode`), a
  :class:`BookExplorer`, which shows as two outputs: the static figure (as
  before, with the cell's alt text, for print, PDF and readers without
  JavaScript) and a container holding the data, the module's text and
  ``js/book_host.js``, which runs the module in the page and hides the static
  figure once the explorer is drawn. The module's text is inlined because
  Chromium refuses ES module imports from ``file://`` pages; the page then
  imports it from a ``blob:`` URL and needs no server, no network and no other
  file;
* where ``anywidget`` cannot be imported, the static figure, after a one-line note.

A module is written against anywidget's API and nothing else: it exports
``default = {render({model, el})}`` and reads and writes its state with
``model.get``, ``model.set``, ``model.save_changes`` and ``model.on("change:<name>")``;
``book_host.js`` gives it the same calls in the book. It also exports its
pure compute functions, which ``tests/unit/qkv/test_live_explorers_js.py``
compares with ``qkv`` (1e-9 relative). CONTRIBUTING.md ("Live explorers") says how to add one.
"""

from __future__ import annotations

import functools
import html
import itertools
import json
import math
import re
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path

from qkv.widgets import static_figure, static_mode

__all__ = [
    "JS_DIR",
    "NO_ANYWIDGET_NOTE",
    "BookExplorer",
    "anywidget_or_none",
    "checksum",
    "explorer",
    "module_path",
    "module_text",
    "refresh_book",
    "refresh_page",
    "widget_class",
]

#: Where the explorers' modules live (shipped with the package: ``[tool.setuptools.package-data]``).
JS_DIR = Path(__file__).with_name("js")
#: The module that runs an explorer in a book page (inlined after every explorer's data).
HOST = "book_host"
#: What an explorer prints, once, where anywidget cannot be imported.
NO_ANYWIDGET_NOTE = (
    "anywidget is not installed, so here are fixed settings instead of the live explorer (pip install anywidget)."
)
#: The Python types a setting may have, and the traitlet of each.
_TRAITS = {bool: "Bool", int: "Int", float: "Float", str: "Unicode"}
_ids = itertools.count()


def module_path(name: str) -> Path:
    """The file of the explorer module ``name`` (``js/<name>.js``); a clear error if there is none."""
    if not isinstance(name, str) or not name.replace("_", "").isalnum():
        raise ValueError(f"an explorer module's name is letters, digits and _, got {name!r}")
    path = JS_DIR / f"{name}.js"
    if not path.is_file():
        known = sorted(p.stem for p in JS_DIR.glob("*.js") if p.stem != HOST)
        raise FileNotFoundError(f"no explorer module {path}; the modules are {known}")
    return path


@functools.cache
def module_text(name: str) -> str:
    """The source of the explorer module ``name``, read once per process."""
    return module_path(name).read_text(encoding="utf-8")


def anywidget_or_none():
    """The anywidget module, or None (after printing :data:`NO_ANYWIDGET_NOTE`) where it cannot be imported."""
    try:
        import anywidget
    except ImportError:
        print(NO_ANYWIDGET_NOTE)
        return None
    return anywidget


def _check_state(data: Mapping, settings: Mapping) -> None:
    if not isinstance(data, Mapping) or not isinstance(settings, Mapping):
        raise TypeError("an explorer's data and settings are dicts (names to JSON values)")
    for key, value in settings.items():
        if type(value) not in _TRAITS:
            raise TypeError(f"setting {key!r} is a {type(value).__name__}; settings are bool, int, float or str")
        if key == "data" or key.startswith("_"):
            raise ValueError(f"a setting may not be called {key!r} (data and names starting with _ are taken)")
    _json(dict(data))  # JSON only, and finite: the page reads it with JSON.parse


def checksum(text: str) -> str:
    """The CRC-32 of ``text`` (ASCII, as :func:`_json` writes it), as 8 hex digits: ``book_host.js`` computes the
    same over an explorer's state before it runs the explorer, so a page whose data were cut or edited after the
    build keeps its static figure and says why in the console."""
    return f"{zlib.crc32(text.encode('ascii')):08x}"


def _json(value) -> str:
    """``value`` as JSON that may sit inside a <script> element (no ``<``, so no ``</script>``), floats exact."""

    def finite(x):
        if isinstance(x, float) and not math.isfinite(x):
            raise ValueError(f"an explorer's data must be finite numbers, got {x}")
        if isinstance(x, dict):
            for v in x.values():
                finite(v)
        elif isinstance(x, list | tuple):
            for v in x:
                finite(v)

    finite(value)
    return json.dumps(value, allow_nan=False, separators=(",", ":")).replace("<", "\\u003c")


@functools.cache
def widget_class(name: str, settings: tuple[tuple[str, type], ...]):
    """The anywidget class of explorer ``name``: its module as ``_esm``, a ``data`` dict, and one synced traitlet
    per ``(setting, type)``. Made once per explorer and kind of settings."""
    import anywidget
    import traitlets

    attrs = {
        "__doc__": f"The live explorer {name!r} (qkv.widgets._live): module js/{name}.js, settings "
        + (", ".join(key for key, _ in settings) or "none"),
        "__module__": __name__,
        "_esm": module_text(name),
        "data": traitlets.Dict().tag(sync=True),
    }
    for key, kind in settings:
        attrs[key] = getattr(traitlets, _TRAITS[kind])().tag(sync=True)
    title = "".join(part.capitalize() for part in name.split("_"))
    return type(f"{title}Explorer", (anywidget.AnyWidget,), attrs)


class BookExplorer:
    """An explorer in the built book: the static ``figure``, then the live explorer that replaces it in the page.

    IPython shows it as two outputs (:meth:`_ipython_display_`): the figure, which Jupyter Book renders with the
    cell's ``mystnb: image: alt:`` text, and :meth:`html`, the container that ``js/book_host.js`` fills."""

    def __init__(self, name: str, data: Mapping, settings: Mapping, figure, label: str):
        _check_state(data, settings)
        module_path(name)
        self.name, self.data, self.settings, self.figure, self.label = name, dict(data), dict(settings), figure, label
        self.id = f"qkv-live-{next(_ids)}"

    def html(self) -> str:
        """The container, its state and the module's text as JSON, and the host script that mounts it."""
        state = _json({"data": self.data, **self.settings})
        source = _json(module_text(self.name))
        host = module_text(HOST)
        return (
            f'<div class="qkv-live" id="{self.id}" data-qkv-live="{self.name}" data-qkv-pending hidden'
            f' role="group" aria-label="{html.escape(self.label)}">\n'
            f'<script type="application/json" data-qkv="state" data-qkv-crc32="{checksum(state)}">{state}</script>\n'
            f'<script type="application/json" data-qkv="module">{source}</script>\n'
            f'</div>\n<script type="module">\n{host}</script>\n'
        )

    def _repr_html_(self) -> str:
        return self.html()

    def _ipython_display_(self):
        from IPython.display import HTML, display

        display(self.figure)
        display(HTML(self.html()))

    def __repr__(self) -> str:
        return f"BookExplorer({self.name!r}, settings={self.settings!r})"


#: An explorer's container and host script as :meth:`BookExplorer.html` writes them (Jupyter Book copies the HTML as
#: it is): the groups before and after the module's JSON text and the host's text.
_CONTAINER = re.compile(
    r'(<div class="qkv-live" id="[^"]*" data-qkv-live="(?P<name>\w+)"[^>]*>\n'
    r'<script type="application/json" data-qkv="state"[^>]*>[^<]*</script>\n'
    r'<script type="application/json" data-qkv="module">)(?P<module>[^<]*)'
    r'(</script>\n</div>\n<script type="module">\n)(?P<host>.*?)(</script>)',
    re.S,
)


def refresh_page(text: str) -> str:
    """``text``, a built page, with each explorer's module and host script replaced by the current files.

    A page's outputs come from Jupyter Book's execution cache, which is keyed by the page's code alone: without
    this, a module edited since the page last ran would not reach the book. The data stay as the page computed them.
    """

    def current(match: re.Match) -> str:
        return match[1] + _json(module_text(match["name"])) + match[4] + module_text(HOST) + match[6]

    return _CONTAINER.sub(current, text)


def refresh_book(html_dir: Path) -> list[Path]:
    """Apply :func:`refresh_page` to every page of the built book under ``html_dir``; the pages rewritten."""
    rewritten = []
    for path in sorted(Path(html_dir).rglob("*.html")):
        text = path.read_text(encoding="utf-8")
        if 'class="qkv-live"' in text and (new := refresh_page(text)) != text:
            path.write_text(new, encoding="utf-8")
            rewritten.append(path)
    return rewritten


def explorer(
    name: str,
    data: Callable[[], Mapping],
    settings: Mapping,
    static: Callable[[], object],
    label: str,
):
    """The live explorer ``name`` as this setting wants it (see the module's docstring).

    Args:
        name: the module, ``js/<name>.js``.
        data: makes the dict of JSON values the module reads as ``model.get("data")`` (called unless the static
            figure alone is shown).
        settings: the controls' first values (bool, int, float or str), each a traitlet in Jupyter.
        static: draws the static figure (called in the book and without anywidget).
        label: what the explorer is, for screen readers (its group's ``aria-label``).

    Returns:
        a widget in Jupyter, a :class:`BookExplorer` while the book is built, the static figure without anywidget.
    """
    module_path(name)
    if static_mode():
        return BookExplorer(name, data(), settings, static_figure(static()), label)
    anywidget = anywidget_or_none()
    if anywidget is None:
        return static_figure(static())
    values = dict(data())
    _check_state(values, settings)
    cls = widget_class(name, tuple((key, type(value)) for key, value in settings.items()))
    return cls(data=values, **settings)
