"""autograder.submissions: finding each student's notebooks, reading a file, timestamps, zips."""

from __future__ import annotations

import datetime
import stat
import zipfile

import pytest

from autograder import submissions
from autograder.nbcourse import Course
from tests.support import corpus

SLUG = corpus.SLUG


def test_invalid_files_are_named_for_what_they_are(tmp_path):
    cases = {"empty": b"", "json": b"{'cells': ", "list": b"[1, 2]", "cells": b'{"cells": [1], "nbformat": 4}'}
    reasons = {}
    for name, content in cases.items():
        (tmp_path / name).write_bytes(content)
        with pytest.raises(submissions.InvalidNotebook) as err:
            submissions.read_submission(tmp_path / name)
        reasons[name] = str(err.value)
    assert reasons["empty"] == "the file is empty"
    assert reasons["json"].startswith("not valid JSON")
    assert reasons["list"].startswith("JSON, but not a notebook")
    (tmp_path / "link").symlink_to(tmp_path / "json")
    with pytest.raises(submissions.InvalidNotebook, match="symbolic link"):
        submissions.read_submission(tmp_path / "link")


def test_read_timestamp_reads_nbgraders_file_and_refuses_odd_ones(tmp_path):
    assert submissions.read_timestamp(tmp_path) == (None, "")
    (tmp_path / "timestamp.txt").write_text("2026-12-01 18:30:00.250000 CET\n")
    stamp, note = submissions.read_timestamp(tmp_path)
    assert (stamp, note) == (datetime.datetime(2026, 12, 1, 17, 30, 0, 250000), "")  # naive UTC, as nbgrader keeps
    (tmp_path / "timestamp.txt").write_text("2026-12-01T17:30:00+00:00")
    assert submissions.read_timestamp(tmp_path)[0] == datetime.datetime(2026, 12, 1, 17, 30)
    for content, why in (("yesterday, honest", "not a time"), ("1" * 2000, "over 1024 bytes")):
        (tmp_path / "timestamp.txt").write_text(content)
        stamp, note = submissions.read_timestamp(tmp_path)
        assert stamp is None and why in note and "graded as on time" in note
    (tmp_path / "timestamp.txt").unlink()
    (tmp_path / "timestamp.txt").symlink_to("/etc/hostname")
    assert "not a plain file" in submissions.read_timestamp(tmp_path)[1]


def fake_course(tmp_path):
    return Course(tmp_path, None, "", "", {"a1": ["nb"], "a2": ["nb2"]})


def test_discover_gives_every_student_every_handed_in_assignment(tmp_path):
    root = tmp_path / "class"
    handed_in = {"ann": ["a1/nb.ipynb", "a2/nb2.ipynb"], "bob": ["a1/x.txt", "a2/Copy of nb2.ipynb"], "cy": []}
    handed_in["dee"] = ["a1/nb (1).ipynb", "a1/nb (2).ipynb"]
    for student, files in handed_in.items():
        (root / student).mkdir(parents=True)
        for f in files:
            (root / student / f).parent.mkdir(parents=True, exist_ok=True)
            (root / student / f).write_text("{}")
    (root / ".hidden").mkdir()
    subs = {(s.student, s.assignment): s for s in submissions.discover(root, fake_course(tmp_path))}
    assert sorted(subs) == [(s, a) for s in ("ann", "bob", "cy", "dee") for a in ("a1", "a2")]
    assert subs["ann", "a1"].path == root / "ann" / "a1" / "nb.ipynb" and not subs["ann", "a1"].renamed
    assert subs["bob", "a1"].path is None and "found: x.txt" in subs["bob", "a1"].missing
    # The one notebook of a folder, under another name (Colab's "Copy of", a second download's "(1)"), is graded,
    # and the student is told the name to use; two such notebooks are not guessed between.
    assert subs["bob", "a2"].path == root / "bob" / "a2" / "Copy of nb2.ipynb"
    assert "graded Copy of nb2.ipynb" in subs["bob", "a2"].renamed and "as nb2.ipynb" in subs["bob", "a2"].renamed
    assert subs["dee", "a1"].path is None and "Hand in your notebook for a1 as nb.ipynb" in subs["dee", "a1"].missing
    assert subs["cy", "a2"].path is None and "no folder cy/a2/" in subs["cy", "a2"].missing
    with pytest.raises(submissions.GradingError, match="ASSIGNMENT one of: a1, a2"):
        submissions.discover(tmp_path / "class" / "ann" / "a1", fake_course(tmp_path))


def test_find_root_accepts_one_wrapping_folder(tmp_path):
    (tmp_path / "wrap" / "ann" / "a1").mkdir(parents=True)
    assert submissions.find_root(tmp_path, ["a1"]) == tmp_path / "wrap"
    assert submissions.find_root(tmp_path / "wrap", ["a1"]) == tmp_path / "wrap"


def test_extract_zip_skips_unsafe_entries_and_refuses_bombs(tmp_path):
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("class/ann/a1/nb.ipynb", "{}")
        zf.writestr("../escaped.txt", "x")
        zf.writestr("/absolute.txt", "x")
        link = zipfile.ZipInfo("class/ann/a1/link.ipynb")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(link, "/etc/passwd")
    dest = tmp_path / "out"
    dest.mkdir()
    warnings = submissions.extract_zip(archive, dest)
    assert sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file()) == ["class/ann/a1/nb.ipynb"]
    assert len(warnings) == 3 and not (tmp_path / "escaped.txt").exists()
    with zipfile.ZipFile(tmp_path / "bomb.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("a/b/c.ipynb", b"0" * 10_000)
        zf.writestr("a/b/d.ipynb", b"0")
    for limits, why in (
        ({"files": 1, "bytes": 10**6, "file_bytes": 10**6}, "entries"),
        ({"files": 10, "bytes": 10**6, "file_bytes": 1000}, "size"),
    ):
        target = tmp_path / why
        target.mkdir()
        with pytest.raises(submissions.GradingError, match=why):
            submissions.extract_zip(tmp_path / "bomb.zip", target, limits)
    (tmp_path / "notzip.zip").write_text("hello")
    with pytest.raises(submissions.GradingError, match="not a readable zip"):
        submissions.extract_zip(tmp_path / "notzip.zip", tmp_path)
