"""What the sandbox shows and what it hides: the host paths bound into it (read-only), the user that runs student code
without bubblewrap and what that user may read, and the checks that refuse to grade when a course would be seen."""

from __future__ import annotations

import importlib.util
import os
import stat
import sys
from pathlib import Path

from autograder.sandbox.common import ETC, SANDBOX_USER, SANDBOX_USER_ENV, SANDBOXED, SandboxUnavailable


def python_paths() -> list[Path]:
    """What the interpreter needs, read-only: its prefix, the venv, and the folders of editable packages."""
    paths = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(), Path(sys.executable).resolve().parent}
    paths.add(Path(sys.prefix))  # the venv as named (its python links into the base prefix)
    lib = qkv_folder()
    if lib is not None:
        paths.add(lib)
    return sorted(paths)


def qkv_folder() -> Path | None:
    """The folder holding the ``qkv`` this process imports (``lib/`` of the checkout, or of a copy of it): the
    sandbox binds it and puts it first on the child's ``PYTHONPATH``, so that the child grades with the same
    ``qkv`` as the grader, whichever checkout the interpreter's editable install points at."""
    spec = importlib.util.find_spec("qkv")
    if spec is None or not spec.origin:
        return None
    return Path(spec.origin).resolve().parent.parent


def data_paths() -> list[Path]:
    """The course's data folder, where one is configured (read-only, public data)."""
    value = os.environ.get("QKV_DATA_DIR")
    return [Path(value).resolve()] if value and Path(value).is_dir() else []


def trained_paths() -> list[Path]:
    """The folder of cached trained weights (``qkv.recipes.weights.trained_dir()``), where it exists: read-only, so
    that a section that shows a trained model loads it (``make release`` trains it first) and never trains here."""
    # trained_dir(), without importing torch into the grader (tests/unit/qkv/test_recipes_weights.py checks they agree)
    env, cache = os.environ.get("QKV_TRAINED_DIR"), os.environ.get("QKV_CACHE_DIR")
    if env:
        folder = Path(env).expanduser()
    else:
        folder = (Path(cache).expanduser() if cache else Path.home() / ".cache" / "qkv") / "trained"
    return [folder.resolve()] if folder.is_dir() else []


def _minimal(paths: list[Path]) -> list[Path]:
    """Drop paths inside another path of the list."""
    out: list[Path] = []
    for path in sorted(set(paths), key=lambda p: len(p.parts)):
        if not any(path == kept or kept in path.parents for kept in out):
            out.append(path)
    return out


def visible_paths() -> list[Path]:
    """Every host path bound into the sandbox (read-only)."""
    system = [Path("/usr")] + [Path(p) for p in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")]
    system = [p for p in system if p.exists() and not p.is_symlink()]
    etc = [Path("/etc") / name for name in ETC if (Path("/etc") / name).exists()]
    return _minimal(system + etc + python_paths() + data_paths() + trained_paths())


def check_hidden(paths: list[Path], bubblewrap: bool = True) -> None:
    """Refuse to start if a path that must stay out of sight (course, submissions) would be visible.

    ``bubblewrap=False``: if the user that runs student code without bubblewrap (:func:`sandbox_user`) could read
    one of ``paths`` or of the repository's :func:`private_paths`."""
    if not bubblewrap:
        name, uid, gid = sandbox_user()
        groups = _user_groups(name, gid)
        for path in [*paths, *private_paths()]:
            if Path(path).exists() and reachable(Path(path), uid, groups):
                raise SandboxUnavailable(
                    f"{path} can be read by the user {name!r}, which runs student code without bubblewrap: make it "
                    f"readable by its owner only (chmod -R go-rwx {path}), or grade with bubblewrap. "
                    "Nothing was graded."
                )
        return
    visible = visible_paths()
    for path in paths:
        path = Path(path).resolve()
        for seen in visible:
            if path == seen or seen in path.parents:
                raise SandboxUnavailable(
                    f"{path} lies inside {seen}, which the sandbox shows to student code read-only; "
                    "move the course and the submissions out of the interpreter's, the venv's and lib/'s folders"
                )


def sandbox_user() -> tuple[str, int, int]:
    """``(name, uid, gid)`` of the user that runs student code without bubblewrap (:data:`SANDBOX_USER`, or
    ``$QKV_SANDBOX_USER``); :class:`SandboxUnavailable` unless this process is root, which alone can start
    another user's process, and the user exists and is not root."""
    import pwd

    name = os.environ.get(SANDBOX_USER_ENV) or SANDBOX_USER
    if os.geteuid() != 0:
        raise SandboxUnavailable(
            f"without bubblewrap the grader runs student code as the unprivileged user {name!r}, and only root can "
            "start it so: run as root (Gradescope's run_autograder is), or grade with bubblewrap. Nothing was graded."
        )
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        raise SandboxUnavailable(
            f"the user {name!r} that would run student code does not exist (set {SANDBOX_USER_ENV} to an "
            "unprivileged user). Nothing was graded."
        ) from None
    if entry.pw_uid == 0:
        raise SandboxUnavailable(f"{SANDBOX_USER_ENV}={name!r} is root: student code must run unprivileged")
    return name, entry.pw_uid, entry.pw_gid


def reachable(path: Path, uid: int, gids: set[int]) -> bool:
    """Whether the user ``uid`` (in the groups ``gids``) may read ``path`` by its mode bits: every folder above it
    searchable, and it readable (a folder: searchable). ACLs are not read (the course's files carry none)."""

    def allows(st: os.stat_result, bit: int) -> bool:  # bit: 4 read, 1 search; the kernel's class of the user
        shift = 6 if st.st_uid == uid else 3 if st.st_gid in gids else 0
        return bool(st.st_mode >> shift & bit)

    path = Path(os.path.abspath(path))
    try:
        for folder in reversed(path.parents):
            if not allows(os.stat(folder), 1):
                return False
        st = os.stat(path)
    except OSError:
        return False
    return allows(st, 1 if stat.S_ISDIR(st.st_mode) else 4)


def _user_groups(name: str, gid: int) -> set[int]:
    return set(os.getgrouplist(name, gid))


def private_paths() -> list[Path]:
    """The repository's parts that no student may read (hidden tests, solutions, its history), where they exist:
    without bubblewrap nothing but their permissions keeps student code from them."""
    root = SANDBOXED.parent.parent
    return [p for p in (SANDBOXED.parent / "sections", root / "solutions", root / ".git") if p.exists()]


def needed_paths() -> list[Path]:
    """What the zygote must read without bubblewrap: the interpreter, its standard library and packages, ``qkv``,
    the sandboxed package, the data and the trained weights."""
    import sysconfig

    found = [Path(os.path.realpath(sys.executable)), SANDBOXED, Path(sysconfig.get_paths()["stdlib"])]
    for name in ("torch", "IPython", "pyseccomp"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin:
            found.append(Path(spec.origin).parent)
    return found + [p for p in (qkv_folder(),) if p is not None] + data_paths() + trained_paths()
