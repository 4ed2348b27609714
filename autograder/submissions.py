"""What a class handed in: finding each student's notebooks, unpacking a zip safely, reading a file.

Used by :mod:`autograder.grade`. Nothing here trusts the submission: a zip is
checked for absolute paths, ``..``, links, and its size and file count; a file
must parse as a notebook, or :class:`InvalidNotebook` gives the reason that the
student is shown.
"""

from __future__ import annotations

import dataclasses
import json
import stat
import warnings
import zipfile
from datetime import datetime
from pathlib import Path, PurePosixPath

import nbformat

from autograder import sandbox as sb
from autograder.nbcourse import Course, GradingError  # noqa: F401 (GradingError: re-exported)

MAX_NOTEBOOK_BYTES = 20 * sb.MiB
ZIP_LIMITS = {"files": 20_000, "bytes": 2 * sb.GiB, "file_bytes": 64 * sb.MiB}


class InvalidNotebook(ValueError):
    """The submitted file is not a notebook we can read; the message is the reason given to the student."""


@dataclasses.dataclass
class Submission:
    """One notebook a student was expected to hand in, and the file found for it."""

    student: str
    assignment: str
    notebook: str
    path: Path | None = None  # None: missing, and ``missing`` says what was found instead
    missing: str = ""
    timestamp: datetime | None = None  # when it was handed in (nbgrader's ``timestamp.txt``), in UTC
    timestamp_note: str = ""  # why a ``timestamp.txt`` beside it was not used
    renamed: str = ""  # the notebook was found under another name: what the student is told


def _entries(folder: Path) -> list[Path]:
    if not folder.is_dir() or folder.is_symlink():
        return []
    return sorted(p for p in folder.iterdir() if not p.name.startswith(".") and p.name != "__MACOSX")


def extract_zip(path: Path, dest: Path, limits: dict = ZIP_LIMITS) -> list[str]:
    """Extract a zip of submissions safely: no absolute paths, no ``..``, no links, bounded size and count.

    Returns warnings about the entries it skipped; raises :class:`GradingError` if the archive
    is not a zip or exceeds the limits.
    """
    warnings, total = [], 0
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as err:
        raise GradingError(f"{path} is not a readable zip file: {err}") from err
    with archive:
        infos = archive.infolist()
        if len(infos) > limits["files"]:
            raise GradingError(f"{path} holds {len(infos)} entries, more than the {limits['files']} allowed")
        for info in infos:
            name = info.filename
            parts = PurePosixPath(name).parts
            mode = info.external_attr >> 16
            if name.startswith(("/", "\\")) or "\\" in name or ".." in parts or (parts and ":" in parts[0]):
                warnings.append(f"skipped unsafe path {name!r} in the zip")
                continue
            if stat.S_ISLNK(mode):
                warnings.append(f"skipped symbolic link {name!r} in the zip")
                continue
            target = dest.joinpath(*parts) if parts else dest
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            written = 0
            with archive.open(info) as src, open(target, "wb") as out:
                while chunk := src.read(1 << 20):
                    written += len(chunk)
                    total += len(chunk)
                    if written > limits["file_bytes"] or total > limits["bytes"]:
                        raise GradingError(f"{path} expands to more than the size allowed ({name!r})")
                    out.write(chunk)
    return warnings


def find_root(folder: Path, assignments) -> Path:
    """The folder whose sub-folders are students (accepts one wrapping folder above it)."""

    def looks_like_root(root: Path) -> bool:
        return any((student / a).is_dir() for student in _entries(root) for a in assignments)

    if looks_like_root(folder):
        return folder
    inner = [p for p in _entries(folder) if p.is_dir()]
    if len(inner) == 1 and looks_like_root(inner[0]):
        return inner[0]
    return folder


def discover(root: Path, course: Course) -> list[Submission]:
    """One :class:`Submission` per (student, assignment, notebook): each student is expected to hand in
    every notebook of every assignment that someone in the folder handed in."""
    students = [p for p in _entries(root) if p.is_dir() and not p.is_symlink()]
    present = sorted({a.name for s in students for a in _entries(s) if a.name in course.notebooks})
    if not present:
        known = ", ".join(sorted(course.notebooks))
        raise GradingError(
            f"no submission found in {root}: expected folders STUDENT/ASSIGNMENT/NOTEBOOK.ipynb "
            f"with ASSIGNMENT one of: {known}"
        )
    subs = []
    for student in students:
        for assignment in present:
            folder = student / assignment
            for notebook in course.notebooks[assignment]:
                sub = Submission(student.name, assignment, notebook)
                if folder.is_dir() and not folder.is_symlink():
                    sub.timestamp, sub.timestamp_note = read_timestamp(folder)
                path = folder / f"{notebook}.ipynb"
                if folder.is_dir() and not folder.is_symlink() and (path.is_file() or path.is_symlink()):
                    sub.path = path
                elif folder.is_dir() and not folder.is_symlink():
                    found = [p.name for p in _entries(folder)]
                    other = [p for p in _entries(folder) if p.suffix == ".ipynb" and p.is_file() and not p.is_symlink()]
                    if len(other) == 1 and len(course.notebooks[assignment]) == 1:
                        # "Copy of X.ipynb" (Colab's "Save a copy"), "X (1).ipynb" (a second download): the one
                        # notebook handed in for this assignment is graded; the rebuild still checks its cells.
                        sub.path = other[0]
                        sub.renamed = (
                            f"graded {other[0].name}, the only notebook in {student.name}/{assignment}/; "
                            f"next time hand it in as {notebook}.ipynb"
                        )
                        subs.append(sub)
                        continue
                    sub.missing = f"no {notebook}.ipynb in {student.name}/{assignment}/; found: " + (
                        ", ".join(found[:10]) or "nothing"
                    )
                    if other:
                        sub.missing += f". Hand in your notebook for {assignment} as {notebook}.ipynb"
                else:
                    found = [p.name for p in _entries(student)]
                    sub.missing = f"no folder {student.name}/{assignment}/; found: " + (
                        ", ".join(found[:10]) or "nothing"
                    )
                subs.append(sub)
    return subs


MAX_TIMESTAMP_BYTES = 1024


def read_timestamp(folder: Path) -> tuple[datetime | None, str]:
    """The time an assignment was handed in, from nbgrader's ``timestamp.txt`` in ``folder`` (as ``nbgrader
    collect`` and ``zip_collect`` leave it), as a naive UTC datetime like nbgrader's gradebook keeps.

    Returns ``(None, "")`` when there is no such file, and ``(None, reason)`` when it cannot be used (the
    submission is then graded as on time, and the reason is reported).
    """
    import dateutil.parser
    from nbgrader.utils import parse_utc

    path = folder / "timestamp.txt"
    if not path.exists() and not path.is_symlink():
        return None, ""
    if path.is_symlink() or not path.is_file():
        return None, "timestamp.txt is not a plain file; graded as on time"
    if path.stat().st_size > MAX_TIMESTAMP_BYTES:
        return None, f"timestamp.txt is over {MAX_TIMESTAMP_BYTES} bytes; graded as on time"
    text = path.read_bytes().decode("utf-8", errors="replace").strip()
    try:
        # nbgrader writes "2026-12-01 18:30:00.250000 CET" (a zone name, which its parse_utc reads); it would
        # take a numeric "+0200" as 200 seconds, so everything else goes to dateutil whole.
        stamp = parse_utc(text) if text.split(" ")[-1].isalpha() else parse_utc(dateutil.parser.parse(text))
    except Exception:  # noqa: BLE001 (dateutil raises several kinds of errors on odd text)
        stamp = None
    if not isinstance(stamp, datetime):
        return None, f"timestamp.txt holds {text[:60]!r}, not a time nbgrader can read; graded as on time"
    return stamp, ""


def read_submission(path: Path) -> nbformat.NotebookNode:
    """Parse a submitted file as a notebook, or raise :class:`InvalidNotebook` with the reason."""
    if path.is_symlink():
        raise InvalidNotebook("the notebook is a symbolic link")
    size = path.stat().st_size
    if size == 0:
        raise InvalidNotebook("the file is empty")
    if size > MAX_NOTEBOOK_BYTES:
        raise InvalidNotebook(f"the file is {size} bytes, more than the {MAX_NOTEBOOK_BYTES} allowed")
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text)
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise InvalidNotebook(f"not valid JSON ({type(err).__name__}: {str(err)[:200]})") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise InvalidNotebook("JSON, but not a notebook (no list of cells)")
    try:
        with warnings.catch_warnings():  # nbformat warns (and fixes) duplicated cell ids and the like
            warnings.simplefilter("ignore")
            nb = nbformat.reads(text, as_version=4)
    except Exception as err:  # noqa: BLE001 (nbformat raises many kinds of errors on odd input)
        raise InvalidNotebook(f"not a notebook nbformat can read ({type(err).__name__}: {str(err)[:200]})") from None
    for cell in nb.cells:
        if not isinstance(cell, dict) or not isinstance(cell.get("source", ""), str):
            raise InvalidNotebook("a cell is not a notebook cell")
    return nb
