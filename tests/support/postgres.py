"""A throwaway PostgreSQL server for the gradebook tests: Debian's ``postgresql`` (installed by
``.ci/system-deps.sh``), a cluster made with ``initdb`` in a temporary folder, on a free loopback port.

``initdb`` refuses to run as root, and CI and the tests run as root: the cluster then belongs to ``nobody``
(uid 65534, the user the grading sandbox runs student code as) and its commands run through ``runuser``. Logins
need a password (``scram-sha-256``), so that a test can also be refused.
"""

from __future__ import annotations

import contextlib
import dataclasses
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

USER, PASSWORD, DATABASE = "grader", "s3cret-for-tests", "gradebook"


def binaries() -> Path | None:
    """The folder of Debian's ``initdb`` and ``pg_ctl`` (the newest version installed), or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[4]))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def missing() -> str | None:
    """Why no throwaway server can start here (for ``pytest.mark.skipif``), or None."""
    if binaries() is None:
        return "PostgreSQL is not installed (apt-get install postgresql, or bash .ci/system-deps.sh)"
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "running as root without runuser: initdb refuses root"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclasses.dataclass
class Server:
    port: int
    folder: Path

    def url(self, password: str = PASSWORD, database: str = DATABASE) -> str:
        return f"postgresql://{USER}:{password}@127.0.0.1:{self.port}/{database}"


def _as_owner(cmd: list[str]) -> list[str]:
    """``cmd`` run as ``nobody`` when we are root (initdb and postgres refuse root), else as ourselves."""
    return ["runuser", "-u", "nobody", "--", *cmd] if os.geteuid() == 0 else cmd


@contextlib.contextmanager
def server():
    """Start a PostgreSQL server with user :data:`USER` and an empty database :data:`DATABASE`; stop and remove
    it on leaving."""
    bin_dir = binaries()
    folder = Path(tempfile.mkdtemp(prefix="qkv-pg-"))  # under /tmp, which nobody may traverse (pytest's may not)
    data, pwfile = folder / "data", folder / "pw"
    pwfile.write_text(PASSWORD + "\n")
    if os.geteuid() == 0:
        nobody = pwd.getpwnam("nobody")
        os.chown(folder, nobody.pw_uid, nobody.pw_gid)
        os.chown(pwfile, nobody.pw_uid, nobody.pw_gid)
    port = free_port()
    run = dict(check=True, capture_output=True, text=True, cwd=folder, timeout=120)
    try:
        subprocess.run(
            _as_owner(
                [str(bin_dir / "initdb"), "-D", str(data), "-U", USER, "--pwfile", str(pwfile)]
                + ["--auth=scram-sha-256", "--no-sync", "-E", "UTF8", "--locale=C.UTF-8"]
            ),
            **run,
        )
        options = f"-c listen_addresses=127.0.0.1 -p {port} -k {folder} -c fsync=off"
        subprocess.run(
            _as_owner([str(bin_dir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(folder / "log"), "-w"])
            + ["start"],
            **run,
        )
        env = {**os.environ, "PGPASSWORD": PASSWORD}
        subprocess.run(
            [str(bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", USER, DATABASE],
            **run,
            env=env,
        )
        yield Server(port, folder)
    except subprocess.CalledProcessError as err:
        raise RuntimeError(f"the throwaway PostgreSQL did not start: {err.stderr or err.stdout}") from err
    finally:
        subprocess.run(
            _as_owner([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]),
            capture_output=True,
            cwd=folder,
            timeout=60,
        )
        shutil.rmtree(folder, ignore_errors=True)
