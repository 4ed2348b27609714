"""The Gradescope cycle from an empty machine: a section's zip, a fresh Debian root, setup.sh, run_autograder.

Run by ``benchmarks/gradescope_chroot.sh`` (as root; ``--help`` lists the options). For each section asked for:

1. ``make gradescope``'s zip of the section (``python -m autograder.gradescope.build``), its trained weights and
   data from this machine's cache and data folder (never the test suite's smoke weights);
2. a fresh root filesystem: Debian bookworm made by ``debootstrap --variant=minbase`` (the tarball is cached as
   ``_build/gradescope-chroot/debian-bookworm-minbase.tar.gz``), unpacked under ``/var/tmp`` (outside the
   repository, so that nothing that cleans ``_build/`` can reach a mount of it), with a fresh ``/proc``, ``/sys``
   (read-only), a small ``/dev`` of its own, this machine's ``resolv.conf`` and the certificate authorities it adds
   in ``/usr/local/share/ca-certificates`` (an HTTPS proxy's) and, for ``TORCH_INDEX_URL=`` (the
   default here: pip's own configuration), this machine's pip configuration and its local wheel folders, mounted
   read-only;
3. the zip unpacked at ``/autograder/source`` and ``run_autograder`` copied to ``/autograder`` as Gradescope does,
   then ``bash /autograder/source/setup.sh`` as root from ``/autograder/source``, in a clean environment; timed.
   Python: Debian 12's python3.11 is 3.11.2, older than the pins need (``python-version.txt``, 3.11.5), so
   ``setup.sh`` would install uv's Python 3.11, as it does on Gradescope; uv downloads it from GitHub, which this
   machine cannot reach, so by default (``--python host``) the root gets this machine's Python 3.11 as
   ``/opt/python3.11`` (without its packages, its library path made relative as in uv's builds) on setup.sh's
   ``PATH``; ``--python system`` leaves it out, to see setup.sh refuse Debian's and try uv;
4. a solved, an unanswered, a wrong (the section's first mutant in ``mutants.toml``) and a tampered notebook (a
   locked test cell edited), each as ``/autograder/submission/<slug>.ipynb`` beside a
   ``/autograder/submission_metadata.json``, each graded by ``/autograder/run_autograder`` in a memory cgroup of
   its own (its peak is the peak of every process of the grading), then checked: ``results.json``'s format, its
   scores and statuses, Markdown outputs without raw HTML, and the rationing of feedback where the zip has it;
   the solved notebook once more under a hard limit of Gradescope's default 768 MB;
5. with ``--bubblewrap``, the same for a zip built with ``--bubblewrap``: in the chroot, and in a root entered with
   ``pivot_root`` in a mount namespace of its own, as a container runtime enters one.

``--memory SLUG... | all`` first measures the peak memory of grading each section's solved notebook in one set-up
root (``setup.sh`` runs again for each zip), also under a hard limit of 768 MB, and, with ``--write-memory``, records
the peaks in ``autograder/gradescope/memory.toml``, which ``make gradescope`` turns into the container each zip asks
for (``--no-cycle``: that alone).

Everything it prints also goes to ``benchmarks/results/gradescope_chroot.md`` (``--note``).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autograder import mutants as known  # noqa: E402
from autograder.gradescope import layout, memory  # noqa: E402
from autograder.gradescope import markdown as md  # noqa: E402
from autograder.gradescope import results as gs_results  # noqa: E402
from course import notebooks as nbs  # noqa: E402
from course.section import section  # noqa: E402
from course.section import sections as all_sections  # noqa: E402

CACHE = ROOT / "_build" / "gradescope-chroot"
SUITE, MIRROR = "bookworm", "http://deb.debian.org/debian"
TARBALL = CACHE / f"debian-{SUITE}-minbase.tar.gz"
NOTE = ROOT / "benchmarks" / "results" / "gradescope_chroot.md"
MEMORY_TOML = ROOT / "autograder" / "gradescope" / "memory.toml"
#: Gradescope's default memory for an autograder's container, as a hard cgroup limit (MB, not MiB: the smaller).
GRADESCOPE_BYTES = 768 * 10**6
#: This machine's pip configuration and local package folders (``TORCH_INDEX_URL=``: pip's own configuration).
PIP_FILES = ("/etc/pip.conf", "/etc/xdg/pip", "/root/.config/pip/pip.conf", "/root/.pip/pip.conf")
LOCAL_PACKAGES = ("/opt/wheels", "/opt/pypi", "/opt/pypi-more")
CLEAN_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": "/root",
    "LANG": "C.UTF-8",
    "TERM": "dumb",
}
#: Device nodes of the root's own /dev: (name, major, minor).
DEVICES = (("null", 1, 3), ("zero", 1, 5), ("full", 1, 7), ("random", 1, 8), ("urandom", 1, 9), ("tty", 5, 0))
#: Default sections: one without trained models, whose zip rations feedback, and 11.7, which carries its model.
DEFAULT_CASES = {
    "attention-scoring-functions": ["--output", "visible", "--full-feedback", "2", "--feedback-window-hours", "24"],
    "transformer": [],
}

LINES: list[str] = []


def say(text: str = "") -> None:
    """Print ``text`` and keep it for the note."""
    print(text, flush=True)
    LINES.append(text)


def run(cmd, **kwargs) -> subprocess.CompletedProcess:
    """``subprocess.run`` that raises with the command's output when it fails."""
    done = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    if done.returncode:
        raise RuntimeError(
            f"{' '.join(map(str, cmd))} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    return done


# ---------------------------------------------------------------- the base system and the zips


def base_tarball() -> Path:
    """The cached tarball of an empty Debian root (made once with debootstrap)."""
    if TARBALL.exists():
        return TARBALL
    if shutil.which("debootstrap") is None:
        raise SystemExit("debootstrap is not installed: apt-get install debootstrap")
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="qkv-debootstrap-", dir="/var/tmp") as tmp:
        target = Path(tmp) / "root"
        started = time.monotonic()
        say(f"debootstrap --variant=minbase {SUITE} (once; cached as {TARBALL.relative_to(ROOT)})")
        run(["debootstrap", "--variant=minbase", SUITE, str(target), MIRROR])
        run(["tar", "-C", str(target), "--numeric-owner", "-czf", str(TARBALL) + ".part", "."])
        os.replace(str(TARBALL) + ".part", TARBALL)
        say(f"debootstrap: {time.monotonic() - started:.0f} s, {TARBALL.stat().st_size / 2**20:.0f} MiB tarball")
    return TARBALL


def build_zip(slug: str, out: Path, args: list[str]) -> Path:
    """``make gradescope``'s zip of ``slug`` with the build options ``args``, from this machine's real weights."""
    env = {k: v for k, v in os.environ.items() if k not in ("QKV_CACHE_DIR", "QKV_TRAIN_SMOKE", "QKV_TRAINED_DIR")}
    env.setdefault("QKV_DATA_DIR", str(ROOT.parent / "shared" / "data"))
    env.setdefault("QKV_OFFLINE", "1")
    cmd = [sys.executable, "-m", "autograder.gradescope.build", "--section", slug, "--out", str(out), *args]
    run(cmd, cwd=ROOT, env=env)
    return out / f"{slug}.zip"


# ---------------------------------------------------------------- notebooks and metadata


@dataclasses.dataclass
class Submission:
    """One notebook handed in, with the metadata Gradescope would write and what grading it must give."""

    kind: str
    notebook: nbformat.NotebookNode
    previous_hours: list[float]  # hours before this submission of each previous one
    expect: str  # what the checks look for (see check())
    detail: str = ""


def class_of(slug: str, release_path: Path, rationed: bool) -> list[Submission]:
    """The solved, unanswered, wrong and tampered notebooks of ``slug``; with ``rationed`` (the zip allows 2 full
    feedbacks in 24 hours), their previous submissions make the wrong one fall past the allowance."""
    sec = section(slug)
    solved = known.solved_notebook(release_path, sec)
    mutant = next(iter(known.load(sec)), None)
    if mutant is None:
        return [Submission("solved", solved, [], "full")]
    wrong = known.with_answer(solved, mutant.grade_id, known.mutated_cell(sec, mutant.grade_id, mutant.name))
    tampered = nbformat.from_dict(json.loads(json.dumps(solved)))
    test_cell = next(c for c in tampered.cells if nbs.role(c) == "test")
    test_cell.source = "pass  # a locked test cell, edited"
    hours = ([], [1.0], [2.0, 5.0], [30.0, 3.0]) if rationed else ([], [], [], [])
    return [
        Submission("solved", solved, hours[0], "full"),
        Submission("unanswered", nbformat.read(release_path, as_version=4), hours[1], "zero"),
        Submission("wrong", wrong, hours[2], "wrong", f"{mutant.grade_id}: {mutant.name}"),
        Submission("tampered", tampered, hours[3], "tampered", nbs.grade_id(test_cell)),
    ]


def metadata(previous_hours: list[float], now: dt.datetime) -> dict:
    """A ``submission_metadata.json`` as Gradescope writes it (the fields the autograder reads, and a few more)."""
    stamp = lambda t: t.isoformat(timespec="microseconds")  # noqa: E731
    return {
        "id": 123456,
        "created_at": stamp(now),
        "assignment": {"title": "chroot check", "due_date": stamp(now + dt.timedelta(days=7)), "group_size": None},
        "submission_method": "upload",
        "users": [{"email": "student@example.com", "id": 1, "name": "Student"}],
        "previous_submissions": [
            {"submission_time": stamp(now - dt.timedelta(hours=h)), "score": 0.0, "autograder_error": False}
            for h in previous_hours
        ],
    }


# ---------------------------------------------------------------- memory: a cgroup per grading


class Cgroup:
    """A memory cgroup of its own under this process's (cgroup v1 or v2): its peak, and an optional hard limit."""

    def __init__(self, name: str, limit: int | None = None):
        v2 = Path("/sys/fs/cgroup/cgroup.controllers")
        if v2.exists() and "memory" in v2.read_text().split():
            own = next(
                line.split("::", 1)[1]
                for line in Path("/proc/self/cgroup").read_text().splitlines()
                if line.startswith("0::")
            )
            self.v2, self.path = True, Path("/sys/fs/cgroup") / own.lstrip("/") / name
        else:
            own = next(
                line.split(":", 2)[2]
                for line in Path("/proc/self/cgroup").read_text().splitlines()
                if line.split(":")[1] == "memory"
            )
            self.v2, self.path = False, Path("/sys/fs/cgroup/memory") / own.lstrip("/") / name
        self.path.mkdir()
        self.anon_peak = 0
        if limit is not None:
            if self.v2:
                (self.path / "memory.max").write_text(str(limit))
                with contextlib.suppress(OSError):
                    (self.path / "memory.swap.max").write_text("0")
            else:
                (self.path / "memory.limit_in_bytes").write_text(str(limit))
                with contextlib.suppress(OSError):
                    (self.path / "memory.memsw.limit_in_bytes").write_text(str(limit))

    def enter(self) -> None:
        """Put the calling process in the cgroup (a ``preexec_fn``)."""
        (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def stat(self) -> dict[str, int]:
        pairs = (line.split() for line in (self.path / "memory.stat").read_text().splitlines())
        return {k: int(v) for k, v in pairs}

    def sample(self) -> None:
        """Record the anonymous memory now (the memory the kernel cannot reclaim by dropping files)."""
        with contextlib.suppress(OSError, ValueError):
            stat = self.stat()
            anon = stat.get("anon", 0) + stat.get("shmem", 0) if self.v2 else stat.get("rss", 0) + stat.get("shmem", 0)
            self.anon_peak = max(self.anon_peak, anon)

    def peak(self) -> int:
        """The kernel's peak of the cgroup's memory (page cache it charged included)."""
        return int((self.path / ("memory.peak" if self.v2 else "memory.max_usage_in_bytes")).read_text())

    def oom_kills(self) -> int:
        if self.v2:
            events = dict(line.split() for line in (self.path / "memory.events").read_text().splitlines())
            return int(events.get("oom_kill", 0))
        control = dict(line.split() for line in (self.path / "memory.oom_control").read_text().splitlines())
        return int(control.get("oom_kill", 0))

    def remove(self) -> None:
        for _ in range(50):
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.1)


# ---------------------------------------------------------------- the root filesystem


class Machine:
    """A fresh root made from the tarball, with its mounts; ``enter`` is ``chroot`` or ``pivot`` (a mount
    namespace of its own whose root is this one, as a container runtime makes)."""

    def __init__(self, tarball: Path, name: str, torch_index: str | None, python: str = "host"):
        self.tmp = Path(tempfile.mkdtemp(prefix=f"qkv-gradescope-{name}-", dir="/var/tmp"))
        self.path = self.tmp / "root"
        self.torch_index = torch_index
        self.mounts: list[Path] = []
        self.path.mkdir()
        try:
            run(["tar", "-C", str(self.path), "--numeric-owner", "-xzf", str(tarball)])
            self._mount()
            self.path_prefix = self.provide_python() + ":" if python == "host" else ""
        except BaseException:
            self.close()
            raise

    def _mount_at(self, target: Path, *args: str) -> None:
        target.mkdir(parents=True, exist_ok=True)
        run(["mount", *args, str(target)])
        self.mounts.append(target)

    def _mount(self) -> None:
        p = self.path
        self._mount_at(p / "proc", "-t", "proc", "proc")
        self._mount_at(p / "sys", "-t", "sysfs", "-o", "ro,nosuid,nodev,noexec", "sysfs")
        self._mount_at(p / "dev", "-t", "tmpfs", "-o", "mode=755,nosuid,size=1m", "dev")
        for name, major, minor in DEVICES:
            os.mknod(p / "dev" / name, 0o666 | 0o020000, os.makedev(major, minor))
            os.chmod(p / "dev" / name, 0o666)
        for name, target in (
            ("fd", "/proc/self/fd"),
            ("stdin", "/proc/self/fd/0"),
            ("stdout", "/proc/self/fd/1"),
            ("stderr", "/proc/self/fd/2"),
            ("ptmx", "pts/ptmx"),
        ):
            os.symlink(target, p / "dev" / name)
        self._mount_at(p / "dev" / "shm", "-t", "tmpfs", "-o", "mode=1777,nosuid,nodev,size=256m", "shm")
        self._mount_at(p / "dev" / "pts", "-t", "devpts", "-o", "newinstance,ptmxmode=0666,mode=620", "devpts")
        # This machine's network: its resolver, and the certificate authorities it adds (an HTTPS proxy's), which
        # the root's ca-certificates takes in when setup.sh installs it.
        shutil.copy2("/etc/resolv.conf", p / "etc" / "resolv.conf")
        local_cas = p / "usr" / "local" / "share" / "ca-certificates"
        local_cas.mkdir(parents=True, exist_ok=True)
        for ca in Path("/usr/local/share/ca-certificates").glob("*.crt"):
            shutil.copy2(ca, local_cas / ca.name)
        if self.torch_index == "":  # pip's own configuration: this machine's, with its local folders, read-only
            for name in PIP_FILES:
                if os.path.isdir(name):
                    shutil.copytree(name, p / name.lstrip("/"), dirs_exist_ok=True)
                elif os.path.isfile(name):
                    (p / name.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(name, p / name.lstrip("/"))
            for folder in LOCAL_PACKAGES:
                if os.path.isdir(folder):
                    target = p / folder.lstrip("/")
                    self._mount_at(target, "--bind", folder)
                    run(["mount", "-o", "remount,bind,ro", str(target)])

    def provide_python(self) -> str:
        """Put this machine's Python 3.11 (the interpreter of this script's venv, without its site-packages) in the
        root as ``/opt/python3.11``, its library path made relative as in uv's builds; the folder for PATH."""
        prefix = Path(sys.base_prefix)
        target = self.path / "opt" / "python3.11"
        skip = shutil.ignore_patterns("site-packages", "__pycache__", "test", "idle_test", "*.a")
        shutil.copytree(prefix, target, symlinks=True, ignore=skip)
        (target / "lib" / "python3.11" / "site-packages").mkdir(exist_ok=True)
        interpreter = target / "bin" / "python3.11"
        if shutil.which("patchelf") is None:
            raise SystemExit("patchelf is missing (apt-get install patchelf), or give --python system")
        run(["patchelf", "--set-rpath", "$ORIGIN/../lib", str(interpreter)])
        self._bundle_libraries(target)
        run(["chmod", "-R", "a+rX", str(target)])
        return "/opt/python3.11/bin"

    def _bundle_libraries(self, target: Path) -> None:
        """Copy into ``target/lib`` the shared libraries that the interpreter's extension modules need and the root
        lacks (libsqlite3, libffi...), and point those modules there, as uv's builds carry theirs."""
        lib = target / "lib"
        modules = sorted((lib / "python3.11" / "lib-dynload").glob("*.so"))
        for module in modules:  # libpython and the bundled libraries, from the modules' folder
            run(["patchelf", "--set-rpath", "$ORIGIN/../..", str(module)])
        for library in lib.glob("*.so*"):  # libpython3.so needs libpython3.11.so beside it
            if library.is_file() and not library.is_symlink():
                run(["patchelf", "--set-rpath", "$ORIGIN", str(library)])
        for _ in range(3):  # the copied libraries may need others
            missing: dict[str, list[Path]] = {}
            for module in modules + sorted(lib.glob("*.so*")):
                inside = "/" + str(module.relative_to(self.path))
                ldd = ["chroot", str(self.path), "/usr/bin/ldd", inside]
                done = subprocess.run(ldd, capture_output=True, text=True)
                for line in done.stdout.splitlines():
                    if "=> not found" in line:
                        missing.setdefault(line.split()[0], []).append(module)
            if not missing:
                return
            host = {}
            for line in run(["ldconfig", "-p"]).stdout.splitlines()[1:]:
                name, _, where = line.strip().partition(" => ")
                if "x86-64" in name or "x86_64" in name:
                    host.setdefault(name.split()[0], where)
            for name, needers in missing.items():
                if name not in host or (lib / name).exists():
                    raise SystemExit(f"{name}, which {needers[0]} needs, cannot be bundled from this machine")
                shutil.copy2(os.path.realpath(host[name]), lib / name)
                run(["patchelf", "--set-rpath", "$ORIGIN", str(lib / name)])

    def unzip(self, archive: Path) -> None:
        """Unpack ``archive`` at /autograder/source (modes kept) and copy run_autograder up, as Gradescope does."""
        source = self.path / "autograder" / "source"
        if source.exists():
            shutil.rmtree(source)
        source.mkdir(parents=True)
        os.chmod(self.path / "autograder", 0o755)
        with zipfile.ZipFile(archive) as zipped:
            for info in zipped.infolist():
                target = source / info.filename
                zipped.extract(info, source)
                mode = info.external_attr >> 16
                if mode and not info.is_dir():
                    os.chmod(target, mode & 0o777)
        shutil.copy2(source / layout.RUN, self.path / "autograder" / layout.RUN)
        os.chmod(self.path / "autograder" / layout.RUN, 0o755)

    def command(self, argv: list[str], env: dict, cwd: str, enter: str = "chroot") -> list[str]:
        """The host command that runs ``argv`` in this root, in ``cwd``, with exactly ``env``."""
        inner = [
            "/usr/bin/env",
            "-i",
            *(f"{k}={v}" for k, v in env.items()),
            "/bin/sh",
            "-c",
            'cd "$0" && exec "$@"',
            cwd,
            *argv,
        ]
        if enter == "chroot":
            return ["chroot", str(self.path), *inner]
        script = (
            'mount --rbind "$0" "$0" && cd "$0" && mkdir -p .pivot-old && pivot_root . .pivot-old '
            '&& cd / && umount -l /.pivot-old && rmdir /.pivot-old && exec "$@"'
        )
        return [
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "--fork",
            "/bin/sh",
            "-c",
            script,
            str(self.path),
            *inner,
        ]

    def setup(self, log: Path) -> float:
        """Gradescope's ``bash /autograder/source/setup.sh``, as root from /autograder/source; its seconds."""
        env = dict(CLEAN_ENV, PATH=self.path_prefix + CLEAN_ENV["PATH"])
        if self.torch_index is not None:
            env["TORCH_INDEX_URL"] = self.torch_index
        started = time.monotonic()
        with open(log, "w") as out:
            cmd = self.command(["bash", "/autograder/source/setup.sh"], env, "/autograder/source")
            done = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT)
        seconds = time.monotonic() - started
        if done.returncode:
            raise RuntimeError(f"setup.sh failed ({done.returncode}); its log, {log}:\n{log.read_text()[-4000:]}")
        return seconds

    def grade(self, sub: Submission, slug: str, now: dt.datetime, limit: int | None = None, enter: str = "chroot"):
        """Hand in ``sub`` and run ``/autograder/run_autograder`` in a cgroup; ``(results, facts)``."""
        base = self.path / "autograder"
        for folder in (base / layout.SUBMISSION, base / layout.RESULTS):
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
        nbformat.write(sub.notebook, str(base / layout.SUBMISSION / f"{slug}.ipynb"))
        (base / "submission_metadata.json").write_text(json.dumps(metadata(sub.previous_hours, now), indent=2))
        group = Cgroup(f"qkv-gradescope-{os.getpid()}-{time.monotonic_ns()}", limit)
        stop = threading.Event()

        def sampler():
            while not stop.is_set():
                group.sample()
                stop.wait(0.05)

        watcher = threading.Thread(target=sampler, daemon=True)
        rss_file = self.tmp / "time.txt"
        cmd = ["/usr/bin/time", "-f", "%M", "-o", str(rss_file)]
        cmd += self.command(["/autograder/run_autograder"], dict(CLEAN_ENV), "/autograder", enter)
        try:
            watcher.start()
            started = time.monotonic()
            done = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=group.enter, timeout=1200)
            seconds = time.monotonic() - started
            stop.set()
            watcher.join()
            group.sample()
            facts = {
                "seconds": seconds,
                "rc": done.returncode,
                "log": done.stdout + done.stderr,
                "peak": group.peak(),
                "anon_peak": group.anon_peak,
                "largest_rss": int(rss_file.read_text().split()[-1]) * 1024 if rss_file.exists() else 0,
                "oom_kills": group.oom_kills(),
            }
        finally:
            stop.set()
            group.remove()
        results_path = base / layout.RESULTS / layout.RESULTS_FILE
        data = json.loads(results_path.read_text()) if results_path.exists() else None
        return data, facts

    def close(self) -> None:
        """Unmount everything (the innermost first), then remove the root; a root still mounted is left, and
        said."""
        for target in reversed(self.mounts):
            if subprocess.run(["umount", str(target)], capture_output=True).returncode:
                subprocess.run(["umount", "-l", str(target)], capture_output=True)
        mounted = [
            line.split()[1]
            for line in Path("/proc/mounts").read_text().splitlines()
            if line.split()[1].startswith(str(self.tmp))
        ]
        if mounted:
            say(f"WARNING: left {self.tmp} in place: still mounted there: {mounted}")
            return
        # --one-file-system: rm never enters a file system mounted below, should one be left after all.
        subprocess.run(["rm", "-rf", "--one-file-system", str(self.tmp)], check=False)


# ---------------------------------------------------------------- checks


def outside_code(text: str) -> str:
    """``text`` without its fenced code blocks."""
    return re.sub(r"(?ms)^(`{3,})[^\n]*\n.*?^\1\s*$", "", text)


def check(data: dict | None, sub: Submission, slug: str, rationed: bool) -> list[str]:
    """What is wrong with the results of ``sub`` (empty: nothing)."""
    if data is None:
        return ["no results.json"]
    problems = [f"format: {p}" for p in gs_results.check_format(data)]
    release_max = sum(t["max_score"] for t in data["tests"] if "grade_id" in t.get("extra_data", {}))
    status = data.get("extra_data", {}).get("status")
    graded = {t["extra_data"]["grade_id"]: t for t in data["tests"] if "grade_id" in t.get("extra_data", {})}
    if data.get("output_format") != md.FORMAT or any(t.get("output_format") != md.FORMAT for t in data["tests"]):
        problems.append("not every output declares Markdown")
    for text in [data.get("output", "")] + [t.get("output", "") for t in data["tests"]]:
        if re.search(r"(?<!\\)<[A-Za-z/!]", outside_code(text)):
            problems.append(f"raw HTML outside a code block: {text[:200]!r}")
    if sub.expect == "full" and (data["score"] != release_max or status != "graded"):
        problems.append(f"solved: {data['score']} of {release_max}, {status}")
    if sub.expect == "zero" and data["score"] != 0:
        problems.append(f"unanswered: {data['score']} points")
    if sub.expect == "wrong":
        gid = "test_" + sub.detail.split(":")[0]
        mutated = [g for g in graded if g == gid or g.startswith(gid)]
        failed = [g for g, t in graded.items() if t["status"] == "failed"]
        if not mutated or any(graded[g]["status"] != "failed" for g in mutated):
            problems.append(f"wrong: the mutated exercise's test {gid} did not fail ({failed} failed)")
        if not 0 < data["score"] < release_max:
            problems.append(f"wrong: {data['score']} of {release_max}")
        if rationed:
            said = {t["output"] for t in graded.values()}
            if len(said) != 1 or not next(iter(said)).startswith("Scores only:"):
                problems.append(f"wrong: not rationed: {sorted(said)[:2]}")
            later = [t for t in data["tests"] if "feedback_of" in t.get("extra_data", {})]
            if not later or {t["visibility"] for t in later} != {"after_due_date"}:
                problems.append("wrong: the rationed feedback does not wait for the due date")
        elif not any("```" in t["output"] for t in data["tests"] if t["status"] == "failed"):
            problems.append("wrong: no failed test shows its output in a code block")
    if sub.expect == "tampered" and (
        data["score"] != 0 or status != "tampered" or sub.detail not in data["output"].replace("\\", "")
    ):
        problems.append(f"tampered: {data['score']} points, {status}, {data['output'][:200]!r}")
    if rationed and sub.kind in ("solved", "unanswered") and "Full feedback: submission" not in data["output"]:
        problems.append(f"{sub.kind}: the output does not say it has full feedback")
    return problems


# ---------------------------------------------------------------- the cycle


def mib(n: int) -> str:
    return f"{n / 2**20:.0f}"


def cycle(
    tarball: Path,
    slug: str,
    build_args: list[str],
    zips: Path,
    torch_index: str | None,
    keep: bool,
    bubblewrap: bool = False,
    python: str = "host",
) -> dict:
    """The whole cycle for one section's zip; a summary of what it measured."""
    name = slug + ("-bubblewrap" if bubblewrap else "")
    args = build_args + (["--bubblewrap"] if bubblewrap else [])
    say(f"\n## {name}\n")
    out = zips / name
    started = time.monotonic()
    archive = build_zip(slug, out, args)
    say(
        f'- zip: `make gradescope SECTION={slug} GRADESCOPE_ARGS="{" ".join(args)}"`: '
        f"{archive.stat().st_size / 2**20:.1f} MiB, built in {time.monotonic() - started:.0f} s"
    )
    with zipfile.ZipFile(archive) as zipped:
        weights = [n for n in zipped.namelist() if n.startswith(layout.TRAINED + "/") and n.endswith(".pt")]
        settings = json.loads(zipped.read("gradescope.json"))
        release_name = next(n for n in zipped.namelist() if n.startswith("course/release/") and n.endswith(".ipynb"))
        with tempfile.TemporaryDirectory() as tmp:
            release_path = Path(zipped.extract(release_name, tmp))
            rationed = settings.get("full_feedback") is not None
            subs = class_of(slug, release_path, rationed)
    say(f"- trained weights in the zip: {', '.join(weights) or 'none (the section trains nothing)'}")
    machine = Machine(tarball, name, torch_index, python)
    summary = {"slug": name, "rows": []}
    try:
        machine.unzip(archive)
        log = CACHE / f"setup-{name}.log"
        index = "unset (PyTorch's CPU index)" if torch_index is None else repr(torch_index)
        summary["setup"] = seconds = machine.setup(log)
        said = [line for line in log.read_text().splitlines() if line.startswith("setup:")]
        say(f"- setup.sh (TORCH_INDEX_URL {index}): {seconds:.0f} s; {'; '.join(said)}")
        now = dt.datetime.now(dt.timezone(dt.timedelta(hours=-7))).replace(microsecond=0)
        modes = ["chroot", "pivot"] if bubblewrap else ["chroot"]
        say(
            "\n| notebook | entered by | score | status | run_autograder s | peak MiB | anonymous MiB | "
            "largest process MiB | checks |"
        )
        say("|---|---|---|---|---|---|---|---|---|")
        outputs = {}
        for enter in modes:
            for sub in subs:
                data, facts = machine.grade(sub, slug, now, enter=enter)
                problems = check(data, sub, slug, rationed) if not (bubblewrap and enter == "chroot") else []
                if bubblewrap and enter == "chroot":
                    refused = data and data["score"] == 0 and not data["tests"] and "runs in a chroot" in data["output"]
                    problems = [] if refused else ["expected a refusal that names the chroot"]
                outputs[(enter, sub.kind)] = (data, facts)
                maximum = sum(t["max_score"] for t in (data or {}).get("tests", []))
                status = (data or {}).get("extra_data", {}).get("status", "-")
                say(
                    f"| {sub.kind}{' (' + sub.detail + ')' if sub.detail else ''} | {enter} | "
                    f"{(data or {}).get('score', '-')} of {maximum:g} | {status} | {facts['seconds']:.1f} | "
                    f"{mib(facts['peak'])} | {mib(facts['anon_peak'])} | {mib(facts['largest_rss'])} | "
                    f"{'ok' if not problems else 'FAILED: ' + '; '.join(problems)} |"
                )
                summary["rows"].append(
                    {
                        "kind": sub.kind,
                        "enter": enter,
                        "problems": problems,
                        **facts,
                        "score": (data or {}).get("score"),
                    }
                )
                if bubblewrap and enter == "chroot":
                    break  # every notebook is refused alike: once says why
        if not bubblewrap:
            data, facts = machine.grade(subs[0], slug, now, limit=GRADESCOPE_BYTES)
            same = data is not None and data["score"] == outputs[("chroot", "solved")][0]["score"]
            say(
                f"\nThe solved notebook again under a hard limit of 768 MB (Gradescope's default): "
                f"{'same score' if same else 'DIFFERENT'} ({(data or {}).get('score')}), peak {mib(facts['peak'])} "
                f"MiB, {facts['oom_kills']} out-of-memory kill(s), {facts['seconds']:.1f} s."
            )
            summary["fits_768"] = same and facts["oom_kills"] == 0
        show_outputs(outputs, bubblewrap)
    finally:
        if keep:
            say(f"(kept {machine.path}: unmount its proc, sys, dev and opt mounts before removing it)")
        else:
            machine.close()
    return summary


def show_outputs(outputs: dict, bubblewrap: bool) -> None:
    """What the results look like: the log's lines of run_autograder, and one output of each kind."""
    if bubblewrap:
        data, facts = outputs[("chroot", "solved")]
        say("\nIn the chroot, run_autograder's log:\n")
        say(md.code_block("\n".join(line for line in facts["log"].splitlines()[-8:])))
        say("\nand the output students get:\n")
        say(md.code_block((data or {}).get("output", "(no results.json)")))
        return
    data, facts = outputs[("chroot", "wrong")]
    say("\nrun_autograder's log for the wrong notebook:\n")
    say(md.code_block("\n".join(line for line in facts["log"].splitlines() if line.startswith("run_autograder"))))
    failed = next((t for t in data["tests"] if t["status"] == "failed"), None)
    say("\nIts results.json, the output for the whole submission and the first failed test's (Markdown):\n")
    say(md.code_block(data["output"]))
    if failed is not None:
        say(md.code_block(f"{failed['name']}: {failed['score']:g} of {failed['max_score']:g}\n{failed['output']}"))
        later = next(
            (
                t
                for t in data["tests"]
                if t.get("extra_data", {}).get("feedback_of") == failed["extra_data"]["grade_id"]
            ),
            None,
        )
        if later is not None:
            say(md.code_block(f"{later['name']} (visibility {later['visibility']}):\n{later['output'][:1500]}"))


def measure_memory(
    tarball: Path, slugs: list[str], zips: Path, torch_index: str | None, python: str = "host"
) -> dict[str, dict]:
    """Grade each section's solved notebook in one set-up root (setup.sh again for each zip); peaks by slug."""
    say("\n## Peak memory of grading each section's solved notebook\n")
    say("| section | peak MiB | anonymous MiB | largest process MiB | run_autograder s | score | under 768 MB |")
    say("|---|---|---|---|---|---|---|")
    machine = Machine(tarball, "memory", torch_index, python)
    found, losses = {}, []
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    try:
        for slug in slugs:
            archive = build_zip(slug, zips / "memory", [])
            machine.unzip(archive)
            machine.setup(CACHE / f"setup-memory-{slug}.log")
            with zipfile.ZipFile(archive) as zipped, tempfile.TemporaryDirectory() as tmp:
                name = next(n for n in zipped.namelist() if n.startswith("course/release/") and n.endswith(".ipynb"))
                solved = class_of(slug, Path(zipped.extract(name, tmp)), False)[0]
            data, facts = machine.grade(solved, slug, now)
            limited, lfacts = machine.grade(solved, slug, now, limit=GRADESCOPE_BYTES)
            fits = limited is not None and data is not None and limited["score"] == data["score"]
            fits = fits and lfacts["oom_kills"] == 0
            maximum = sum(t["max_score"] for t in (data or {}).get("tests", []))
            say(
                f"| {slug} | {mib(facts['peak'])} | {mib(facts['anon_peak'])} | {mib(facts['largest_rss'])} | "
                f"{facts['seconds']:.1f} | {(data or {}).get('score')} of {maximum:g} | "
                f"{'yes' if fits else 'NO'} |"
            )
            needed = memory.container_for(facts["peak"] / 2**20)
            if not fits and needed > memory.DEFAULT_MB:  # the container the zip then asks for: enough?
                again, afacts = machine.grade(solved, slug, now, limit=needed * 10**6)
                enough = again is not None and data is not None and again["score"] == data["score"]
                enough = enough and afacts["oom_kills"] == 0
                losses.append(
                    f"{slug} under {needed} MB, what its zip asks for: {'same score' if enough else 'NOT'}"
                    f" ({(again or {}).get('score')}), peak {mib(afacts['peak'])} MiB"
                )
            full = data is not None and data["score"] == maximum and data["extra_data"].get("status") == "graded"
            found[slug] = {"peak_mib": round(facts["peak"] / 2**20), "fits_768": fits, "score_ok": full}
            for test in (data or {}).get("tests", []) if not full else []:
                if test["status"] == "failed":
                    losses.append(f"{slug}, {test['name']}:\n{test['output'][:1500]}")
            if not fits:
                said = (limited or {}).get("output", "no results.json")[:600]
                losses.append(f"{slug} under 768 MB: {lfacts['oom_kills']} out-of-memory kill(s); {said}")
    finally:
        machine.close()
    for loss in losses:
        say("\n" + md.code_block(loss))
    return found


def write_memory(found: dict[str, dict]) -> None:
    """Record the peaks in autograder/gradescope/memory.toml (the sections measured now replace their entries)."""
    import tomllib

    old = tomllib.loads(MEMORY_TOML.read_text())["sections"] if MEMORY_TOML.exists() else {}
    day = dt.date.today().isoformat()
    for slug, got in found.items():
        old[slug] = {"peak_mib": got["peak_mib"], "measured": f"{day}, benchmarks/gradescope_chroot.sh --memory"}
    lines = [
        "# Peak memory (MiB) of grading one submission (the section's solved notebook) on Gradescope's path:",
        "# run_autograder in a fresh Debian root, without bubblewrap, every process of it in one memory cgroup.",
        "# Written by benchmarks/gradescope_chroot.sh --memory ... --write-memory; read by memory.py beside it.",
        "",
    ]
    for slug in sorted(old):
        lines += [
            f"[sections.{slug}]",
            f"peak_mib = {old[slug]['peak_mib']}",
            f'measured = "{old[slug]["measured"]}"',
            "",
        ]
    MEMORY_TOML.write_text("\n".join(lines))
    say(f"\nRecorded in {MEMORY_TOML.relative_to(ROOT)}.")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/gradescope_chroot.sh", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--section",
        action="append",
        metavar="SLUG",
        help=f"the cycle for this section (repeatable; default: {', '.join(DEFAULT_CASES)})",
    )
    parser.add_argument(
        "--bubblewrap",
        metavar="SLUG",
        default="attention-scoring-functions",
        help="the cycle of this section's --bubblewrap zip too ('' for none)",
    )
    parser.add_argument(
        "--memory",
        nargs="*",
        metavar="SLUG",
        default=None,
        help="measure the peak memory of grading these sections ('all': every section)",
    )
    parser.add_argument("--write-memory", action="store_true", help="record --memory's peaks in memory.toml")
    parser.add_argument("--no-cycle", action="store_true", help="--memory only: no cycle of solved, wrong... notebooks")
    parser.add_argument(
        "--torch-index-url",
        default="",
        metavar="URL",
        help="setup.sh's TORCH_INDEX_URL (default '': pip's own configuration, this machine's "
        "local wheels); 'unset' leaves it unset (PyTorch's CPU index, as on Gradescope)",
    )
    parser.add_argument(
        "--python",
        choices=("host", "system"),
        default="host",
        help="host (default): this machine's Python 3.11 in the root's /opt/python3.11, on setup.sh's PATH, in "
        "place of uv's, which needs GitHub; system: none, so setup.sh finds Debian's 3.11.2, too old for the pins, "
        "and tries uv",
    )
    parser.add_argument("--keep", action="store_true", help="keep the roots (mounted) to look inside")
    parser.add_argument(
        "--note", type=Path, default=NOTE, help=f"where the note goes (default {NOTE.relative_to(ROOT)})"
    )
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        parser.error("run as root: debootstrap, chroot, mounts and cgroups need it")
    torch_index = None if args.torch_index_url == "unset" else args.torch_index_url
    started = time.monotonic()
    say("# Gradescope from an empty machine: a fresh Debian root, setup.sh, run_autograder\n")
    say(
        f"Measured {dt.datetime.now():%Y-%m-%d %H:%M} on {platform.node() or 'this machine'}: {os.cpu_count()} CPUs, "
        f"Linux {platform.release()}, by `benchmarks/gradescope_chroot.sh {' '.join(argv or sys.argv[1:])}`."
    )
    tarball = base_tarball()
    say(
        f"Base: Debian {SUITE} `debootstrap --variant=minbase` ({TARBALL.stat().st_size / 2**20:.0f} MiB tarball, "
        "no Python, no pip); each root fresh from it."
    )
    say(
        "Peak MiB: the kernel's peak of the grading's memory cgroup (every process of run_autograder, with the page "
        "cache it brought in); anonymous MiB: the largest anonymous and shared memory sampled every 50 ms (what "
        "cannot be reclaimed); largest process: `/usr/bin/time`'s maximum resident set of one process (it counts "
        "the pages of shared libraries that another cgroup read first, so it can exceed the peak; processes in "
        "bubblewrap's PID namespace escape it)."
    )
    python = {
        "host": "this machine's Python 3.11 in the root's /opt/python3.11, on setup.sh's PATH, in place of uv's "
        "(Debian 12's python3.11, 3.11.2, is older than the pins need, and uv downloads from GitHub, which this "
        "machine cannot reach)",
        "system": "none but what setup.sh installs",
    }[args.python]
    index = "unset (PyTorch's CPU index)" if torch_index is None else f"{torch_index!r}"
    say(
        f"Python: {python}. TORCH_INDEX_URL: {index}; with '' setup.sh uses pip's configuration, this machine's, "
        "copied in with its local wheel folders mounted read-only. The root also gets this machine's resolv.conf "
        "and the certificate authorities it adds (its HTTPS proxy's)."
    )
    zips = CACHE / "zips"
    summaries = []
    cases = {slug: DEFAULT_CASES.get(slug, []) for slug in args.section} if args.section else DEFAULT_CASES
    failed = False
    if args.memory is not None:  # first, so that the zips of the cycles ask for the containers measured now
        slugs = [s.slug for s in all_sections()] if args.memory in ([], ["all"]) else args.memory
        found = measure_memory(tarball, slugs, zips, torch_index, args.python)
        failed = not all(got["score_ok"] for got in found.values())
        if args.write_memory:
            write_memory(found)
    if not args.no_cycle:
        for slug, build_args in cases.items():
            summaries.append(cycle(tarball, slug, build_args, zips, torch_index, args.keep, python=args.python))
        if args.bubblewrap:
            summaries.append(
                cycle(tarball, args.bubblewrap, [], zips, torch_index, args.keep, bubblewrap=True, python=args.python)
            )
        failed = failed or any(row["problems"] for s in summaries for row in s["rows"])
    say(f"\nIn all {time.monotonic() - started:.0f} s. {'Some checks FAILED.' if failed else 'Every check passed.'}")
    args.note.parent.mkdir(parents=True, exist_ok=True)
    args.note.write_text("\n".join(LINES) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
