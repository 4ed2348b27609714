"""How the zygote starts: the ``bwrap`` command and its binds, or the plain command without bubblewrap, and the
whole environment it gets."""

from __future__ import annotations

import os
import shutil
import sys

from autograder.sandbox.common import (
    INSTALL_HINT,
    PRELOAD,
    SANDBOXED,
    SANDBOXED_IN_SANDBOX,
    TRAINED_IN_SANDBOX,
    Limits,
    SandboxUnavailable,
)
from autograder.sandbox.paths import data_paths, qkv_folder, trained_paths, visible_paths
from autograder.sandboxed import protocol


def bwrap_path() -> str:
    """The ``bwrap`` executable (``$QKV_BWRAP``, else ``bwrap`` on PATH), or :class:`SandboxUnavailable`
    saying how to install it."""
    named = os.environ.get("QKV_BWRAP")
    if named is not None:
        if not (os.path.isfile(named) and os.access(named, os.X_OK)):
            raise SandboxUnavailable(f"QKV_BWRAP={named!r} is not an executable file; " + INSTALL_HINT)
        return named
    path = shutil.which("bwrap")
    if path is None:
        raise SandboxUnavailable(INSTALL_HINT)
    return path


def sandbox_env(trained: str | None, scratch: str = "/tmp") -> dict[str, str]:
    """The whole environment of the zygote: ``trained`` is where it sees the trained weights (None: nowhere),
    ``scratch`` its writable folder (``/tmp`` in bubblewrap's own tmpfs; the scratch folder without it)."""
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": f"{scratch}/home",
        "LANG": "C.UTF-8",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": f"{scratch}/matplotlib",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "QKV_OFFLINE": "1",
        "NBGRADER_EXECUTION": "autograde",
        "QKV_NO_TRAIN": "1",  # the grader only loads trained weights (qkv.recipes.weights); make release trains them
    }
    if scratch != "/tmp":
        env["TMPDIR"] = f"{scratch}/tmp"  # tempfile's files in the scratch folder, not in the host's /tmp
    if data_paths():
        env["QKV_DATA_DIR"] = str(data_paths()[0])
    if trained:
        env["QKV_TRAINED_DIR"] = trained
    if os.environ.get("QKV_TRAIN_SMOKE"):  # the test suite grades against its smoke-trained models
        env["QKV_TRAIN_SMOKE"] = os.environ["QKV_TRAIN_SMOKE"]
    if qkv_folder() is not None:
        env["PYTHONPATH"] = str(qkv_folder())
    return env


def bwrap_args(limits: Limits, control_fd: int, preload=PRELOAD) -> list[str]:
    """The command that starts the zygote in a fresh sandbox, talking to us on ``control_fd``."""
    args = [bwrap_path(), "--unshare-all", "--unshare-user", "--uid", "65534", "--gid", "65534"]
    args += ["--disable-userns", "--die-with-parent", "--new-session"]
    for name in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(name):
            args += ["--symlink", os.readlink(name), name]
    args += ["--proc", "/proc", "--dev", "/dev"]
    # The private tmpfs mounts come before the read-only binds, so that a checkout, venv or data folder that
    # lives under /tmp on the host (CI clones anywhere) is bound over the empty /tmp rather than hidden by it.
    args += ["--size", str(limits.tmpfs), "--tmpfs", "/tmp", "--size", str(limits.tmpfs), "--tmpfs", "/dev/shm"]
    trained = trained_paths()
    for path in visible_paths():
        if path not in trained:
            args += ["--ro-bind", str(path), str(path)]
    if trained:
        args += ["--ro-bind", str(trained[0]), TRAINED_IN_SANDBOX]
    args += ["--ro-bind", str(SANDBOXED), SANDBOXED_IN_SANDBOX]
    # Started in the package's parent folder, so that ``-m`` finds it (sys.path[0]); the zygote then moves to /tmp.
    args += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", protocol.GRADER_IN_SANDBOX, "--clearenv"]
    env = sandbox_env(TRAINED_IN_SANDBOX if trained else None)
    for key, value in env.items():
        args += ["--setenv", key, value]
    args += [sys.executable, "-s", "-B", "-m", protocol.PACKAGE, "--control-fd", str(control_fd)]
    args += ["--preload", ",".join(preload)]
    return args


def direct_args(control_fd: int, scratch: str, preload=PRELOAD) -> list[str]:
    """The command that starts the zygote without bubblewrap (``Sandbox(bubblewrap=False)``): run from the
    package's parent folder, as the unprivileged user, with :func:`sandbox_env`, writing in ``scratch`` only."""
    args = [sys.executable, "-s", "-B", "-m", protocol.PACKAGE, "--control-fd", str(control_fd)]
    return args + ["--preload", ",".join(preload), protocol.SCRATCH_OPTION, scratch]
