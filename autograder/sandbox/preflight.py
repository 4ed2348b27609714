"""Before grading: whether a sandbox can be made here, with bubblewrap or without it."""

from __future__ import annotations

import subprocess
from pathlib import Path

from autograder.sandbox.common import SandboxUnavailable
from autograder.sandbox.launch import bwrap_path
from autograder.sandbox.paths import _user_groups, needed_paths, reachable, sandbox_user


def check_available(bubblewrap: bool = True) -> None:
    """Raise :class:`SandboxUnavailable` unless bwrap exists and can make a sandbox here; ``bubblewrap=False``:
    unless the sandbox can run without it (:func:`check_unwrapped`)."""
    if not bubblewrap:
        check_unwrapped()
        return
    bwrap = bwrap_path()
    probe = [bwrap, "--unshare-all", "--unshare-user", "--uid", "65534", "--gid", "65534", "--disable-userns"]
    probe += ["--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "true"]
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise SandboxUnavailable(f"bwrap could not run here: {err}. Nothing was graded.") from err
    if done.returncode:
        said = done.stderr.strip().rstrip(".")
        if in_chroot():
            raise SandboxUnavailable(
                f"bwrap is installed but cannot create a sandbox here: {said}. This process runs in a chroot, where "
                "the kernel refuses new user namespaces to every process, root included (unshare(2): EPERM): run "
                "the grader in a container (Docker, systemd-nspawn: they enter their root with pivot_root), or "
                "without bubblewrap. Nothing was graded."
            )
        raise SandboxUnavailable(
            f"bwrap is installed but cannot create a sandbox here: {said}. "
            "It needs unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1 on older Debian "
            "kernels) or root. Nothing was graded."
        )


def in_chroot(mountinfo: Path = Path("/proc/self/mountinfo")) -> bool:
    """Whether this process runs in a chroot into a folder: then no mount of its ``mountinfo`` sits at ``/``, since
    the mount that holds its root lies outside it (a container entered with pivot_root has one there); False when
    that cannot be read."""
    try:
        lines = Path(mountinfo).read_text().splitlines()
    except OSError:
        return False
    return bool(lines) and all(len(line.split()) > 4 and line.split()[4] != "/" for line in lines)


def check_unwrapped() -> None:
    """Raise :class:`SandboxUnavailable` unless the sandbox can run without bubblewrap: this process is root, the
    user :func:`sandbox_user` exists, the child's seccomp filter (without namespaces) can be built, and that user
    can read what the zygote needs (:func:`needed_paths`)."""
    from autograder.sandboxed import seccomp

    name, uid, gid = sandbox_user()
    if seccomp.no_fork_filter(contained=False) is None:
        raise SandboxUnavailable(
            "without bubblewrap the child's seccomp filter is all that keeps student code from the network and "
            "from leaving its process group, and it cannot be built here: install pyseccomp and libseccomp "
            "(Debian/Ubuntu: libseccomp2). Nothing was graded."
        )
    groups = _user_groups(name, gid)
    for path in needed_paths():
        if not reachable(path, uid, groups):
            raise SandboxUnavailable(
                f"the user {name!r}, which runs student code without bubblewrap, cannot read {path}: install Python "
                "and the course's packages where every user can read them (Gradescope's setup.sh does). "
                "Nothing was graded."
            )
