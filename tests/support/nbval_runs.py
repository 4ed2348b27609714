"""nbval's runs of the notebooks (``tests/notebooks/test_notebooks_nbval.py``), and the student run shared with the
smoke book.

A student notebook is executed once per test session: :func:`student` runs nbval on it, in a kernel set as the
book's build sets it (``QKV_BOOK_BUILD``: the explorers draw static figures), keeps the outputs
(:mod:`tests.support.nbval_keep`) and records the result under ``_build/tests/`` (:func:`tests.support.once.build_once`,
keyed by this session, the notebook, ``lib/qkv`` and the pins). Whoever asks first runs it: nbval's test of that
notebook, or the smoke book's build (:func:`prime_book_cache`, from :func:`tests.support.browser.built_book`), which
puts the kept outputs into Jupyter Book's execution cache instead of executing the page a second time. The solved
notebooks run in Jupyter's own setting (the explorers as ipywidgets panels), so a real kernel runs both.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from course import notebooks as nbs
from course.section import Section
from tests.support import once
from tests.support.nbval_prepare import prepare

#: The plugins a notebook's nbval run does not use: hypothesis's alone takes a second to import (of the 2.3 s that a
#: pytest with every installed plugin takes to start, against 0.9 s without these).
UNUSED_PLUGINS = ("cacheprovider", "hypothesispytest", "anyio", "xdist", "xdist.looponfail")
SESSION_ENV = "QKV_TEST_SESSION"  # set once by tests/conftest.py, inherited by the workers and their subprocesses


@dataclass
class NbvalRun:
    """What one nbval run of one notebook gave: its exit status and output, and the notebook as executed."""

    returncode: int
    stdout: str
    executed: Path | None = None

    @property
    def passed(self) -> bool:
        return self.returncode == 0 and " passed" in self.stdout


def run(path: Path, keep: Path | None = None, env: dict | None = None) -> NbvalRun:
    """``pytest --nbval-lax`` on the notebook ``path`` (with ``keep``: the executed notebook written there)."""
    cmd = [sys.executable, "-m", "pytest", "--nbval-lax", "-q"]
    cmd += [arg for name in UNUSED_PLUGINS for arg in ("-p", f"no:{name}")]
    if keep is not None:
        cmd += ["-p", "tests.support.nbval_keep", f"--nbval-keep={keep}"]
    cmd += ["--rootdir", str(path.parent), str(path)]
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(nbs.ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env, cwd=nbs.ROOT)
    kept = keep if keep is not None and keep.exists() else None
    return NbvalRun(done.returncode, done.stdout + done.stderr[-2000:], kept)


def student(section: Section) -> NbvalRun:
    """nbval's run of ``section``'s student notebook, in the book's setting, made once per test session."""
    from qkv.widgets import BOOK_BUILD_ENV

    name = f"nbval-student-{section.slug}"
    key = once.digest(
        section.path,
        Path(__file__).with_name("nbval_prepare.py"),
        nbs.ROOT / "lib" / "qkv",
        nbs.ROOT / "constraints.txt",
        extra=f"{os.environ.get(SESSION_ENV, '')}\0smoke={os.environ.get('QKV_TRAIN_SMOKE', '')}",
    )

    def produce(folder: Path) -> None:
        path = prepare(section, folder)["student"]
        env = os.environ | {BOOK_BUILD_ENV: "1"}
        env.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")  # as publish.build_book sets it
        result = run(path, keep=folder / "executed.ipynb", env=env)
        (folder / "result.json").write_text(json.dumps({"returncode": result.returncode, "stdout": result.stdout}))

    folder = once.build_once(name, key, produce)
    record = json.loads((folder / "result.json").read_text())
    executed = folder / "executed.ipynb"
    result = NbvalRun(record["returncode"], record["stdout"], executed if executed.exists() else None)
    if not result.passed:  # a failure is reported once and never reused: the next caller runs it again
        shutil.rmtree(folder, ignore_errors=True)
        result.executed = None
    return result


def outputs_for_page(page, executed) -> bool:
    """Copy the outputs of ``executed`` (nbval's run of the student notebook) into ``page`` (the staged page as
    myst-nb reads it) cell by cell; cells the book does not execute (``skip-execution``) get none. False, and
    ``page`` untouched, unless both hold the same code in the same order."""
    ours = [c for c in page.cells if c.cell_type == "code"]
    theirs = [c for c in executed.cells if c.cell_type == "code"]
    if [c.source for c in ours] != [c.source for c in theirs]:
        return False
    for cell, ran in zip(ours, theirs):
        skipped = "skip-execution" in cell.metadata.get("tags", [])
        cell.outputs = [] if skipped else ran.outputs
        cell.execution_count = None if skipped else ran.execution_count
    return True


def prime_book_cache(src: Path, cache_dir: Path, sections: list[Section]) -> list[str]:
    """Put nbval's run of each student notebook into the execution cache of the book staged at ``src``, for the
    pages the cache does not hold yet; the slugs primed. A page whose run failed, or whose code differs from the
    notebook nbval ran, is left to Jupyter Book, which executes it and reports what went wrong as it always does."""
    import nbformat
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    from publish import execute

    cache = get_cache(str(cache_dir))
    primed = []
    for section in sections:
        staged = src / section.path.relative_to(nbs.ROOT)  # the page as staged for the build
        page = execute.read(staged)
        try:
            cache.match_cache_notebook(page)
            continue
        except KeyError:
            pass
        result = student(section)
        if result.executed is None or not outputs_for_page(page, nbformat.read(result.executed, as_version=4)):
            continue
        bundle = CacheBundleIn(page, str(staged), data={"execution_seconds": 0.0, "executed_by": "nbval"})
        cache.cache_notebook_bundle(bundle, check_validity=False, overwrite=True)
        primed.append(section.slug)
    return primed
