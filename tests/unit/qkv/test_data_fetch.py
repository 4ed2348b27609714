"""Tests of qkv.data._fetch: where data files are looked for, checksum checks, downloads and their errors."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
import os
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

import pytest

from qkv.data import _fetch
from qkv.data._fetch import ChecksumError, DataFile, cache_dir, find, locate, read_verified
from qkv.data.fashion_mnist import FASHION_MNIST_FILES
from qkv.data.mt import FRA_ENG
from qkv.data.timemachine import TIME_MACHINE

GOOD = b"The Time Traveller (for so it will be convenient to speak of him)\n" * 20
URL = "http://example.invalid/data/notes.txt"


def sha1(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()


def make_file(**extra) -> DataFile:
    fields = dict(name="notes.txt (a test file)", relpath="sub/notes.txt", checksum=sha1(GOOD), url=URL)
    return DataFile(**{**fields, **extra})


def put(folder: Path, relpath: str, data: bytes) -> Path:
    path = folder / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def files_under(folder: Path) -> list[Path]:
    """The files under ``folder``, less the download's lock files (``<file>.lock``: ``qkv._lock``, empty and kept,
    as a lock file must be for the next process to take it safely)."""
    if not folder.exists():
        return []
    return sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.endswith(".lock"))


class FakeResponse(io.BytesIO):
    """What urlopen returns: a readable body with headers; optionally fails after ``fail_after`` bytes."""

    def __init__(self, body: bytes, fail_after: int | None = None):
        super().__init__(body)
        self.headers = {"Content-Length": str(len(body))}
        self.fail_after = fail_after

    def read(self, size=-1):
        if self.fail_after is not None and self.tell() >= self.fail_after:
            raise ConnectionResetError("connection reset by peer (simulated)")
        return super().read(size)


@pytest.fixture
def serve(monkeypatch):
    """Replace urlopen by a fake server of ``{url: body}``; returns the log of requested URLs."""
    log: list[str] = []

    def install(routes: dict[str, bytes], fail_after: int | None = None):
        def fake_urlopen(url, timeout=None):
            log.append(url)
            if url not in routes:
                raise urllib.error.URLError("no route (simulated)")
            return FakeResponse(routes[url], fail_after)

        monkeypatch.setattr(urllib.request, "urlopen", fake_urlopen)
        monkeypatch.delenv("QKV_OFFLINE", raising=False)
        return log

    return install


# --- where files are looked for --------------------------------------------------------------------------------


def test_data_dir_argument_is_searched_before_the_cache(tmp_path, isolated_data_env):
    file = make_file()
    mine = put(tmp_path / "mine", file.relpath, GOOD)
    put(isolated_data_env, file.relpath, b"a corrupt cached copy")  # would raise if it were looked at
    assert locate(file, data_dir=tmp_path / "mine") == mine


def test_data_dir_argument_then_env_variable_then_cache(tmp_path, isolated_data_env, monkeypatch):
    file = make_file()
    arg, env = put(tmp_path / "arg", file.relpath, GOOD), put(tmp_path / "env", file.relpath, GOOD)
    cached = put(isolated_data_env, file.relpath, GOOD)
    monkeypatch.setenv("QKV_DATA_DIR", str(tmp_path / "env"))
    assert locate(file, data_dir=tmp_path / "arg") == arg
    assert locate(file, data_dir=tmp_path / "empty") == env  # a folder without the file is skipped
    assert locate(file) == env
    monkeypatch.delenv("QKV_DATA_DIR")
    assert locate(file) == cached


def test_valid_cached_copy_is_used_without_data_dir(isolated_data_env, serve):
    log = serve({})
    file = make_file()
    cached = put(isolated_data_env, file.relpath, GOOD)
    assert cache_dir() == isolated_data_env
    assert locate(file) == cached
    assert log == []  # nothing downloaded


def test_alternative_paths_and_system_folders(tmp_path, isolated_data_env):
    file = make_file(alt_relpaths=("notes.txt",), system_dirs=(str(tmp_path / "system"),))
    system = put(tmp_path / "system", "notes.txt", GOOD)
    assert locate(file, data_dir=tmp_path / "nothing-here") == system  # system folder before the cache
    top = put(tmp_path / "data", "notes.txt", GOOD)
    assert locate(file, data_dir=tmp_path / "data") == top  # the top level of a data folder is accepted
    nested = put(tmp_path / "data", file.relpath, GOOD)
    assert locate(file, data_dir=tmp_path / "data") == nested  # ... but relpath comes first


# --- corrupt files -----------------------------------------------------------------------------------------------


def test_truncated_file_in_data_dir_is_an_error_and_left_untouched(tmp_path, isolated_data_env):
    file = make_file()
    bad = put(tmp_path / "mine", file.relpath, GOOD[:100])
    put(isolated_data_env, file.relpath, GOOD)  # a good cached copy must not be used silently instead
    with pytest.raises(ChecksumError) as err:
        locate(file, data_dir=tmp_path / "mine")
    msg = str(err.value)
    for expected in (file.name, str(bad), sha1(GOOD), sha1(GOOD[:100]), "untouched", "data_dir", URL):
        assert expected in msg, f"{expected!r} missing from the message: {msg}"
    assert bad.read_bytes() == GOOD[:100]


def test_wrong_checksum_in_cache_says_to_delete_the_cached_copy(isolated_data_env):
    file = make_file()
    bad = put(isolated_data_env, file.relpath, GOOD + b"extra")
    with pytest.raises(ChecksumError) as err:
        locate(file)
    msg = str(err.value)
    assert file.name in msg and sha1(GOOD) in msg and sha1(GOOD + b"extra") in msg
    assert f"delete the corrupt cached copy at {bad}" in msg


def test_verification_is_cached_until_the_file_changes(tmp_path, isolated_data_env, monkeypatch):
    file = make_file()
    path = put(tmp_path / "mine", file.relpath, GOOD)
    calls = []
    real = _fetch._found_checksum
    monkeypatch.setattr(_fetch, "_found_checksum", lambda *a: calls.append(a) or real(*a))
    locate(file, data_dir=tmp_path / "mine")
    locate(file, data_dir=tmp_path / "mine")
    assert len(calls) == 1  # the second load did not hash again
    path.write_bytes(GOOD[:-1])  # a different size: must be checked again, and fail
    with pytest.raises(ChecksumError):
        locate(file, data_dir=tmp_path / "mine")


def test_gzip_checksum_is_of_the_decompressed_content(tmp_path, isolated_data_env):
    file = DataFile(
        name="blob (gzip test)",
        relpath="blob.gz",
        checksum=hashlib.sha256(GOOD).hexdigest(),
        url=URL,
        gunzip=True,
        alt_relpaths=("blob",),
    )
    put(tmp_path / "gz", "blob.gz", gzip.compress(GOOD))
    put(tmp_path / "raw", "blob", GOOD)
    assert locate(file, data_dir=tmp_path / "gz").name == "blob.gz"
    assert locate(file, data_dir=tmp_path / "raw").name == "blob"
    path, content = read_verified(file, data_dir=tmp_path / "gz")
    assert content == GOOD and path.name == "blob.gz"
    truncated = put(tmp_path / "cut", "blob.gz", gzip.compress(GOOD)[:-30])
    with pytest.raises(ChecksumError) as err:
        locate(file, data_dir=tmp_path / "cut")
    assert str(truncated) in str(err.value) and "unreadable" in str(err.value)


def test_a_gz_named_file_that_is_not_gzip_is_checked_as_it_is(tmp_path, isolated_data_env):
    """With gunzip=True only gzip content (magic bytes 1f 8b) is decompressed: a plain file, even one named
    ``.gz`` (a copy someone decompressed in place), is checked and returned as it is."""
    file = DataFile(
        name="blob (gzip test)", relpath="blob.gz", checksum=hashlib.sha256(GOOD).hexdigest(), url=URL, gunzip=True
    )
    plain = put(tmp_path / "plain", "blob.gz", GOOD)
    assert locate(file, data_dir=tmp_path / "plain") == plain
    other = put(tmp_path / "other", "blob.gz", GOOD)  # another path, so read_verified checks it anew
    assert read_verified(file, data_dir=tmp_path / "other") == (other, GOOD)
    wrong = put(tmp_path / "wrong", "blob.gz", GOOD[:-1])  # not gzip either, and not the right content
    with pytest.raises(ChecksumError) as err:
        read_verified(file, data_dir=tmp_path / "wrong")
    assert str(wrong) in str(err.value) and hashlib.sha256(GOOD[:-1]).hexdigest() in str(err.value)


# --- downloads ---------------------------------------------------------------------------------------------------


def test_missing_file_without_network_lists_the_places_searched(tmp_path, isolated_data_env, monkeypatch):
    monkeypatch.delenv("QKV_OFFLINE")

    def no_network(url, dest, desc):
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr(_fetch, "_download", no_network)
    file = make_file()
    with pytest.raises(FileNotFoundError) as err:
        locate(file, data_dir=tmp_path / "mine")
    msg = str(err.value)
    for expected in (file.name, str(tmp_path / "mine" / file.relpath), str(isolated_data_env / file.relpath)):
        assert expected in msg, f"{expected!r} missing from the message: {msg}"
    assert URL in msg and "name resolution" in msg and "data_dir=" in msg and "QKV_DATA_DIR" in msg
    assert files_under(isolated_data_env) == []  # no half file left in the cache


def test_offline_mode_refuses_to_download(tmp_path, isolated_data_env, monkeypatch):
    monkeypatch.setattr(_fetch, "_download", lambda *a: pytest.fail("downloaded although QKV_OFFLINE is set"))
    with pytest.raises(FileNotFoundError) as err:
        locate(make_file(), data_dir=tmp_path)
    assert "QKV_OFFLINE" in str(err.value) and "notes.txt" in str(err.value)


def test_download_of_a_zip_member_into_the_cache(isolated_data_env, serve):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("pack/notes.txt", GOOD)
        archive.writestr("pack/other.txt", b"not needed")
    archive_bytes = buffer.getvalue()
    zip_url = "http://example.invalid/pack.zip"
    log = serve({zip_url: archive_bytes})
    file = make_file(url=zip_url, archive_checksum=sha1(archive_bytes), member="pack/notes.txt")
    path = locate(file)
    assert path == isolated_data_env / file.relpath and path.read_bytes() == GOOD
    assert files_under(isolated_data_env) == [path]  # no archive, no temporary file left behind
    assert locate(file) == path and log == [zip_url]  # the second load uses the cache


def test_interrupted_download_leaves_nothing(isolated_data_env, serve):
    serve({URL: GOOD}, fail_after=64)
    with pytest.raises(FileNotFoundError) as err:
        locate(make_file())
    assert "connection reset" in str(err.value)
    assert files_under(isolated_data_env) == []


def test_download_with_wrong_content_is_rejected_and_not_saved(isolated_data_env, serve):
    serve({URL: GOOD[:-5]})
    with pytest.raises(ChecksumError) as err:
        locate(make_file())
    assert URL in str(err.value) and sha1(GOOD) in str(err.value)
    assert files_under(isolated_data_env) == []


@pytest.mark.parametrize("value", [None, "", "0", "false", "False", " no ", "NO"])
def test_offline_variable_values_that_allow_downloads(value, isolated_data_env, monkeypatch):
    """Unset, empty, 0, false and no (any case, surrounding spaces ignored) leave downloads on."""
    if value is None:
        monkeypatch.delenv("QKV_OFFLINE")
    else:
        monkeypatch.setenv("QKV_OFFLINE", value)
    monkeypatch.setattr(_fetch, "_download", lambda url, dest, desc: Path(dest).write_bytes(GOOD))
    assert locate(make_file()).read_bytes() == GOOD, f"QKV_OFFLINE={value!r} must allow the download"


@pytest.mark.parametrize("value", ["1", "true", "YES", "on", " 1 ", "anything else"])
def test_offline_variable_values_that_forbid_downloads(value, isolated_data_env, monkeypatch):
    """1, true, yes, on, and any other value not in the list above, forbid downloads (the safe side)."""
    monkeypatch.setenv("QKV_OFFLINE", value)
    monkeypatch.setattr(_fetch, "_download", lambda *a: pytest.fail(f"downloaded although QKV_OFFLINE={value!r}"))
    with pytest.raises(FileNotFoundError, match="QKV_OFFLINE"):
        locate(make_file())
    assert files_under(isolated_data_env) == []


def test_download_of_a_gzip_file_is_checked_on_its_decompressed_content(isolated_data_env, serve):
    """A ``.gz`` source with gunzip=True is saved compressed, as served, and checked on what it decompresses to."""
    gz_url = "http://example.invalid/data/notes.txt.gz"
    body = gzip.compress(GOOD)
    log = serve({gz_url: body})
    file = make_file(relpath="sub/notes.txt.gz", checksum=hashlib.sha256(GOOD).hexdigest(), url=gz_url, gunzip=True)
    path = locate(file)
    assert path == isolated_data_env / file.relpath and path.read_bytes() == body
    assert read_verified(file) == (path, GOOD) and log == [gz_url]
    assert files_under(isolated_data_env) == [path]


def test_download_of_a_gzip_member_of_a_zip_archive(isolated_data_env, serve):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("pack/notes.txt.gz", gzip.compress(GOOD))
    zip_url = "http://example.invalid/pack.zip"
    serve({zip_url: buffer.getvalue()})
    file = make_file(
        relpath="sub/notes.txt.gz",
        checksum=hashlib.sha256(GOOD).hexdigest(),
        url=zip_url,
        archive_checksum=sha1(buffer.getvalue()),
        member="pack/notes.txt.gz",
        gunzip=True,
    )
    assert read_verified(file) == (isolated_data_env / file.relpath, GOOD)


def test_a_real_fashion_mnist_file_downloads_into_an_empty_cache(isolated_data_env, serve):
    """What a student without Debian's package gets: Zalando's .gz served as is must pass the pinned checksum."""
    file = FASHION_MNIST_FILES["t10k-labels-idx1-ubyte"]
    system = Path(file.system_dirs[0]) / Path(file.relpath).name
    if not system.is_file():
        pytest.skip(f"needs Debian's dataset-fashion-mnist ({system}) to serve as the fake download")
    body = system.read_bytes()
    assert body[:2] == b"\x1f\x8b", "Zalando serves the files gzip-compressed"
    serve({file.url: body})
    path, content = read_verified(dataclasses.replace(file, system_dirs=()))  # look in the cache only
    assert path == isolated_data_env / file.relpath and path.read_bytes() == body
    assert content == gzip.decompress(body) and content[:4] == b"\x00\x00\x08\x01"  # IDX: ubyte, 1-D


# --- descriptions and the real files -----------------------------------------------------------------------------


@pytest.mark.parametrize("checksum", ["abc", "Z" * 40, sha1(GOOD).upper()])
def test_datafile_rejects_malformed_checksums(checksum):
    with pytest.raises(ValueError, match="SHA-1"):
        make_file(checksum=checksum)


def test_datafile_needs_archive_checksum_and_member_together():
    with pytest.raises(ValueError, match="both"):
        make_file(member="pack/notes.txt")


@pytest.mark.parametrize("file", [FRA_ENG, TIME_MACHINE], ids=["fra-eng", "timemachine"])
def test_real_files_match_their_published_sha1(file, data_dir, isolated_data_env):
    path = locate(file, data_dir=data_dir)
    assert path == find(file, data_dir=data_dir)
    assert hashlib.sha1(path.read_bytes()).hexdigest() == file.checksum
    assert os.path.samefile(path, data_dir / file.relpath)
