"""Shared pytest fixtures.

The course's data live outside the repository (``../shared/data``, see its README). Tests never download:
``QKV_OFFLINE`` is set for the whole session, and ``QKV_DATA_DIR`` defaults to that folder so that a plain
``pytest`` finds the data as ``make test`` does (subprocesses, such as notebook kernels, inherit both).

Models the book trains are trained as smoke runs (``QKV_TRAIN_SMOKE``, :mod:`qkv.recipes.weights`): one epoch of two
batches, so that the notebooks, the release and the test build of the book (under ``_build/smoke/``) run every cell
without paying for full training. A test about a trained model's quality unsets it for that model.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA_DIR = REPO.parent / "shared" / "data"

os.environ.setdefault("QKV_DATA_DIR", str(DEFAULT_DATA_DIR))
os.environ.setdefault("QKV_OFFLINE", "1")
os.environ.setdefault("QKV_TRAIN_SMOKE", "2")
# The tests' caches (smoke weights, the few real ones a quality test trains) live in the build folder, never in the
# user's ~/.cache/qkv or a weights folder the user named; subprocesses (kernels, book builds, the grader) inherit it.
os.environ["QKV_CACHE_DIR"] = str(REPO / "_build" / "test-cache")
os.environ.pop("QKV_TRAINED_DIR", None)
# This test session's name, the same in every pytest-xdist worker (they inherit the controller's environment) and
# their subprocesses: what is made once per session is keyed by it (tests/support/nbval_runs.py).
os.environ.setdefault("QKV_TEST_SESSION", uuid.uuid4().hex)
# One thread per process, subprocesses included (nbval's kernels, the background book's kernel, a copy's pytest):
# the suite runs two workers and the book on two cores, and torch's default of one thread per core in each made
# them fight (nbval's kernels took twice as long beside a busy worker). The workers themselves: _one_torch_thread.
for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_name] = "1"

#: A test run about some sections only: their slugs, comma-separated (``tests/book/test_new_section.py`` runs a
#: copy's tests for its new section alone). The suite's own switch, so it lives here and not in ``course``: set, the
#: tests see ``course.section.sections()`` give those sections only (patched before any test module imports it).
ONLY_SECTIONS_ENV = "QKV_TEST_SECTIONS"


def _only_the_named_sections() -> None:
    only = {slug.strip() for slug in os.environ.get(ONLY_SECTIONS_ENV, "").split(",") if slug.strip()}
    if not only:
        return
    import course.section

    every = course.section.sections

    def sections(root: Path = course.section.ROOT) -> list:
        return [s for s in every(root) if s.slug in only]

    sections.__doc__ = every.__doc__
    course.section.sections = sections


_only_the_named_sections()

#: The tiers of the suite, one folder each under ``tests/`` (``make test-<tier>`` runs one; ``make test`` runs them
#: all): where a test lives says when it runs. ``unit`` is the edit loop's tier (``make test-fast``), in folders that
#: mirror the packages it tests (``qkv``, ``autograder``, ``course``, ``publish``, and ``tooling`` for the suite's
#: and the benchmarks' own arrangements).
TIERS = ("unit", "notebooks", "grading", "book")
TESTS = REPO / "tests"


def tier(item) -> str:
    """The tier of a collected test: the folder under ``tests/`` that holds its file."""
    return tier_of(Path(str(item.fspath)))


def tier_of(path: Path) -> str:
    """The tier of the test file ``path``: its first folder under ``tests/``; a clear error for a file outside them."""
    parts = path.resolve().relative_to(TESTS).parts
    if len(parts) < 2 or parts[0] not in TIERS:
        raise pytest.UsageError(
            f"{path}: a test file lives in one tier's folder under tests/ ({', '.join(TIERS)}); move it into one"
        )
    return parts[0]


def pytest_collection_modifyitems(config, items):
    """Mark each test with its tier; put the book tier last, and each section's in-process grading cases together."""
    for item in items:
        item.add_marker(getattr(pytest.mark, tier(item)))
    # The book tier last (a stable sort: each tier keeps its order), so that the smoke book, which its tests share,
    # is built in the background meanwhile instead of keeping a worker waiting.
    # The sections' grading cases first: the largest units of work, best started while both workers are free.
    items.sort(key=lambda it: (tier(it) == "book", grading_group(it.nodeid) is None))
    grading = [i for i, item in enumerate(items) if grading_group(item.nodeid)]
    order: dict[str, int] = {}
    for i in grading:
        order.setdefault(grading_group(items[i].nodeid), len(order))
    ordered = sorted((items[i] for i in grading), key=lambda it: order[grading_group(it.nodeid)])
    for i, item in zip(grading, ordered):
        items[i] = item


def grading_group(nodeid: str) -> str | None:
    """``grading-<slug>`` for a case of ``tests/notebooks/test_grading_answers.py`` or
    ``tests/grading/test_generated_mutants.py`` (its id starts with the slug), else None: both run in the section's
    in-process harness, which a worker starts once per section."""
    path, _, rest = nodeid.partition("::")
    if not path.endswith(("test_grading_answers.py", "test_generated_mutants.py")) or "[" not in rest:
        return None
    return "grading-" + rest.split("[", 1)[1].split(":", 1)[0].rstrip("]")


def page_group(nodeid: str) -> str | None:
    """``page-<name>`` for a test of ``tests/book/test_book_browser.py`` about one page (its id is the page's toc name,
    ``book/...``), else None."""
    path, _, rest = nodeid.partition("::")
    if not path.endswith("test_book_browser.py") or "[book/" not in rest:
        return None
    return "page-" + rest.split("[", 1)[1].rstrip("]")


def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup`` (``make test``): each section's grading cases go to one worker, so that its notebook's
    process starts once (``tests/support/inprocess.py``); so do the browser tests of one page, so that Chromium
    opens and photographs it once (``pages`` in ``tests/book/test_book_browser.py`` keeps a visit per worker: split
    across both, each page was visited twice); every other test is its own unit, sent to whichever worker
    is free. (pytest-xdist's own groups, ``xdist_group`` marks, do not reach its scheduler under pytest 9, whose node
    ids it can no longer rewrite; this scheduler groups by node id instead.)"""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    # Keep the collection's order (pytest_collection_modifyitems: grading first, the book tier last); by default
    # the scheduler sends the largest groups first, which started the browser tests, groups of seven, at once and
    # left both workers waiting for the smoke book.
    config.option.loadscopereorder = False

    class SectionGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return grading_group(nodeid) or page_group(nodeid) or nodeid

    return SectionGroups(config, log)


_BACKGROUND: list = []


def pytest_collection_finish(session):
    """Once the selection is final (after -k and -m): start the smoke book if a selected test reads it."""
    if session.config.option.collectonly:
        return
    if any(tier(it) == "book" for it in session.items):
        _build_the_book_in_the_background(session.config)


def _build_the_book_in_the_background(config) -> None:
    """Start building the student smoke book (``tests.support.browser.built_book``) in a process of its own, once
    per session (the first worker, or the session itself without xdist). The tests that read it wait on its lock;
    if it failed, they build it again and report why. Its log: ``_build/tests/book-build.log``."""
    worker = getattr(config, "workerinput", {}).get("workerid")
    if worker not in (None, "gw0") or os.environ.get("QKV_NO_BACKGROUND_BOOK"):
        return
    if os.environ.get("QKV_EXPLORER_STANDALONE", "").strip() not in ("", "0"):
        return  # the explorers' tests read pages of their own (tests/support/explorers.py)
    import subprocess
    import sys

    log = REPO / "_build" / "tests" / "book-build.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    code = "from tests.support import browser; browser.built_book('student')"
    env = os.environ | {"QKV_BOOK_JOBS": "1"}  # one notebook at a time: the test workers have the other cores
    with open(log, "w") as out:
        _BACKGROUND.append(
            subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
        )


def pytest_unconfigure(config):
    """Wait for the background book build (a session that ends before its book tests ran leaves it half done)."""
    for proc in _BACKGROUND:
        proc.wait()


def _slug_of(item) -> str:
    params = getattr(item, "callspec", None)
    return str(params.params.get("slug", "")) if params else ""


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The folder holding the real data files: ``$QKV_DATA_DIR``, else ``<repo>/../shared/data``."""
    return Path(os.environ.get("QKV_DATA_DIR", str(DEFAULT_DATA_DIR)))


@pytest.fixture
def isolated_data_env(tmp_path, monkeypatch) -> Path:
    """No data folder from the environment, an empty cache in ``tmp_path / "cache"``, downloads still off."""
    monkeypatch.delenv("QKV_DATA_DIR", raising=False)
    monkeypatch.setenv("QKV_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("QKV_OFFLINE", "1")
    return tmp_path / "cache"


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread():
    """The suite's models and tensors are tiny: one torch thread runs them fastest, and with pytest-xdist each
    worker then takes one core (two workers x two threads on two cores made small models ten times slower)."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture
def close_figures():
    """Close every matplotlib figure a test opened (the widget and figure tests draw many)."""
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


@pytest.fixture
def jupyter(monkeypatch):
    """As in a Jupyter session: no book build, so the explorers return their ipywidgets panels."""
    from qkv import widgets

    monkeypatch.delenv(widgets.BOOK_BUILD_ENV, raising=False)


@pytest.fixture
def book_build(monkeypatch):
    """As while the book is built: the explorers draw static figures."""
    from qkv import widgets

    monkeypatch.setenv(widgets.BOOK_BUILD_ENV, "1")


# ----------------------------------------------------------------------------- seconds per test file

_SECONDS_PER_FILE: dict[str, float] = {}
_TESTS_PER_FILE: dict[str, int] = {}


def pytest_runtest_logreport(report):
    """Add each phase's time (setup, call, teardown) to its file's total; with pytest-xdist the controller sees
    every worker's reports here."""
    path = report.nodeid.split("::", 1)[0]
    _SECONDS_PER_FILE[path] = _SECONDS_PER_FILE.get(path, 0.0) + report.duration
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        _TESTS_PER_FILE[path] = _TESTS_PER_FILE.get(path, 0) + 1


def pytest_terminal_summary(terminalreporter):
    """End the log with a table of seconds per test file (setup, call and teardown of all its tests, summed over
    the workers), slowest first, with each file's tier, so that a slow file shows where it is."""
    if not _SECONDS_PER_FILE or getattr(terminalreporter.config, "workerinput", None) is not None:
        return
    write = terminalreporter.write_line
    terminalreporter.section("seconds per test file (summed over workers)")
    total = sum(_SECONDS_PER_FILE.values())
    write(f"{'seconds':>8} {'share':>6} {'tests':>6}  {'tier':<9} file")
    for path, seconds in sorted(_SECONDS_PER_FILE.items(), key=lambda kv: -kv[1]):
        file_tier = Path(path).parts[1] if path.startswith("tests/") else "?"
        share = seconds / total if total else 0.0
        write(f"{seconds:8.1f} {share:6.1%} {_TESTS_PER_FILE.get(path, 0):6d}  {file_tier:<9} {path}")
    write(f"{total:8.1f} {'':6} {sum(_TESTS_PER_FILE.values()):6d}  {'':9} all files")
