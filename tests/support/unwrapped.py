"""A Python that the sandbox's unprivileged user can run, for the tests of the mode without bubblewrap.

That mode runs the zygote as ``nobody`` (:func:`autograder.sandbox.sandbox_user`), which must read the interpreter
and its packages. The test suite's own interpreter may live where only root can read (pyenv under ``/root``), so
:func:`python_for_sandbox_user` makes a virtual environment from the system's interpreter of the same version with
the suite's packages on its path, as Gradescope's ``setup.sh`` installs one that every user can read.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

from autograder import sandbox as sb


def readable_by_sandbox_user(path: Path) -> bool:
    """Whether the sandbox's user can read ``path`` (False when that user cannot be had: not root, no user)."""
    try:
        name, uid, gid = sb.sandbox_user()
    except sb.SandboxUnavailable:
        return False
    return sb.reachable(Path(path), uid, set(os.getgrouplist(name, gid)))


def python_for_sandbox_user(folder: Path) -> Path | None:
    """``folder``'s virtual environment's ``python``, which the sandbox's user can run with this suite's packages;
    None where that cannot be (not root, no such user, no readable system Python of this version)."""
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    site = Path(sysconfig.get_paths()["purelib"])
    candidates = (Path(f"/usr/bin/python{version}"), Path(f"/usr/local/bin/python{version}"))
    system = next((p for p in candidates if p.exists()), None)
    if system is None or not readable_by_sandbox_user(Path(os.path.realpath(system))):
        return None
    if not readable_by_sandbox_user(site):
        return None
    if os.path.realpath(sys.executable) == os.path.realpath(system):  # the suite's own Python will do
        return Path(sys.executable)
    subprocess.run([str(system), "-m", "venv", "--without-pip", str(folder)], check=True, capture_output=True)
    purelib = subprocess.run(
        [str(folder / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # addsitedir (not a plain path line) so that the suite's own .pth files (editable installs) count too
    (Path(purelib) / "qkv-suite.pth").write_text(f"import site; site.addsitedir({str(site)!r})\n")
    os.chmod(folder, 0o755)
    return folder / "bin" / "python"
