"""Third-party web assets the book serves itself, so it reads with no network, and the one its tests inject.

Each comes from the npm registry at an exact version, fetched once with
``npm pack``, checked against a pinned SHA-256, and unpacked under
``_build/vendor/`` (git-ignored); a copy of the tarball put there by hand is
used as it is, so a machine with no network needs only the ``.tgz`` files.

* MathJax 3 (``mathjax``, Apache-2.0), served by every page: only the files a
  page uses are kept (the combined TeX-to-CHTML component, its fonts, and the
  menu/accessibility components it may load on demand).
* axe-core (``axe-core``, MPL-2.0), the accessibility checker that the book
  tier injects into each page it reads in Chromium
  (``tests/support/a11y.py``); never part of the book itself.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from course.notebooks import ROOT

MATHJAX_VERSION = "3.2.2"
MATHJAX_SHA256 = "1b9c0a1c44df864e915690558e72adb9cc5203360daefd385084ced3b6c64c09"
AXE_CORE_VERSION = "4.14.1"
AXE_CORE_SHA256 = "e6b0ce02b84d892e2e33e403485e7f3d6c29e2be6df65daf44d89ba564139745"
VENDOR = ROOT / "_build" / "vendor"
KEEP = (
    "es5/tex-chtml-full.js",
    "es5/output/chtml/fonts/",
    "es5/a11y/",
    "es5/ui/",
    "es5/input/tex/extensions/",
    "es5/sre/",
    "LICENSE",
)
AXE_CORE_KEEP = ("axe.min.js", "LICENSE")  # prefixes: LICENSE-3RD-PARTY.txt too


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def mathjax_dir() -> Path:
    """The unpacked MathJax ``es5`` folder, fetching it on first use.

    Safe to call from several processes at once (two test workers, a test and ``make book``): the first fetches
    and unpacks under a lock, into a private folder that it renames into place; the others wait, then find it."""
    return _vendored("mathjax", MATHJAX_VERSION, MATHJAX_SHA256, KEEP, "tex-chtml-full.js", strip="es5/")


def axe_core_js() -> Path:
    """axe-core's ``axe.min.js`` at the pinned :data:`AXE_CORE_VERSION`, fetching it on first use (as
    :func:`mathjax_dir`, and as safe from several processes at once)."""
    return _vendored("axe-core", AXE_CORE_VERSION, AXE_CORE_SHA256, AXE_CORE_KEEP, "axe.min.js") / "axe.min.js"


def _vendored(package: str, version: str, sha256: str, keep: tuple[str, ...], main: str, strip: str = "") -> Path:
    """The folder ``VENDOR/<package>-<version>`` holding ``keep`` from the package's tarball (``strip`` taken off
    their paths), made on first use under a file lock; ``main`` is the file whose presence says it is whole."""
    from filelock import FileLock

    dest = VENDOR / f"{package}-{version}"
    if (dest / main).exists():
        return dest
    VENDOR.mkdir(parents=True, exist_ok=True)
    with FileLock(str(VENDOR / f".{package}-{version}.lock")):
        if not (dest / main).exists():
            _unpack(_fetched(package, version, sha256), dest, keep, strip)
    return dest


def _fetched(package: str, version: str, sha256: str) -> Path:
    """The pinned tarball under ``VENDOR``, fetched with npm unless a good copy is there (under the lock)."""
    tgz = VENDOR / f"{package}-{version}.tgz"
    if not tgz.exists() or _sha256(tgz) != sha256:
        npm = shutil.which("npm")
        if npm is None:
            raise SystemExit(
                f"[book] {package} {version} is needed and npm was not found. Install Node.js and npm "
                f"(Debian: apt-get install npm), or put {tgz.name} from the npm registry at {tgz}."
            )
        with tempfile.TemporaryDirectory(dir=VENDOR) as tmp:
            subprocess.run(
                [npm, "pack", f"{package}@{version}", "--pack-destination", tmp, "--silent"],
                check=True,
                stdout=subprocess.DEVNULL,
            )
            os.replace(Path(tmp) / f"{package}-{version}.tgz", tgz)
    digest = _sha256(tgz)
    if digest != sha256:
        tgz.unlink()
        raise SystemExit(
            f"[book] {tgz.name}: SHA-256 {digest} is not the pinned {sha256}; deleted it, "
            "run the build again to fetch it anew"
        )
    return tgz


def _unpack(tgz: Path, dest: Path, keep: tuple[str, ...], strip: str = "") -> None:
    """The files of ``keep`` from ``tgz`` into ``dest`` (``strip`` taken off their paths), through a private
    folder renamed into place."""
    shutil.rmtree(dest, ignore_errors=True)  # a folder left without its main file by an older, interrupted run
    partial = Path(tempfile.mkdtemp(dir=VENDOR, prefix=f".{dest.name}.", suffix=".partial"))
    try:
        with tarfile.open(tgz) as tar:
            for member in tar.getmembers():
                name = member.name.removeprefix("package/")
                if member.isfile() and name.startswith(keep):
                    member.name = name.removeprefix(strip)
                    tar.extract(member, partial, filter="data")
        partial.chmod(0o755)  # mkdtemp makes it private; the book's readers are other users too
        partial.rename(dest)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
