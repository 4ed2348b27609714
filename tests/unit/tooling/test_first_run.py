"""Every first run is a concurrent run: what creates a shared file or folder does it once, whole, however many
processes ask at the same moment (two pytest workers, a test and ``make book``, two ``make`` targets).

Each test starts several processes on an empty folder at once and checks that the artifact was made once, is
whole, and left no temporary file behind: MathJax under ``_build/vendor`` (``publish/vendor.py``: two workers once
raced on one ``.partial`` folder), a model in the trained-weights cache (``qkv.recipes.weights``) and a file in the
data cache (``qkv.data``), both under ``qkv._lock``; and two builds of one book folder run one after the other
(``publish.build_book.build``). The suite's own shared artifacts (the course of every section, the smoke book, the
grading corpus) are made by ``tests/support/once.py`` (``build_once``, ``run_once``), under a file lock each.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from publish import vendor

ROOT = Path(__file__).resolve().parents[3]
PROCESSES = 3


def _at_once(code: str, *args: str, env: dict | None = None) -> list[str]:
    """Run ``code`` in :data:`PROCESSES` Python processes started together; return what each printed."""
    import os

    procs = [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(code), *args],
            cwd=ROOT,
            env={**os.environ, **(env or {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(PROCESSES)
    ]
    outs = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        outs.append(out.strip())
    return outs


def test_mathjax_is_unpacked_once_whole_by_processes_that_ask_at_once(tmp_path):
    tgz = vendor.mathjax_dir().parent / f"mathjax-{vendor.MATHJAX_VERSION}.tgz"  # fetched once for the session
    shutil.copyfile(tgz, tmp_path / tgz.name)  # the fetch is npm's; the race was in unpacking
    code = """
        import sys
        from pathlib import Path
        from publish import vendor
        vendor.VENDOR = Path(sys.argv[1])
        print(vendor.mathjax_dir())
    """
    outs = _at_once(code, str(tmp_path))
    dest = tmp_path / f"mathjax-{vendor.MATHJAX_VERSION}"
    assert outs == [str(dest)] * PROCESSES
    assert (dest / "tex-chtml-full.js").stat().st_size > 1_000_000
    expected = sorted(p.relative_to(vendor.mathjax_dir()) for p in vendor.mathjax_dir().rglob("*"))
    assert sorted(p.relative_to(dest) for p in dest.rglob("*")) == expected
    leftovers = sorted(p.name for p in tmp_path.iterdir() if p.name not in (dest.name, tgz.name))
    assert all(name.endswith(".lock") for name in leftovers), f"left behind: {leftovers}"


def test_a_model_is_trained_once_by_processes_that_ask_for_it_at_once(tmp_path):
    code = """
        from tests.unit.qkv.test_recipes_weights import _fit
        fitted, log = _fit()
        print("trained" if fitted.trained else "loaded", fitted.path)
    """
    env = {"QKV_TRAINED_DIR": str(tmp_path), "QKV_TRAIN_SMOKE": "", "QKV_NO_TRAIN": ""}
    outs = _at_once(code, env=env)
    verdicts, paths = zip(*(out.split() for out in outs))
    assert sorted(verdicts) == ["loaded"] * (PROCESSES - 1) + ["trained"], outs
    assert len(set(paths)) == 1 and Path(paths[0]).is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([Path(paths[0]).name, Path(paths[0]).name + ".lock"])


def test_a_data_file_is_downloaded_once_by_processes_that_miss_it_at_once(tmp_path):
    """The data cache (``qkv.data``): processes that all miss a file start one download; the others wait for it.
    The source is a local ``file://`` address, and each download is slowed, so that the processes overlap."""
    import hashlib

    source = tmp_path / "source" / "pairs.txt"
    source.parent.mkdir()
    source.write_text("go .\tva !\n" * 1000)
    code = """
        import os, sys, time
        from pathlib import Path
        from qkv.data import _fetch
        download = _fetch._download

        def slow(url, dest, desc):  # every download is logged, then takes a while
            with open(sys.argv[3], "a") as log:
                log.write(f"{os.getpid()}\\n")
            time.sleep(1.0)
            download(url, dest, desc)

        _fetch._download = slow
        file = _fetch.DataFile("pairs", "fra-eng/pairs.txt", sys.argv[2], Path(sys.argv[1]).as_uri())
        print(_fetch.locate(file))
    """
    cache, log = tmp_path / "cache", tmp_path / "downloads.log"
    checksum = hashlib.sha256(source.read_bytes()).hexdigest()
    env = {"QKV_CACHE_DIR": str(cache), "QKV_OFFLINE": "", "QKV_DATA_DIR": str(tmp_path / "empty")}
    outs = _at_once(code, str(source), checksum, str(log), env=env)
    target = cache / "fra-eng" / "pairs.txt"
    assert outs == [str(target)] * PROCESSES
    assert len(log.read_text().split()) == 1, "more than one process downloaded the file"
    assert target.read_bytes() == source.read_bytes()
    assert sorted(p.name for p in target.parent.iterdir()) == ["pairs.txt", "pairs.txt.lock"]


def test_builds_of_one_book_folder_run_one_after_the_other_and_say_so(tmp_path):
    """Two ``make book`` at once (or a test beside one): ``publish.build_book.build`` lets one build a folder at a
    time; the others wait, saying why. The build itself is replaced by one that records when it ran."""
    code = """
        import sys, time
        from pathlib import Path
        from publish import build_book

        def record(edition, strict, out, quiet, transform):
            start = time.monotonic()
            time.sleep(0.5)
            with open(Path(sys.argv[1]) / "runs.log", "a") as log:
                log.write(f"{start} {time.monotonic()}\\n")
            return out

        build_book._build = record
        build_book.build("student", out=Path(sys.argv[1]) / "book")
    """
    proc = [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(code), str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE, text=True
        )
        for _ in range(PROCESSES)
    ]
    said = [p.communicate(timeout=120)[0] for p in proc]
    assert all(p.returncode == 0 for p in proc)
    runs = sorted(tuple(map(float, line.split())) for line in (tmp_path / "runs.log").read_text().splitlines())
    assert len(runs) == PROCESSES
    assert all(end <= next_start for (_, end), (next_start, _) in zip(runs, runs[1:])), f"builds overlapped: {runs}"
    assert sum("another build of" in out and "waiting" in out for out in said) >= 1, said


def test_two_threads_of_one_process_take_the_lock_in_turn(tmp_path):
    """A test's thread and a model trained in a background thread of the same worker: ``qkv._lock`` makes the second
    wait for the first, as it does a second process."""
    import threading
    import time

    from qkv._lock import locked

    spans, errors = [], []

    def hold():
        try:
            with locked(tmp_path / "model.pt") as held:
                start = time.monotonic()
                time.sleep(0.3)
                spans.append((start, time.monotonic(), held))
        except Exception as err:  # noqa: BLE001 (reported below)
            errors.append(err)

    threads = [threading.Thread(target=hold) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not errors, errors
    (a_start, a_end, a_held), (b_start, b_end, b_held) = sorted(spans)
    assert a_held and b_held and a_end <= b_start, spans
