"""Third-party web assets the book serves itself, so it reads with no network.

MathJax 3 comes from the npm registry's ``mathjax`` package (Apache-2.0),
fetched once with ``npm pack``, checked against a pinned SHA-256, and unpacked
under ``_build/vendor/`` (git-ignored). Only the files a page uses are kept:
the combined TeX-to-CHTML component, its fonts, and the menu/accessibility
components it may load on demand.
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


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def mathjax_dir() -> Path:
    """The unpacked MathJax ``es5`` folder, fetching it on first use.

    Safe to call from several processes at once (two test workers, a test and ``make book``): the first fetches
    and unpacks under a lock, into a private folder that it renames into place; the others wait, then find it."""
    from filelock import FileLock

    dest = VENDOR / f"mathjax-{MATHJAX_VERSION}"
    if (dest / "tex-chtml-full.js").exists():
        return dest
    VENDOR.mkdir(parents=True, exist_ok=True)
    with FileLock(str(VENDOR / f".mathjax-{MATHJAX_VERSION}.lock")):
        if not (dest / "tex-chtml-full.js").exists():
            _unpack(_fetched(), dest)
    return dest


def _fetched() -> Path:
    """The pinned MathJax tarball under ``VENDOR``, fetched with npm unless a good copy is there (under the lock)."""
    tgz = VENDOR / f"mathjax-{MATHJAX_VERSION}.tgz"
    if not tgz.exists() or _sha256(tgz) != MATHJAX_SHA256:
        npm = shutil.which("npm")
        if npm is None:
            raise SystemExit(
                "[book] MathJax is needed to build the book and npm was not found. Install Node.js and npm "
                f"(Debian: apt-get install npm), or put mathjax-{MATHJAX_VERSION}.tgz from the npm registry at {tgz}."
            )
        with tempfile.TemporaryDirectory(dir=VENDOR) as tmp:
            subprocess.run(
                [npm, "pack", f"mathjax@{MATHJAX_VERSION}", "--pack-destination", tmp, "--silent"],
                check=True,
                stdout=subprocess.DEVNULL,
            )
            os.replace(Path(tmp) / f"mathjax-{MATHJAX_VERSION}.tgz", tgz)
    digest = _sha256(tgz)
    if digest != MATHJAX_SHA256:
        tgz.unlink()
        raise SystemExit(
            f"[book] {tgz.name}: SHA-256 {digest} is not the pinned {MATHJAX_SHA256}; deleted it, "
            "run the build again to fetch it anew"
        )
    return tgz


def _unpack(tgz: Path, dest: Path) -> None:
    """The files of :data:`KEEP` from ``tgz`` into ``dest``, through a private folder renamed into place."""
    shutil.rmtree(dest, ignore_errors=True)  # a folder left without its main file by an older, interrupted run
    partial = Path(tempfile.mkdtemp(dir=VENDOR, prefix=f".{dest.name}.", suffix=".partial"))
    try:
        with tarfile.open(tgz) as tar:
            for member in tar.getmembers():
                name = member.name.removeprefix("package/")
                if member.isfile() and name.startswith(KEEP):
                    member.name = name.removeprefix("es5/")
                    tar.extract(member, partial, filter="data")
        partial.chmod(0o755)  # mkdtemp makes it private; the book's readers are other users too
        partial.rename(dest)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
