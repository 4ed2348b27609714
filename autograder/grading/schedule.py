"""Scheduling: every submission graded once, ``jobs`` sandboxes at a time on this machine (:func:`grade_here`) or
on the workers of a dask cluster (:mod:`autograder.cluster`, beside this module), each result recorded in this
thread as it comes."""

from __future__ import annotations

import hashlib
import sys
import threading
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

from autograder import sandbox as sb
from autograder.grading.journal import Journal
from autograder.grading.limits import notebook_limits
from autograder.grading.options import GradeOptions
from autograder.grading.results import Prepared, Result, finish_safely, log, prepare_safely, sub_key
from autograder.nbcourse import Course
from autograder.submissions import Submission

#: Prepared notebooks waiting per local sandbox (:func:`grade_here`): enough that a sandbox never waits for the
#: coordinator, few enough that the coordinator's memory stays flat however large the class.
LOCAL_WINDOW = 4


def grade_all(
    subs: list[Submission], course: Course, options: GradeOptions, client=None, journal: Journal | None = None
) -> list[Result]:
    """Grade every submission; sandboxes run ``options.workers`` at a time (or on the workers of the dask ``client``:
    :mod:`autograder.cluster`), this thread writes every grade.

    ``options.limits`` are the defaults of a run; each notebook's release may change them (:func:`notebook_limits`),
    except the fields in ``options.fixed``. Every release's limits are checked before anything is graded.
    ``journal``: where each finished submission is recorded, and whose records of an interrupted run of the same
    class are kept instead of grading those submissions again (:class:`Journal`)."""
    from tqdm import tqdm

    per_notebook = {
        (a, n): notebook_limits(course, a, n, options.limits, options.fixed)
        for a, n in sorted({(s.assignment, s.notebook) for s in subs})
    }
    journal = journal or Journal(None)
    tokens = {
        sub_key(s): journal.token(s, per_notebook[s.assignment, s.notebook], course, options.tampered) for s in subs
    }
    results: dict[tuple, Result] = journal.finished(tokens)
    if results:
        log.warning("resuming an interrupted run: %d of %d notebooks were graded already", len(results), len(subs))
    todo = sorted((s for s in subs if sub_key(s) not in results), key=lambda s: (s.assignment, s.notebook, s.student))
    bar = tqdm(
        total=len(subs),
        initial=len(results),
        unit="notebook",
        desc="grading",
        disable=not options.progress,
        file=sys.stderr,
    )

    def record(prep: Prepared, run: sb.RunResult | None) -> None:
        key = sub_key(prep.sub)
        if key in results:  # never twice (the cluster's bookkeeping should make this impossible)
            log.warning("a second result for %s was ignored", key)
            return
        results[key] = finish_safely(prep, run, course, options)
        journal.add(tokens[key], results[key])
        bar.update()

    try:
        if client is not None:
            from autograder import cluster

            cluster.run_all(
                client,
                runnable(todo, course, record),  # prepared as the cluster has room: the memory stays flat
                lambda prep: per_notebook[prep.sub.assignment, prep.sub.notebook],
                record,
                token_of=lambda prep: hashlib.sha256(
                    repr((sub_key(prep.sub), tokens[sub_key(prep.sub)])).encode()
                ).hexdigest()[:24],
            )
        else:
            grade_here(todo, course, options.workers, per_notebook, record, options.bubblewrap)
    finally:
        bar.close()
        journal.close()
    return [results[k] for k in sorted(results)]


def runnable(subs, course: Course, record):
    """The submissions of ``subs`` prepared one at a time, as the caller asks for the next (so that only those in
    flight are held in memory); one that cannot run (unreadable, no answers) is recorded at once, without a run."""
    for sub in subs:
        prep = prepare_safely(sub, course)
        if prep.status is not None:
            record(prep, None)
        else:
            yield prep


def grade_here(subs, course: Course, jobs: int, per_notebook: dict, record, bubblewrap: bool = True) -> None:
    """Grade ``subs`` on this machine, ``jobs`` sandboxes at a time (in bubblewrap, or without it:
    :class:`sandbox.Sandbox`); ``record(prep, run)`` each in this thread.

    ``subs`` come in notebook order (:func:`grade_all` sorts them), so that each sandbox runs a notebook's shared
    prefix once; its limits change only with the notebook, when the sandbox starts again anyway. A submission is
    prepared (read, checked, its hidden tests put back) only when a sandbox has room for it, at most
    :data:`LOCAL_WINDOW` per sandbox ahead, so the coordinator's memory does not grow with the class."""
    mine = threading.local()  # each worker thread's sandbox
    boxes: list[sb.Sandbox] = []  # every sandbox made, closed at the end
    made = threading.Lock()

    def run(prep: Prepared) -> sb.RunResult:
        """In a worker thread: one notebook in that thread's sandbox (never raises: a failure is a result)."""
        try:
            wanted = per_notebook[prep.sub.assignment, prep.sub.notebook]
            box = getattr(mine, "box", None)
            if box is None or box.limits != wanted:
                if box is not None:
                    box.close()
                box = mine.box = sb.Sandbox(wanted, bubblewrap=bubblewrap)
                with made:
                    boxes.append(box)
            return box.run(prep.cells, prefix=prep.prefix)
        except Exception as err:  # noqa: BLE001 (a sandbox failure is this submission's result)
            return sb.RunResult(how="died", detail=f"the sandbox failed: {err}")

    workers = max(1, jobs)
    source = runnable(subs, course, record)
    pending: dict = {}  # future -> prepared submission
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="sandbox")

    def refill() -> None:
        while len(pending) < LOCAL_WINDOW * workers:
            prep = next(source, None)
            if prep is None:
                return
            pending[pool.submit(run, prep)] = prep

    try:
        refill()
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                record(pending.pop(future), future.result())
            refill()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # on Ctrl-C: no new run starts, the running ones end
        for box in boxes:
            box.close()
