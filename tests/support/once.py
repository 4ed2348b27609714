"""Artifacts the test session builds once, however many pytest-xdist workers ask for them.

An artifact is a folder under ``_build/tests/`` named by what it is and a hash of everything it is built from
(:func:`digest`): the first worker to ask builds it in a temporary folder beside it, under a file lock
(``filelock``), and renames it into place; the others wait on the lock and get the same folder. A change to any
input gives a new name, so a stale artifact is never reused, and a build that failed half-way is never mistaken
for a finished one (the rename is the last step).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from filelock import FileLock

from course.notebooks import ROOT

ARTIFACTS = ROOT / "_build" / "tests"
#: Folders and files never part of an input (caches and editor droppings).
IGNORED = ("__pycache__", ".ipynb_checkpoints", ".pytest_cache", ".hypothesis")


def files_under(*paths: Path) -> list[Path]:
    """Every file of ``paths`` (a folder is walked), sorted, without caches."""
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            out += [p for p in path.rglob("*") if p.is_file() and not set(p.parts) & set(IGNORED)]
        elif path.is_file():
            out.append(path)
    return sorted(set(out))


def digest(*paths: Path, extra: str = "") -> str:
    """A short hash of the names (relative to the repository) and contents of every file under ``paths``."""
    h = hashlib.sha256(extra.encode())
    for path in files_under(*paths):
        name = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        h.update(str(name).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def build_once(name: str, key: str, produce: Callable[[Path], None], root: Path = ARTIFACTS) -> Path:
    """The folder ``root/<name>.<key>``, made by ``produce(folder)`` the first time any process asks for it.

    ``produce`` fills an empty folder; if it raises, nothing is kept and the next caller tries again. Older
    versions of the same artifact (other keys) are removed once the new one is in place.
    """
    root.mkdir(parents=True, exist_ok=True)
    target = root / f"{name}.{key}"
    with FileLock(str(root / f"{name}.lock")):
        if target.is_dir():
            return target
        building = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=root))
        try:
            produce(building)
        except BaseException:
            shutil.rmtree(building, ignore_errors=True)
            raise
        building.rename(target)
        for old in root.glob(f"{name}.*"):
            if old != target and old.is_dir():
                shutil.rmtree(old, ignore_errors=True)
    return target


def inputs_of(paths: Iterable[Path]) -> list[Path]:
    """``paths`` that exist (an optional input, such as a section's rubric, may be absent)."""
    return [p for p in paths if p.exists()]


def shared_dir(tmp_path_factory) -> Path:
    """A folder every pytest-xdist worker of this session shares (this session's own folder without xdist): the
    pytest-xdist recipe for fixtures that must run once per session (``tmp_path_factory.getbasetemp().parent``)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def run_once(folder: Path, produce):
    """``produce(folder)`` once, however many processes ask (pytest-xdist workers share ``folder``): the first one
    runs it, under the same kind of file lock as :func:`build_once`, and the others wait and get the same
    JSON-serialisable value. For a run whose folder lives as long as the test session (``shared_dir``), where
    :func:`build_once` keeps an artifact across sessions, keyed by its inputs."""
    folder.mkdir(parents=True, exist_ok=True)
    done = folder / "result.json"
    with FileLock(str(folder / ".lock")):
        if not done.exists():
            value = json.dumps(produce(folder))
            done.write_text(value)
    return json.loads(done.read_text())
