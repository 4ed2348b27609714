"""Finding, checking and fetching the course's data files (the role of D2L's ``download`` / ``extract``).

D2L's data modules (10.5 ``MTFraEng``, 9.2 ``TimeMachine``, 4.2 ``FashionMNIST``)
download each file into ``../data`` and check a SHA-1. Here one mechanism serves
every data set. A :class:`DataFile` describes a file: where it sits inside a data
folder, the checksum of its content, and its public source. :func:`locate` looks
for it, in order, in

1. the ``data_dir`` argument,
2. the folder named by the environment variable ``QKV_DATA_DIR``,
3. the system folders the description names (Debian's ``dataset-fashion-mnist``),
4. the cache, ``QKV_CACHE_DIR`` (default ``~/.cache/qkv``),

and otherwise downloads it into the cache. Whatever it finds is checked against
the checksum; a mismatch is an error that says what to do, and a file in a
folder the user owns is never replaced behind their back. Set ``QKV_OFFLINE=1``
to forbid downloads (the test suite does).
"""

from __future__ import annotations

import gzip
import hashlib
import http.client
import os
import shutil
import tempfile
import urllib.request
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from tqdm.auto import tqdm

from qkv._lock import locked

__all__ = ["DataFile", "ChecksumError", "locate", "read_verified", "find", "cache_dir", "content_checksum"]

_ALGORITHMS = {40: "sha1", 64: "sha256"}  # hex digest length -> hashlib name
_CHUNK = 1 << 20

# Paths whose checksum was verified in this process, keyed by (path, mtime, size, checksum).
_VERIFIED: set[tuple[str, int, int, str]] = set()


class ChecksumError(ValueError):
    """A data file was found but its content is not the expected one (course helper, D2L 10.5)."""


def _algorithm(checksum: str, what: str) -> str:
    algo = _ALGORITHMS.get(len(checksum))
    if algo is None or any(c not in "0123456789abcdef" for c in checksum):
        raise ValueError(f"{what} must be a lowercase hex SHA-1 (40 digits) or SHA-256 (64 digits), got {checksum!r}")
    return algo


@dataclass(frozen=True)
class DataFile:
    """Where a data file lives and how to recognise it (course helper for D2L 4.2, 9.2 and 10.5 data).

    Args:
        name: a human-readable name used in messages, e.g. ``"fra.txt (English-French pairs)"``.
        relpath: the path inside a data folder and inside the cache, e.g. ``"fra-eng/fra.txt"``.
        checksum: hex SHA-1 or SHA-256 of the file's content (the algorithm follows from the length).
        url: the public source: the file itself, or a zip archive holding it.
        archive_checksum: for a zip source, the hex SHA-1 or SHA-256 of the archive.
        member: for a zip source, the file's path inside the archive.
        gunzip: the checksum is that of the decompressed content when the file is gzip-compressed
            (so a ``.gz`` file and its decompressed twin both match).
        alt_relpaths: other paths accepted inside a data folder (e.g. the file at the top level).
        system_dirs: folders of a system package that may hold the file under its base name.
    """

    name: str
    relpath: str
    checksum: str
    url: str
    archive_checksum: str | None = None
    member: str | None = None
    gunzip: bool = False
    alt_relpaths: tuple[str, ...] = ()
    system_dirs: tuple[str, ...] = ()

    def __post_init__(self):
        _algorithm(self.checksum, f"the checksum of {self.name}")
        if (self.archive_checksum is None) != (self.member is None):
            raise ValueError(f"{self.name}: give both archive_checksum and member for a zip source, or neither")
        if self.archive_checksum is not None:
            _algorithm(self.archive_checksum, f"the archive checksum of {self.name}")

    @property
    def algorithm(self) -> str:
        """``"sha1"`` or ``"sha256"``."""
        return _algorithm(self.checksum, self.name)


def cache_dir() -> Path:
    """The download cache: ``$QKV_CACHE_DIR``, or ``~/.cache/qkv`` (course helper, D2L 10.5)."""
    env = os.environ.get("QKV_CACHE_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "qkv"


def _digest(stream, algo: str) -> str:
    h = hashlib.new(algo)
    while chunk := stream.read(_CHUNK):
        h.update(chunk)
    return h.hexdigest()


def content_checksum(path: str | os.PathLike, algo: str, gunzip: bool = False) -> str:
    """Hex digest of a file's content; with ``gunzip``, of the decompressed content of a gzip file.

    Course helper (D2L 4.2, 10.5). Raises ``ChecksumError`` if a gzip file cannot be decompressed.
    """
    path = Path(path)
    with open(path, "rb") as f:
        is_gzip = f.read(2) == b"\x1f\x8b"
    if not (gunzip and is_gzip):
        with open(path, "rb") as f:
            return _digest(f, algo)
    try:
        with gzip.open(path, "rb") as f:
            return _digest(f, algo)
    except (EOFError, OSError, zlib.error) as err:
        raise ChecksumError(
            f"{path} is a gzip file that cannot be decompressed ({err}): it is truncated or corrupt. "
            "Delete it and get a fresh copy."
        ) from err


def _found_checksum(path: Path, algo: str, gunzip: bool) -> str:
    try:
        return content_checksum(path, algo, gunzip)
    except ChecksumError as err:
        return f"<unreadable: {err.__cause__}>"


def _source(file: DataFile) -> str:
    if file.member:
        return f"{file.url} (member {file.member} of the zip archive)"
    return file.url


def _verify(file: DataFile, path: Path, where: str, in_cache: bool, found: str | None = None) -> None:
    """Check ``path`` against ``file.checksum`` (``found``: its digest if already computed).

    Success is remembered for this path, mtime and size, so a second check costs a ``stat``.
    """
    st = path.stat()
    key = (str(path.resolve()), st.st_mtime_ns, st.st_size, file.checksum)
    if key in _VERIFIED:
        return
    if found is None:
        found = _found_checksum(path, file.algorithm, file.gunzip)
    if found != file.checksum:
        what = "the decompressed content" if file.gunzip else "its content"
        head = (
            f"{file.name}: the file at {path} (found in {where}) is truncated, corrupt or a different version: "
            f"the {file.algorithm} of {what} is {found}, but {file.checksum} was expected."
        )
        if in_cache:
            fix = (
                f"Fix: delete the corrupt cached copy at {path} and load again to download a fresh one, "
                "or pass data_dir= / set QKV_DATA_DIR to a folder that holds a good copy."
            )
        else:
            fix = (
                "It was left untouched. Fix: replace it with a good copy from "
                f"{_source(file)}, or delete it so that the loader fetches one into the cache ({cache_dir()}), "
                "or pass data_dir= / set QKV_DATA_DIR to another folder."
            )
        raise ChecksumError(f"{head} {fix}")
    _VERIFIED.add(key)


def _places(file: DataFile, data_dir) -> list[tuple[str, Path, bool]]:
    """Every (description, candidate path, is_cache) to look at, in order."""
    places = []
    rels = (file.relpath, *file.alt_relpaths)
    folders = []
    if data_dir is not None:
        folders.append(("the data_dir argument", Path(data_dir).expanduser()))
    env = os.environ.get("QKV_DATA_DIR")
    if env:
        folders.append(("QKV_DATA_DIR", Path(env).expanduser()))
    for label, folder in folders:
        places += [(f"{label} ({folder})", folder / rel, False) for rel in rels]
    base = Path(file.relpath).name
    places += [(f"the system folder {d}", Path(d) / base, False) for d in file.system_dirs]
    places.append((f"the cache ({cache_dir()})", cache_dir() / file.relpath, True))
    return places


def _download(url: str, dest: Path, desc: str) -> None:
    """Copy ``url`` into the file ``dest``, showing a progress bar."""
    with urllib.request.urlopen(url, timeout=60) as response, open(dest, "wb") as out:
        total = int(response.headers.get("Content-Length") or 0) or None
        with tqdm(total=total, unit="B", unit_scale=True, desc=desc) as bar:
            while chunk := response.read(1 << 16):
                out.write(chunk)
                bar.update(len(chunk))


def _check_download(path: Path, checksum: str, what: str, url: str, gunzip: bool = False) -> None:
    algo = _algorithm(checksum, what)
    found = _found_checksum(path, algo, gunzip)
    if found != checksum:
        raise ChecksumError(
            f"the {what} downloaded from {url} has {algo} {found}, but {checksum} was expected: the download "
            "was corrupted or the source changed. Nothing was saved. Try again, or fetch the file by other "
            "means and pass data_dir= / set QKV_DATA_DIR."
        )


def _fetch(file: DataFile, target: Path) -> None:
    """Download ``file`` into ``target`` through temporary files, so a failure leaves nothing behind."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    os.close(fd)
    tmp = Path(tmp_name)
    extracted = tmp.with_suffix(".member")
    try:
        _download(file.url, tmp, desc=file.name)
        if file.member is None:
            _check_download(tmp, file.checksum, file.name, file.url, file.gunzip)
            os.replace(tmp, target)
            return
        _check_download(tmp, file.archive_checksum, f"archive holding {file.name}", file.url)
        try:
            with zipfile.ZipFile(tmp) as archive, archive.open(file.member) as src, open(extracted, "wb") as dst:
                shutil.copyfileobj(src, dst, _CHUNK)
        except KeyError as err:
            raise ChecksumError(f"the archive {file.url} has no member {file.member!r}") from err
        _check_download(extracted, file.checksum, f"{file.name} extracted from the archive", file.url, file.gunzip)
        os.replace(extracted, target)
    finally:
        for leftover in (tmp, extracted):
            leftover.unlink(missing_ok=True)


def _offline() -> bool:
    return os.environ.get("QKV_OFFLINE", "").strip().lower() not in ("", "0", "false", "no")


def _find(file: DataFile, data_dir) -> tuple[str, Path, bool]:
    """The first existing candidate as (where, path, is_cache), downloading into the cache if there is none."""
    places = _places(file, data_dir)
    for place in places:
        if place[1].is_file():
            return place
    looked = "\n".join(f"  - {where}: {path} (not there)" for where, path, _ in places)
    fix = (
        f"Fix: copy {file.relpath} ({file.algorithm} {file.checksum}) into a folder and pass data_dir=FOLDER "
        "or set QKV_DATA_DIR=FOLDER"
    )
    if _offline():
        raise FileNotFoundError(
            f"{file.name} was not found, and downloads are disabled (QKV_OFFLINE is set). Looked in:\n{looked}\n"
            f"{fix}, or unset QKV_OFFLINE to download it from {_source(file)}."
        )
    target = cache_dir() / file.relpath
    try:
        with locked(target):  # two processes that miss the file at once: one downloads, the other waits
            if not target.is_file():  # (and finds it made)
                _fetch(file, target)
    except (OSError, http.client.HTTPException) as err:
        raise FileNotFoundError(
            f"{file.name} was not found and could not be downloaded into {target} from {_source(file)}: {err}\n"
            f"Looked in:\n{looked}\n{fix}, or check the network connection (and that the cache folder is "
            "writable, or set QKV_CACHE_DIR) and load again."
        ) from err
    return f"the cache ({cache_dir()})", target, True


def find(file: DataFile, data_dir: str | os.PathLike | None = None) -> Path:
    """The path :func:`locate` would return, without checking its content (course helper, D2L 4.2).

    Use it as a cache key only; read the content through :func:`locate` or :func:`read_verified`.
    """
    return _find(file, data_dir)[1]


def locate(file: DataFile, data_dir: str | os.PathLike | None = None) -> Path:
    """Return the path of a verified copy of ``file``, downloading it into the cache if needed.

    Course helper (the role of D2L's ``download``, used by D2L 4.2, 9.2 and 10.5). Looks in the
    ``data_dir`` argument, ``$QKV_DATA_DIR``, ``file.system_dirs``, then the cache; the first copy
    found is checked against ``file.checksum`` (once per process while the file is unchanged).

    Raises:
        ChecksumError: a copy was found but its content is wrong (the message says where and how to fix it).
        FileNotFoundError: no copy was found and the download failed or is disabled by ``QKV_OFFLINE``.
    """
    where, path, in_cache = _find(file, data_dir)
    _verify(file, path, where, in_cache)
    return path


def read_verified(file: DataFile, data_dir: str | os.PathLike | None = None) -> tuple[Path, bytes]:
    """Like :func:`locate`, but also return the content (decompressed when ``file.gunzip``), read only once.

    Course helper (D2L 4.2): for compressed files this halves the work of checking then decoding.
    """
    where, path, in_cache = _find(file, data_dir)
    with open(path, "rb") as f:
        content = f.read()
    found = None
    if file.gunzip and content[:2] == b"\x1f\x8b":
        try:
            content = gzip.decompress(content)
        except (EOFError, OSError, zlib.error) as err:
            found = f"<unreadable: {err}>"
    if found is None:
        found = hashlib.new(file.algorithm, content).hexdigest()
    _verify(file, path, where, in_cache, found=found)
    return path, content
