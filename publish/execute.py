"""Execute the book's notebooks side by side before Jupyter Book reads them (``QKV_BOOK_JOBS``, for spare cores).

Jupyter Book runs the notebooks one after another. With ``QKV_BOOK_JOBS=N`` (:data:`JOBS_ENV`), :func:`prefill`
runs them first, ``N`` at a time, each in a kernel of its own with its share of the cores, and puts each executed
notebook into Jupyter Book's execution cache exactly as Jupyter Book would have (read by myst-nb's reader, hashed by
jupyter-cache); Jupyter Book then finds them there ("Using cached notebook") and only renders. The models the
notebooks train are cached under a lock (:mod:`qkv.recipes.weights`), so two notebooks that need one model train it
once.

The pages whose cells time code (:data:`ALONE`: the attention-cost lab) are left out: Jupyter Book runs them
itself after, when nothing else runs, so their timings have the machine to themselves. A notebook that fails here
is simply not cached; Jupyter Book then runs it again and reports the error as it always does.

``python -m publish.execute NOTEBOOK.md OUT.json`` executes one notebook (the parallel jobs are such processes).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

import nbformat
import yaml

#: Pages that time code: executed by Jupyter Book itself, alone, after the others.
ALONE = ("book/attention-cost-lab",)
#: Pages that train the longest models: started first, so that the rest fill the other cores meanwhile.
LONGEST_FIRST = (
    "book/vision-transformer",
    "book/large-pretraining-transformers",
    "book/modern-decoder-lab",
    "book/transformer",
)
#: Set to a number of notebooks at once. The default, 1, leaves every notebook to Jupyter Book, one after another:
#: on 2 cores that is faster, since the training cells already use both cores (torch's threads) and a second
#: notebook only slows the longest one down (measured: benchmarks/results/book_build.md). Machines with more cores
#: gain from ``QKV_BOOK_JOBS=2`` or more.
JOBS_ENV = "QKV_BOOK_JOBS"


def page_recipes() -> dict[str, tuple[str, ...]]:
    """The models each page trains (``"module:function"``, callable without arguments; the front matter's
    ``trains:``, :attr:`course.section.Section.trains`), the pages of :data:`LONGEST_FIRST` first. A cold build
    trains those of the pages it must execute before it runs any page, side by side, one torch thread each
    (:func:`pretrain`); the pages then load them from the weight cache, whose lock makes a page that needs a
    model still training wait for it instead of training it twice."""
    from course.section import sections

    found = {f"book/{s.slug}": s.trains for s in sections() if s.trains}
    first = [page for page in LONGEST_FIRST if page in found]
    return {page: found[page] for page in first + [p for p in found if p not in first]}


#: Set to 0 to leave the training to the pages themselves, one after another.
PRETRAIN_ENV = "QKV_BOOK_PRETRAIN"


def thread_limits(jobs: int) -> dict[str, str]:
    """The environment of each kernel of the parallel phase: the cores shared out between the ``jobs`` kernels, so
    that they do not fight over them (torch reads ``OMP_NUM_THREADS`` when it starts)."""
    threads = str(max(1, (os.cpu_count() or 1) // jobs))
    return {"OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads, "OPENBLAS_NUM_THREADS": threads}


def read(path: Path) -> nbformat.NotebookNode:
    """The notebook of a staged MyST page as myst-nb reads it (the cache matches notebooks by their code)."""
    from myst_nb.core.read import read_myst_markdown_notebook
    from myst_parser.config.main import MdParserConfig

    config = yaml.safe_load((path_root(path) / "_config.yml").read_text()) or {}
    extensions = config.get("parse", {}).get("myst_enable_extensions", [])
    return read_myst_markdown_notebook(path.read_text(encoding="utf-8"), MdParserConfig(enable_extensions=extensions))


def path_root(path: Path) -> Path:
    """The staged book folder a page belongs to (the nearest parent holding ``_config.yml``)."""
    for parent in path.parents:
        if (parent / "_config.yml").exists():
            return parent
    raise FileNotFoundError(f"no _config.yml above {path}")


def _settings(src: Path) -> dict:
    execute = (yaml.safe_load((src / "_config.yml").read_text()) or {}).get("execute", {})
    return {"timeout": execute.get("timeout", 30), "allow_errors": bool(execute.get("allow_errors", False))}


def jobs_wanted() -> int:
    """``$QKV_BOOK_JOBS``, else 1 (see :data:`JOBS_ENV`)."""
    value = os.environ.get(JOBS_ENV, "").strip()
    if value:
        if not value.isdigit() or int(value) < 1:
            raise SystemExit(f"[book] {JOBS_ENV} must be a positive whole number of notebooks at once, not {value!r}")
        return int(value)
    return 1


def pending(src: Path, cache_dir: Path, pages: list[str]) -> list[str]:
    """The notebook pages (toc names) that the execution cache does not hold yet, longest first, without ALONE."""
    from jupyter_cache import get_cache

    cache = get_cache(str(cache_dir))
    out = []
    for page in pages:
        if page in ALONE:
            continue
        try:
            cache.match_cache_notebook(read(src / f"{page}.md"))
        except KeyError:
            out.append(page)
    first = [p for p in LONGEST_FIRST if p in out]
    return first + [p for p in out if p not in first]


def prefill(src: Path, cache_dir: Path, pages: list[str], env: dict, jobs: int) -> dict[str, float | None]:
    """Execute the ``pages`` missing from the cache, ``jobs`` at a time, and cache them; the seconds each took
    (None: it failed, and Jupyter Book will run it again)."""
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    todo = pending(src, cache_dir, pages)
    if jobs < 2 or not todo:
        return {}
    cache = get_cache(str(cache_dir))
    env = env | thread_limits(jobs)
    t0 = time.perf_counter()
    print(f"[book] executing {len(todo)} notebook(s), {jobs} at a time: {', '.join(todo)}", flush=True)
    done: dict[str, float | None] = {}
    with ThreadPoolExecutor(jobs) as pool:
        futures = {pool.submit(_execute_in_process, src / f"{page}.md", env): page for page in todo}
        for future in as_completed(futures):
            page = futures[future]
            executed, seconds, error = future.result()
            if error:
                print(f"[book] {page}: failed here, Jupyter Book will run it again:\n{error}", flush=True)
                done[page] = None
                continue
            bundle = CacheBundleIn(executed, str(src / f"{page}.md"), data={"execution_seconds": seconds})
            cache.cache_notebook_bundle(bundle, check_validity=False, overwrite=True)
            done[page] = seconds
            print(f"[book] {page}: executed in {seconds:.0f} s", flush=True)
    print(f"[book] parallel execution: {time.perf_counter() - t0:.0f} s", flush=True)
    return done


def recipes_for(pages: list[str]) -> list[str]:
    """The recipes of :func:`page_recipes` that ``pages`` train, longest first (the ViT's, 11.9's and the decoder
    lab's models)."""
    recipes = page_recipes()
    order = [recipe for page in recipes for recipe in recipes[page] if page in pages]
    longest = (
        "qkv.recipes.vit:train_fashion_mnist",
        "qkv.recipes.lm:warm",
        "qkv.recipes.modern:warm",
        "qkv.recipes.vit:train_cnn",
    )
    first = [r for r in longest if r in order]
    return first + [r for r in order if r not in first]


def pretrain(pages: list[str], env: dict, slots: int | None = None) -> dict[str, float | None]:
    """Train the models of ``pages`` (those the cache does not hold: :func:`pending`), ``slots`` at a time (default:
    one per two cores), each in a process of its own with the cores shared out; the seconds each took (None: it
    failed, and its page will train it, or report why). Nothing happens in a smoke run (its models take seconds),
    with ``QKV_BOOK_PRETRAIN=0``, or with fewer than two slots: on 2 cores a model trained on one thread takes about
    twice as long as on two (the ViT 247 s against about 120, benchmarks/results/book_build.md), so two side by side
    gain nothing over the pages training them one after another."""
    from qkv.recipes.weights import smoke_batches  # the one reader of the setting

    smoke = smoke_batches() > 0
    slots = slots or (os.cpu_count() or 1) // 2
    todo = recipes_for(pages)
    if smoke or env.get(PRETRAIN_ENV, os.environ.get(PRETRAIN_ENV, "1")).strip() == "0" or slots < 2 or not todo:
        return {}
    env = env | thread_limits(slots) | {"MPLBACKEND": "Agg"}
    root = Path(__file__).resolve().parent.parent
    print(f"[book] training {len(todo)} model recipe(s), {slots} at a time: {', '.join(todo)}", flush=True)
    t0 = time.perf_counter()

    def run(recipe: str) -> tuple[float, str | None]:
        module, _, function = recipe.partition(":")
        code = f"import importlib; getattr(importlib.import_module({module!r}), {function!r})()"
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", code], env=env, cwd=root, capture_output=True, text=True)
        error = (done.stdout + done.stderr)[-3000:] if done.returncode else None
        return time.perf_counter() - started, error

    seconds: dict[str, float | None] = {}
    with ThreadPoolExecutor(slots) as pool:
        futures = {pool.submit(run, recipe): recipe for recipe in todo}
        for future in as_completed(futures):
            recipe = futures[future]
            took, error = future.result()
            seconds[recipe] = None if error else took
            if error:
                print(f"[book] {recipe}: training failed here, its page will try again:\n{error}", flush=True)
            else:
                print(f"[book] {recipe}: trained or loaded in {took:.0f} s", flush=True)
    print(f"[book] models ready in {time.perf_counter() - t0:.0f} s", flush=True)
    return seconds


def _execute_in_process(path: Path, env: dict):
    """Run ``python -m publish.execute`` on ``path``: (executed notebook, seconds, error text or None)."""
    out = path.with_suffix(".executed.json")
    cmd = [sys.executable, "-m", "publish.execute", str(path), str(out)]
    root = Path(__file__).resolve().parent.parent
    result = subprocess.run(cmd, env=env, cwd=root, capture_output=True, text=True)
    try:
        if result.returncode or not out.exists():
            return None, 0.0, (result.stdout + result.stderr)[-3000:]
        data = json.loads(out.read_text())
        return nbformat.from_dict(data["notebook"]), data["seconds"], data["error"]
    finally:
        out.unlink(missing_ok=True)


def main(argv: list[str]) -> int:
    """Execute one staged page (in its own folder, as Jupyter Book does) and write the result as JSON."""
    from jupyter_cache.executors.utils import single_nb_execution

    path, out = Path(argv[0]), Path(argv[1])
    nb = read(path)
    settings = _settings(path_root(path))
    result = single_nb_execution(nb, cwd=str(path.parent), meta_override=True, **settings)
    error = result.exc_string if result.err is not None else None
    out.write_text(json.dumps({"notebook": result.nb, "seconds": result.time, "error": error}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
