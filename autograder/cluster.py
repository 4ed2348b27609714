"""Grading on the workers of a ``dask.distributed`` cluster: ``python -m autograder.grade CLASS --cluster tcp://HOST:PORT``.

The coordinator (:mod:`autograder.grade`) does everything but run student code: it reads and rebuilds each
submission, puts the hidden tests back, and sends the code cells of that one notebook with its limits to a worker
(``client.submit`` of :func:`run_on_worker`). The worker runs them in the same bubblewrap sandbox as a local run
(:class:`autograder.sandbox.Sandbox`: no network, limits, a fresh child per notebook) and sends back the
:class:`~autograder.sandbox.RunResult`; only the coordinator writes the gradebook, the feedback, ``grades.csv``
and the report. Dask schedules, moves the data and notices lost workers; nothing here is a scheduler or a queue.

**Preflight.** Before anything is graded, every worker (``client.run``) reports its :func:`fingerprint`: whether
bubblewrap can make a sandbox there, the course version (a hash of the code that runs in the sandbox: the
grader's runner and sandbox, and the ``qkv`` package the notebooks import) and the versions of the packages that
decide a grade. A worker that differs from the coordinator stops the run, the error naming the worker and what
differs, before any grade is written. A worker that joins later is checked by its first task the same way
(:func:`run_on_worker` refuses to run and the coordinator stops).

**Faults.** Each submission has one task at a time, and the coordinator records the first result that comes
back for it, once:

* a worker killed mid-run: the scheduler gives its task to another worker (dask's own rescheduling); a task
  that has killed several workers (``KilledWorker``) runs in the coordinator's own sandbox instead, so its
  result is what a local run gives;
* a lost connection (the task is cancelled, or comes back with a communication error): the coordinator
  submits it again, at most :data:`RESUBMITS` times, then runs it in its own sandbox;
* a run past its deadline: the worker's sandbox ends it at the same wall-clock deadline as a local run (and
  its backstop kills the sandbox if the child does not stop), so the result is the same ``timeout``.

A coordinator that is interrupted loses nothing either: :class:`autograder.grading.journal.Journal` records each
finished submission, and the same command finishes the class.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from autograder import sandbox as sb
from autograder.nbcourse import GradingError

ROOT = Path(__file__).resolve().parent.parent
#: Seconds to reach the scheduler before giving up (an unreachable one is an error, not a wait).
CONNECT_TIMEOUT = 10.0
#: Times a task lost with its connection is submitted again before the coordinator runs it itself.
RESUBMITS = 3
#: Packages whose versions must be the same on every worker as on the coordinator: what runs a notebook and
#: what computes in it (the grades), and dask's own serialisation.
PACKAGES = ("torch", "numpy", "matplotlib", "sympy", "distributed", "dask", "cloudpickle", "msgpack")
log = logging.getLogger("autograder.grade")


def course_files(root: Path = ROOT) -> list[Path]:
    """What the course version hashes: the code that runs inside the sandbox (the ``sandboxed`` package, the
    sandbox itself, this module) and the ``qkv`` package the notebooks import (its Python files)."""
    grader = sorted((root / "autograder" / "sandboxed").glob("*.py"))
    grader += sorted((root / "autograder" / "sandbox").glob("*.py")) + [root / "autograder" / "cluster.py"]
    qkv = sorted((root / "lib" / "qkv").rglob("*.py"))
    return [p for p in grader + qkv if p.is_file()]


@functools.cache
def course_version(root: Path = ROOT) -> str:
    """A hash of :func:`course_files` (their paths under ``root`` and their contents), computed once per process
    (its code does not change while it runs)."""
    digest = hashlib.sha256()
    for path in course_files(root):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def package_versions() -> dict[str, str]:
    """The installed version of each of :data:`PACKAGES` (``"missing"`` when it is not installed), and Python's."""
    import platform
    from importlib import metadata

    found = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "missing"
    return found


def bubblewrap() -> str:
    """``"works"``, or why bubblewrap cannot make a sandbox here."""
    try:
        sb.check_available()
    except sb.SandboxUnavailable as err:
        return str(err).replace(" Nothing was graded.", "")
    return "works"


@functools.cache
def fingerprint() -> dict:
    """What must be the same on a worker as on the coordinator: bubblewrap, the course version, the packages.
    Computed once per process (a worker's code and packages do not change while it runs)."""
    return {"bubblewrap": bubblewrap(), "course": course_version(), "packages": package_versions()}


def differences(expected: dict, found: dict) -> list[str]:
    """What ``found`` (a worker's :func:`fingerprint`) lacks or has otherwise than ``expected`` (the
    coordinator's), one phrase each; ``[]`` when they agree."""
    diffs = []
    if found.get("bubblewrap") != "works":
        diffs.append(f"bubblewrap does not work there ({found.get('bubblewrap')})")
    if found.get("course") != expected.get("course"):
        diffs.append(
            f"course version {found.get('course')} instead of {expected.get('course')} (the grader's runner, "
            "sandbox or the qkv package differ: install the same commit of the course on the worker)"
        )
    theirs, ours = found.get("packages", {}), expected.get("packages", {})
    for name in sorted(set(ours) | set(theirs)):
        if theirs.get(name) != ours.get(name):
            diffs.append(f"{name} {theirs.get(name, 'missing')} instead of {ours.get(name, 'missing')}")
    return diffs


def _worker_fingerprint() -> dict:
    return fingerprint()


def connect(address: str, timeout: float | None = None):
    """A ``distributed.Client`` of the scheduler at ``address`` (``tcp://HOST:PORT``), or :class:`GradingError`
    within ``timeout`` seconds saying that it could not be reached."""
    if not isinstance(address, str) or "://" not in address:
        raise GradingError(
            f"--cluster wants the scheduler's address, e.g. tcp://scheduler.example.org:8786, not {address!r}. "
            "Nothing was graded."
        )
    try:
        from distributed import Client
    except ImportError:
        raise GradingError(
            "--cluster needs dask.distributed: install the course's environment (any make target does, or pip install "
            "-c constraints.txt distributed). Nothing was graded."
        ) from None
    timeout = CONNECT_TIMEOUT if timeout is None else timeout
    try:
        return Client(address, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as err:
        raise GradingError(
            f"could not reach the dask scheduler at {address} within {timeout:g} s ({err}). Start it (dask "
            "scheduler) and its workers (dask worker), or check the address and the firewall. Nothing was graded."
        ) from None


def preflight(client, expected: dict | None = None) -> dict[str, dict]:
    """Check every worker of ``client``'s cluster against ``expected`` (default: this process's
    :func:`fingerprint`); returns the workers' fingerprints, or raises :class:`GradingError` naming each worker
    that differs and how (or saying there is no worker), before anything is graded."""
    expected = expected or fingerprint()
    try:
        found = client.run(_worker_fingerprint)
    except Exception as err:  # noqa: BLE001 (a worker that cannot even answer is refused too)
        raise GradingError(f"the cluster's workers could not be checked ({err}). Nothing was graded.") from None
    if not found:
        raise GradingError(
            f"the dask scheduler at {client.scheduler.address} has no worker: start some (dask worker ADDRESS). "
            "Nothing was graded."
        )
    problems = [
        f"worker {addr}: {'; '.join(diffs)}"
        for addr, fp in sorted(found.items())
        if (diffs := differences(expected, fp))
    ]
    if problems:
        raise GradingError(
            "these workers cannot grade for this course, so nothing was graded: "
            + " | ".join(problems)
            + ". Give every worker the same checkout and environment as this machine (make installs it) and bubblewrap."
        )
    return found


# ---------------------------------------------------------------- on a worker

_mine = threading.local()  # each worker thread's sandbox, reused from one notebook to the next (as grade_all does)


def run_on_worker(expected: dict, limits: sb.Limits, prefix, cells) -> tuple[str, object]:
    """On a worker: run one notebook's code cells in this thread's sandbox. Returns ``("ran", RunResult)``, or
    ``("refused", why)`` when this worker differs from the coordinator (a worker that joined after the
    preflight). Never raises for the notebook's sake: a sandbox failure is the notebook's result, as locally."""
    diffs = differences(expected, fingerprint())
    if diffs:
        from distributed import get_worker

        return "refused", f"worker {get_worker().address}: {'; '.join(diffs)}"
    return "ran", run_here(limits, prefix, cells)


def run_here(limits: sb.Limits, prefix, cells, boxes: list | None = None) -> sb.RunResult:
    """Run one notebook in this thread's sandbox (made, or made again for other limits, as needed)."""
    try:
        box = getattr(_mine, "box", None)
        if box is None or box.limits != limits:
            if box is not None:
                box.close()
            box = _mine.box = sb.Sandbox(limits)
            if boxes is not None:
                boxes.append(box)
        return box.run(cells, prefix=prefix)
    except Exception as err:  # noqa: BLE001 (a sandbox failure is this submission's result)
        return sb.RunResult(how="died", detail=f"the sandbox failed: {err}")


# ---------------------------------------------------------------- on the coordinator


def window(client) -> int:
    """How many notebooks the coordinator keeps in flight: four per worker thread (enough to keep every worker
    busy while results come back), at least eight. Bounded, so that the coordinator's memory stays flat
    however large the class."""
    try:
        threads = sum(client.nthreads().values())
    except Exception:  # noqa: BLE001
        threads = 2
    return max(8, 4 * threads)


def run_all(
    client,
    items: Iterable,
    limits_of: Callable,
    record: Callable,
    expected: dict | None = None,
    token_of: Callable = id,
) -> int:
    """Run every prepared notebook of ``items`` on the cluster, at most :func:`window` at a time, and
    ``record(item, run_result)`` each exactly once, in this thread, as results come back.

    ``items`` is read lazily (the coordinator prepares a notebook only when there is room for it);
    ``limits_of(item)`` gives its :class:`~autograder.sandbox.Limits`, ``item.prefix`` and ``item.cells`` its code,
    ``token_of(item)`` a name unique to it in this run (the dask key of its task, plus the attempt: two students
    who hand in the same file are still two tasks).
    See the module docstring for what happens on faults. Returns how many notebooks ran in the coordinator's own
    sandbox because the cluster lost them too often."""
    from distributed import as_completed

    expected = expected or fingerprint()
    source = iter(items)
    pending: dict = {}  # future -> (item, attempt)
    completed = as_completed(loop=client.loop)
    local_boxes: list[sb.Sandbox] = []
    ran_here = 0

    def submit(item, attempt: int) -> None:
        future = client.submit(
            run_on_worker,
            expected,
            limits_of(item),
            item.prefix,
            item.cells,
            key=f"qkv-grade-{token_of(item)}-{attempt}",
            pure=False,
        )
        pending[future] = (item, attempt)
        completed.add(future)

    def refill() -> None:
        while len(pending) < size:
            item = next(source, None)
            if item is None:
                return
            submit(item, 0)

    size = window(client)
    try:
        refill()
        for future in completed:
            item, attempt = pending.pop(future)
            try:
                kind, value = future.result()
            except Exception as err:  # noqa: BLE001 (the task was lost: a killed worker, a lost connection)
                killed = type(err).__name__ == "KilledWorker"
                if not killed and attempt < RESUBMITS:
                    log.warning("a worker lost a notebook (%s: %s): submitted again", type(err).__name__, err)
                    submit(item, attempt + 1)
                    continue
                log.warning("the cluster lost a notebook %d times (%s): it runs here", attempt + 1, err)
                value, ran_here = run_here(limits_of(item), item.prefix, item.cells, local_boxes), ran_here + 1
            else:
                if kind == "refused":
                    raise GradingError(f"a worker cannot grade for this course: {value}. Grading stopped.")
            finally:
                future.release()
            record(item, value)
            refill()
    finally:
        for future in list(pending):
            future.cancel()
        for box in local_boxes:
            box.close()
    return ran_here
