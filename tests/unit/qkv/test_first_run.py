"""Every first run is a concurrent run: what creates a shared file or folder does it once, whole, however many
processes ask at the same moment (two pytest workers, a test and ``make book``, two ``make`` targets).

Each test starts several processes on an empty folder at once and checks that the artifact was made once, is whole, and
left no temporary file behind: MathJax under ``_build/vendor`` (``publish/vendor.py``: two workers once raced on one
``.partial`` folder) and a model in the trained-weights cache (``qkv.recipes.weights``). The suite's own shared
artifacts (the course of every section, the smoke book, the grading corpus) are made by ``tests/support/once.py``
(``build_once``, ``run_once``), under a file lock each.
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
