"""publish/execute.py: the notebooks executed side by side into Jupyter Book's execution cache, the lab left alone.

No kernel runs here (the book tier builds the real thing): these tests check that a page read by ``execute.read``
hashes as myst-nb's own reader makes it hash inside Jupyter Book (or the cache would never match and every page
would run twice), which pages the parallel phase takes and in what order, and that a bad job count is refused.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from course import notebooks as nbs
from publish import build_book, execute


@pytest.fixture(scope="module")
def staged(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("book") / "src"
    build_book.stage("student", src)
    return src


def _pages(src: Path) -> list[str]:
    return [name for name in nbs.toc_files(src / "_toc.yml") if nbs.is_notebook_source(src / f"{name}.md")]


def test_a_page_read_here_hashes_as_myst_nb_reads_it_in_the_build(staged, tmp_path):
    from jupyter_cache import get_cache
    from myst_nb.core.config import NbParserConfig
    from myst_nb.core.read import create_nb_reader
    from myst_parser.config.main import MdParserConfig

    cache = get_cache(str(tmp_path / "cache"))
    for page in _pages(staged):
        path = staged / f"{page}.md"
        text = path.read_text(encoding="utf-8")
        reader = create_nb_reader(str(path), MdParserConfig(), NbParserConfig(), text)
        assert reader is not None, f"myst-nb does not read {page} as a notebook"
        theirs = cache.create_hashed_notebook(reader.read(text))[1]
        ours = cache.create_hashed_notebook(execute.read(path))[1]
        assert ours == theirs, f"{page}: the notebook read for the parallel phase would not match Jupyter Book's"


def test_the_parallel_phase_takes_every_uncached_page_but_the_lab_longest_first(staged, tmp_path):
    pages = _pages(staged)
    todo = execute.pending(staged, tmp_path / "cache", pages)
    assert "book/attention-cost-lab" in pages and "book/attention-cost-lab" not in todo, "the lab must time alone"
    assert sorted(todo) == sorted(p for p in pages if p not in execute.ALONE)
    heavy = [p for p in execute.LONGEST_FIRST if p in pages]
    assert todo[: len(heavy)] == heavy, "the pages that train the longest models start first"


def test_a_cached_page_is_not_executed_again(staged, tmp_path):
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    pages = _pages(staged)
    page = next(p for p in pages if p not in execute.ALONE)
    nb = execute.read(staged / f"{page}.md")
    get_cache(str(tmp_path / "cache")).cache_notebook_bundle(
        CacheBundleIn(nb, str(staged / f"{page}.md")), check_validity=False
    )
    todo = execute.pending(staged, tmp_path / "cache", pages)
    assert page not in todo and len(todo) == len(pages) - len(execute.ALONE) - 1


def test_a_changed_cell_is_a_miss(staged, tmp_path):
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    page = next(p for p in _pages(staged) if p not in execute.ALONE)
    nb = execute.read(staged / f"{page}.md")
    code = next(c for c in nb.cells if c.cell_type == "code")
    code.source += "\n# one more line"
    get_cache(str(tmp_path / "cache")).cache_notebook_bundle(
        CacheBundleIn(nbformat.from_dict(nb), str(staged / f"{page}.md")), check_validity=False
    )
    assert page in execute.pending(staged, tmp_path / "cache", [page])


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5"])
def test_a_bad_job_count_is_refused_with_what_to_set(monkeypatch, value):
    monkeypatch.setenv(execute.JOBS_ENV, value)
    with pytest.raises(SystemExit, match="QKV_BOOK_JOBS must be a positive whole number"):
        execute.jobs_wanted()


def test_one_notebook_at_a_time_unless_asked_and_the_cores_shared_out(monkeypatch):
    monkeypatch.delenv(execute.JOBS_ENV, raising=False)
    assert execute.jobs_wanted() == 1
    monkeypatch.setenv(execute.JOBS_ENV, "3")
    assert execute.jobs_wanted() == 3
    monkeypatch.setattr(execute.os, "cpu_count", lambda: 8)
    assert execute.thread_limits(2)["OMP_NUM_THREADS"] == "4"
    assert execute.thread_limits(16)["OMP_NUM_THREADS"] == "1"


def test_the_pretrained_recipes_are_the_models_the_sections_show_longest_first():
    """A cold build trains before the pages run exactly what ``make release`` warms (the sections' ``trains:``), each
    recipe under the page that shows it, the long ones first so that the short ones fill the other core."""
    from course.section import sections

    everything = execute.recipes_for(list(execute.page_recipes()))
    warmed = [recipe for section in sections() for recipe in section.trains]
    assert sorted(everything) == sorted(warmed) and len(set(everything)) == len(everything) == 7
    assert everything[:4] == [
        "qkv.recipes.vit:train_fashion_mnist",
        "qkv.recipes.lm:warm",
        "qkv.recipes.modern:warm",
        "qkv.recipes.vit:train_cnn",
    ]
    assert execute.recipes_for(["book/transformer", "book/queries-keys-values"]) == [
        "qkv.recipes.translate:train_transformer"
    ]
    assert execute.recipes_for([]) == []
    for page in execute.page_recipes():
        assert (nbs.ROOT / f"{page}.md").exists(), f"{page} is not a page of the book"


def test_pretraining_stays_out_of_smoke_runs_and_one_core(monkeypatch):
    """The test suite's smoke models take seconds: no process is started for them; nor on one core, nor when
    QKV_BOOK_PRETRAIN=0."""
    started = []
    monkeypatch.setattr(execute.subprocess, "run", lambda *a, **k: started.append(a))
    monkeypatch.setenv("QKV_TRAIN_SMOKE", "2")
    assert execute.pretrain(list(execute.page_recipes()), {}, slots=2) == {}
    monkeypatch.delenv("QKV_TRAIN_SMOKE")
    assert execute.pretrain(list(execute.page_recipes()), {}, slots=1) == {}
    assert execute.pretrain(list(execute.page_recipes()), {execute.PRETRAIN_ENV: "0"}, slots=2) == {}
    monkeypatch.setattr(execute.os, "cpu_count", lambda: 2)  # one slot per two cores: none worth it on two
    assert execute.pretrain(list(execute.page_recipes()), {}) == {}
    assert started == []


def test_pretraining_on_four_cores_runs_each_recipe_once_with_two_threads(monkeypatch):
    import subprocess

    seen = []

    def fake_run(cmd, env, **kwargs):
        seen.append((cmd[-1], env["OMP_NUM_THREADS"]))
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.delenv("QKV_TRAIN_SMOKE", raising=False)
    monkeypatch.setattr(execute.os, "cpu_count", lambda: 4)
    monkeypatch.setattr(execute.subprocess, "run", fake_run)
    done = execute.pretrain(["book/transformer", "book/vision-transformer"], {})
    assert sorted(done) == sorted(
        ["qkv.recipes.translate:train_transformer", *execute.page_recipes()["book/vision-transformer"]]
    )
    assert all(seconds is not None for seconds in done.values())
    assert len(seen) == 3 and {threads for _, threads in seen} == {"2"}
