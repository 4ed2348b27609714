"""Build the book in one of its two editions from the one source (``make book [EDITION=...]``).

* ``student`` (the default, public): stub and test cells, and cells tagged
  ``uses-answers`` (demos that call the student's functions), are shown without
  output and are not executed (myst-nb's ``skip-execution`` tag); every other
  cell is executed. Each page's download button gives the student's notebook
  (:func:`write_downloads`), the one every door gives.
* ``solutions`` (for instructors; :mod:`autograder.editions`, which passes its
  ``transform`` to :func:`build`): stubs are filled from ``solutions/`` by the
  assembler, each written question's model answer and rubric
  (``autograder/sections/<module>/rubric.toml``) follows its answer cell in an
  admonition, and every cell is executed. This package never imports the
  grader (the import-linter contract in ``pyproject.toml``).

The sources are staged under ``_build/<edition>/src`` (only files whose text
changed are rewritten, so Sphinx and Jupyter Book's execution cache keep a
warm rebuild short), MathJax is copied in so the book reads offline, and
Jupyter Book writes the site to ``_build/<edition>/html``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import nbformat
from filelock import FileLock

from course import notebooks as nbs
from course.section import Section, sections
from course.student_notebook import student_notebook
from publish import execute
from publish.vendor import mathjax_dir
from qkv._lock import acquire
from qkv.widgets import BOOK_BUILD_ENV
from qkv.widgets import _live as live

ROOT = nbs.ROOT
EDITIONS = ("student", "solutions")
#: Where a build records the library its pages' outputs came from (:func:`library_digest`), beside the build.
OUTPUTS_STAMP = ".qkv-outputs"
RAISES = "raises-exception"  # the tag that lets a cell fail without stopping the notebook
STAGED_FILES = ("_config.yml", "_toc.yml", "references.bib")


#: What turns a graded page into its edition's version: ``transform(notebook, section) -> notebook``. The student
#: edition has none (stubs stay stubs); the solutions edition's lives on the instructors' side
#: (:mod:`autograder.editions`), so that this package, which ships in the public tree, never imports the grader.
Transform = Callable[[nbformat.NotebookNode, Section], nbformat.NotebookNode]


def stage(edition: str, dest: Path, transform: Transform | None = None) -> list[Path]:
    """Write the sources of ``edition`` under ``dest`` (each graded page through ``transform``, when given);
    return the paths written."""
    _check_edition(edition, transform)
    written = []
    for name in STAGED_FILES:
        if nbs.write_text_if_changed(dest / name, (ROOT / name).read_text(encoding="utf-8")):
            written.append(dest / name)
    graded = {s.path: s for s in sections()}
    for src in sorted(nbs.BOOK.rglob("*")):
        if src.is_dir() or ".ipynb_checkpoints" in src.parts:
            continue
        target = dest / src.relative_to(ROOT)
        if src in graded:
            nb = nbs.read(src)
            if transform is not None:
                nb = transform(nb, graded[src])
            else:
                for cell in nb.cells:
                    if nbs.role(cell) in ("stub", "test") or nbs.USES_ANSWERS in cell.metadata.get("tags", []):
                        tags = cell.metadata.setdefault("tags", [])
                        if "skip-execution" not in tags:
                            tags.append("skip-execution")
            changed = nbs.write_if_changed(nb, target, fmt="md:myst")
        elif src.suffix in (".md", ".yml", ".bib", ".txt", ".py"):
            changed = nbs.write_text_if_changed(target, src.read_text(encoding="utf-8"))
        else:
            changed = not target.exists() or target.read_bytes() != src.read_bytes()
            if changed:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, target)
        if changed:
            written.append(target)
    # MathJax goes to _vendor/ (html_static_path in _config.yml), not _static/: Jupyter Book adds every .js
    # file under a source _static/ folder to every page, which would load all of MathJax's components at once.
    static = dest / "_vendor" / "mathjax"
    if not (static / "tex-chtml-full.js").exists():
        shutil.copytree(mathjax_dir(), static, dirs_exist_ok=True)
    shutil.rmtree(dest / "_static", ignore_errors=True)  # it only ever held MathJax; even an empty one breaks pages
    return written


def _check_edition(edition: str, transform: Transform | None) -> None:
    if edition not in EDITIONS:
        raise SystemExit(f"unknown edition {edition!r}: choose one of {', '.join(EDITIONS)}")
    if edition == "solutions" and transform is None:
        raise SystemExit(
            "[book] the solutions edition needs the instructors' repository, and is built there: "
            "make book EDITION=solutions (python -m autograder.editions). This package builds the student edition "
            "(a public tree has no solutions/): make book"
        )


def default_out(edition: str) -> Path:
    """Where ``edition`` is built: ``_build/<edition>``, or ``_build/smoke/<edition>`` in a smoke run.

    A smoke run (``QKV_TRAIN_SMOKE``, set by the test suite: :mod:`qkv.recipes.weights`) shows models trained on a few
    batches. Its executed notebooks must never sit in the execution cache that ``make book`` reuses, or the real
    book would show them."""
    from qkv.recipes.weights import smoke_batches  # the one reader of the setting

    return ROOT / "_build" / ("smoke" if smoke_batches() else "") / edition


def build(
    edition: str, strict: bool = False, out: Path | None = None, quiet: bool = False, transform: Transform | None = None
) -> Path:
    """Stage (through ``transform``: :func:`stage`) and build ``edition`` under ``out`` (default :func:`default_out`);
    return the folder of the HTML site.

    One build of a folder at a time: a second ``make book`` started meanwhile (or a test beside it) waits for the
    first, saying so, and then finds most of its work done, instead of both writing the same sources at once."""
    _check_edition(edition, transform)
    out = out or default_out(edition)
    out.mkdir(parents=True, exist_ok=True)
    # Its own lock file: the test suite holds ``.build.lock`` around this call and more (tests/support/browser.py).
    lock = FileLock(str(out / ".make-book.lock"))
    acquire(
        lock,
        on_wait=lambda: print(f"[book] another build of {out} is running; waiting for it to finish", flush=True),
    )
    try:
        return _build(edition, strict, out, quiet, transform)
    finally:
        lock.release()


def library_digest(root: Path | None = None) -> str:
    """A hash of ``lib/qkv`` (names and contents), the explorers' modules left out: what a page's outputs come from.

    Jupyter Book keys its execution cache by a page's code alone, so a page whose code is unchanged would keep the
    outputs of an older ``qkv`` (an explorer's data, a figure, a number). The explorers' JavaScript is left out:
    :func:`qkv.widgets._live.refresh_book` puts the current modules into the built pages. ``root``: the repository
    (default: this one)."""
    lib = (root or ROOT) / "lib" / "qkv"
    js = lib / "widgets" / "js"
    h = hashlib.sha256()
    for path in sorted(p for p in lib.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        if js in path.parents:
            continue
        h.update(path.relative_to(lib).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def forget_stale_outputs(out: Path, library: str | None = None) -> bool:
    """Empty ``out``'s execution cache (and Sphinx's record of the pages read, or it would render none again) if its
    outputs came from another ``qkv`` than today's; record today's. True if they were forgotten."""
    library = library or library_digest()
    stamp = out / OUTPUTS_STAMP
    recorded = stamp.read_text().strip() if stamp.exists() else None
    cache = out / "_build" / ".jupyter_cache"
    stale = recorded != library and cache.exists()
    if stale:
        shutil.rmtree(cache, ignore_errors=True)
        shutil.rmtree(out / "_build" / ".doctrees", ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    stamp.write_text(library + "\n")
    return stale


def _build(edition: str, strict: bool, out: Path, quiet: bool, transform: Transform | None) -> Path:
    src = out / "src"
    t0 = time.perf_counter()
    if forget_stale_outputs(out):
        print("[book] qkv changed since this edition was last built: every page runs again", flush=True)
    written = stage(edition, src, transform)
    print(f"[book] {edition} edition: {len(written)} source file(s) changed", flush=True)
    env = dict(os.environ)
    env.setdefault("QKV_DATA_DIR", str((ROOT.parent / "shared" / "data").resolve()))
    env.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    env[BOOK_BUILD_ENV] = "1"  # widgets render as static figures in the book (qkv.widgets)
    # The chapter-at-a-glance poster, linked from that page; redrawn only when qkv changed (publish/poster.py).
    # It is drawn while the notebooks run side by side (publish/execute.py); Jupyter Book then renders them from
    # its execution cache and runs only the pages that time code, alone.
    draw = [sys.executable, "-m", "publish.poster", str(src / "book" / "_poster")]
    poster = subprocess.Popen(draw, env=env, cwd=ROOT)
    pages = [name for name in nbs.toc_files(src / "_toc.yml") if nbs.is_notebook_source(src / f"{name}.md")]
    cache = out / "_build" / ".jupyter_cache"
    execute.pretrain(execute.pending(src, cache, pages), env)
    execute.prefill(src, cache, pages, env, execute.jobs_wanted())
    if poster.wait():
        raise SystemExit("[book] the poster (publish/poster.py) failed; see the log above")
    cmd = [str(Path(sys.executable).with_name("jupyter-book")), "build", str(src), "--path-output", str(out)]
    if strict:
        cmd += ["-W", "-n", "--keep-going"]
    result = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL if quiet else None)
    if result.returncode:
        raise SystemExit(f"[book] jupyter-book failed with exit code {result.returncode}; see the log above")
    html = out / "_build" / "html"
    refreshed = live.refresh_book(html)  # the explorers' current modules, whatever the execution cache holds
    if refreshed:
        print(f"[book] {len(refreshed)} page(s) given their explorers' current JavaScript", flush=True)
    if transform is None:
        write_downloads(html)
    print(f"[book] {edition} edition built in {time.perf_counter() - t0:.0f} s: open {html / 'index.html'}")
    return html


def write_downloads(html: Path) -> list[Path]:
    """Put each section's student notebook (:func:`course.student_notebook.student_notebook`) where the page's
    download button points (``_sources/book/<slug>.ipynb``), over the executed copy that sphinx-book-theme puts
    there: the download is then the notebook of every other door (the release, Colab), which the grader takes as
    it is, not this edition's run of the page (outputs, and the ``skip-execution`` tags of the student edition)."""
    written = []
    for section in sections():
        target = html / "_sources" / section.path.relative_to(ROOT).with_suffix(".ipynb")
        if target.exists():  # the theme put the page's run there (a smaller book, in the tests, has fewer pages)
            nbs.write_if_changed(student_notebook(section), target, fmt="ipynb")
            written.append(target)
    return written


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edition", default="student", choices=EDITIONS, help="solutions: autograder.editions")
    parser.add_argument("--strict", action="store_true", help="turn Sphinx warnings into errors")
    args = parser.parse_args(argv)
    build(args.edition, strict=args.strict)


if __name__ == "__main__":
    main()
