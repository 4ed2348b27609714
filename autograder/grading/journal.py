"""The journal of a run: each finished submission, one JSON line, so that an interrupted run finishes the class
when started again, grading nothing twice."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path

from autograder import sandbox as sb
from autograder.grading.results import Result
from autograder.nbcourse import Course
from autograder.submissions import Submission


class Journal:
    """The submissions of this run that are finished, one JSON line each (``COURSE/grading-journal.jsonl``), so
    that a run that was interrupted (Ctrl-C, a kill, a lost machine) finishes the class when it is started again:
    what the journal holds is kept, the rest is graded, nothing twice.

    Why a journal and not the gradebook as the record: the gradebook holds grades of earlier runs too (and
    formgrader scores), so it cannot tell what this run finished; and it lacks what ``grades.csv`` and the report
    need (status, reason, failures, flags). A line counts only if it is whole (a kill mid-write leaves a torn last
    line, which is ignored) and only for the same submission file, limits, tampering policy and course version
    (:meth:`token`); its grades are in the gradebook already, written before the line. A kill between the two
    only means that submission is graded again, which writes the same grades (nbgrader updates, never adds).
    The file is removed once ``grades.csv`` and the report are written: the next run grades everything again.
    """

    NAME = "grading-journal.jsonl"

    def __init__(self, path: Path | None):
        self.path = path
        self._file = None

    @staticmethod
    def token(sub: Submission, limits: sb.Limits, course: Course, tampered: str) -> str:
        """What a journal line must match to be kept: the submitted file's bytes (or why it is missing), the
        limits of its run, the tampering policy ``tampered``, the course's release notebook and the grader's code."""
        from autograder import cluster

        digest = hashlib.sha256()
        if sub.path is not None and sub.path.is_file() and not sub.path.is_symlink():
            with open(sub.path, "rb") as f:
                while chunk := f.read(1 << 20):
                    digest.update(chunk)
        else:
            digest.update(f"missing: {sub.missing}".encode())
        release = course.release_path(sub.assignment, sub.notebook)
        parts = (repr(limits), tampered, cluster.course_version(), str(sub.timestamp), sub.timestamp_note, sub.renamed)
        for part in parts:
            digest.update(b"\0" + part.encode())
        digest.update(release.read_bytes())
        return digest.hexdigest()[:32]

    def finished(self, tokens: dict[tuple, str]) -> dict[tuple, Result]:
        """The results the journal holds for ``tokens`` (key -> token of this run's submissions)."""
        found: dict[tuple, Result] = {}
        if self.path is None or not self.path.exists():
            return found
        for line in self.path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True):
            if not line.endswith("\n"):
                continue  # torn by a kill mid-write
            try:
                entry = json.loads(line)
                key = tuple(entry["key"])
                if tokens.get(key) != entry["token"]:
                    continue
                data = entry["result"]
                data["waiting"], data["flags"] = tuple(data["waiting"]), tuple(data["flags"])
                found[key] = Result(**data)
            except (ValueError, KeyError, TypeError):
                continue
        return found

    def add(self, token: str, result: Result) -> None:
        """Record ``result`` as finished: one whole line, on disk (fsync) before this returns."""
        if self.path is None:
            return
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "a+b")  # noqa: SIM115 (kept open for the run)
            self._file.seek(0, os.SEEK_END)
            if self._file.tell():
                self._file.seek(-1, os.SEEK_END)
                if self._file.read(1) != b"\n":  # a torn last line: end it, so that it stays apart
                    self._file.write(b"\n")
        entry = {"key": list(result.key), "token": token, "result": dataclasses.asdict(result)}
        self._file.write((json.dumps(entry) + "\n").encode())
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def remove(self) -> None:
        """The run is complete: the next one starts afresh."""
        self.close()
        if self.path is not None:
            self.path.unlink(missing_ok=True)
