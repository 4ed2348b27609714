"""The command line: ``python -m autograder.grade SUBMISSIONS [--course DIR] [--jobs N] [--out DIR] [...]``, and
:func:`grade`, what it runs (see :mod:`autograder.grading`)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

from autograder import gradebook, reference, report, similarity
from autograder import sandbox as sb
from autograder.grading.journal import Journal
from autograder.grading.options import TAMPER_POLICIES, GradeOptions
from autograder.grading.results import STATUSES, Result, log
from autograder.grading.schedule import grade_all
from autograder.nbcourse import Course, GradingError
from autograder.submissions import discover, extract_zip, find_root


def default_course() -> Path:
    """The course ``make release`` builds: ``_build/course``."""
    from autograder import release

    return release.COURSE


def reports_dir(course_dir: Path, out: Path | None = None) -> Path:
    """Where ``grades.csv``, ``failures.csv`` and the report go: ``out``, else ``COURSE/reports``."""
    return Path(out or Path(course_dir) / "reports").resolve()


def grade(
    submissions: Path, course_dir: Path | None = None, out: Path | None = None, options: GradeOptions | None = None
) -> list[Result]:
    """Grade the class in ``submissions`` (a folder or a zip) into ``course_dir``, as ``options`` say (see
    :mod:`autograder.grading`).

    ``options.cluster``: the address of a dask scheduler (``tcp://HOST:PORT``) whose workers run the sandboxes
    (:mod:`autograder.cluster`; checked before anything is graded). ``options.db``: the gradebook's database URL
    (``postgresql://USER:PASSWORD@HOST:PORT/DB``, or ``sqlite:///PATH``) instead of the course's ``db_url``; the
    course's assignments and hidden tests are copied into it from the course's own gradebook. Either way a
    scheduler or database that cannot be reached stops the run at once, nothing written.

    ``options.tampered``: what a notebook whose locked cells or grading metadata were edited gets. ``"zero"`` (as
    docs/design.md says), or ``"keep"``: the score of its answers, which ran with the course's own cells anyway
    (kinder to an accidental edit, e.g. on Colab, which does not lock cells). Either way its status is
    ``tampered`` and the reason lists the edits.
    """
    options = options or GradeOptions()
    sb.check_available(options.bubblewrap)
    if not options.bubblewrap:
        log.warning(
            "grading without bubblewrap, as asked: student code runs as an unprivileged user with the same Guard, "
            "seccomp filter and limits, but without namespaces (README.md, 'What grading promises')"
        )
    os.environ.setdefault("PGCONNECT_TIMEOUT", str(gradebook.CONNECT_TIMEOUT))  # a PostgreSQL that hangs: an error
    if options.db is not None:
        gradebook.check_database(options.db)
    client = None
    if options.cluster is not None:
        from autograder import cluster as dask_cluster

        client = dask_cluster.connect(options.cluster)
    try:
        if client is not None:
            dask_cluster.preflight(client)
        return run(submissions, course_dir, out, options, client)
    finally:
        if client is not None:
            client.close()


def run(submissions: Path, course_dir: Path | None, out: Path | None, options: GradeOptions, client=None):
    """:func:`grade` once the cluster and the database are known to work."""
    course_dir = Path(course_dir or default_course()).resolve()
    if not (course_dir / "gradebook.db").exists() and course_dir == Path(default_course()).resolve():
        from autograder import release

        release.release(course_dir)
    if options.db is not None and (course_dir / "gradebook.db").exists():  # the course's assignments, hidden tests
        gradebook.copy_structure(f"sqlite:///{course_dir / 'gradebook.db'}", options.db)
    course = load_course(course_dir, options.db)
    out = reports_dir(course_dir, out)
    submissions = Path(submissions).resolve()
    if not submissions.exists():
        raise GradingError(f"{submissions} does not exist: give a folder STUDENT/ASSIGNMENT/NOTEBOOK.ipynb or a zip")
    with tempfile.TemporaryDirectory(prefix="qkv-submissions-") as tmp:
        if submissions.is_file():
            for warning in extract_zip(submissions, Path(tmp)):
                log.warning(warning)
            root = Path(tmp)
        else:
            root = submissions
        root = find_root(root, course.notebooks)
        sb.check_hidden([course_dir, root, out], options.bubblewrap)
        subs = discover(root, course)
        journal = Journal(course_dir / Journal.NAME)
        results = grade_all(subs, course, options, client, journal)
    out.mkdir(parents=True, exist_ok=True)
    report.write_csv(results, out / "grades.csv")
    report.write_failures(results, out / "failures.csv")
    report.write_flags(results, out / "flags.csv")
    similar = [] if options.similarity is None else similarity.find(course, results, options.similarity)
    report.write_similarity(similar, out / "similarity.csv")
    like_reference = None if options.similarity is None else reference.find(course, results)
    reference.write_csv(like_reference.matches if like_reference else [], out / "reference.csv")
    report.write_report(results, out, similar, options.similarity or similarity.THRESHOLD, like_reference)
    if options.feedback:
        report.generate_feedback(course, sorted({r.assignment for r in results}), options.workers)
    journal.remove()
    return results


def load_course(course_dir: Path, db_url: str | None = None) -> Course:
    """:meth:`Course.load`, with a gradebook database that cannot be used (a PostgreSQL ``db_url`` in
    ``nbgrader_config_local.py`` whose server is down or refuses the login) as a :class:`GradingError`."""
    try:
        return Course.load(course_dir, db_url)
    except GradingError:
        raise
    except Exception as err:
        if type(err).__module__.startswith("sqlalchemy"):
            first = str(getattr(err, "orig", err)).strip().splitlines()[0]
            raise GradingError(
                f"cannot use the course's gradebook database ({first}): check db_url in "
                f"{course_dir / 'nbgrader_config_local.py'} and that its server runs. Nothing was graded."
            ) from None
        raise


def share(text: str) -> float:
    """A command-line share, above 0 and at most 1 (``--similarity``)."""
    value = positive(text)
    if value > 1:
        raise argparse.ArgumentTypeError(f"must be at most 1 (a share of an answer), not {text}")
    return value


def positive(text: str) -> float:
    """A command-line number that must be above zero (``--deadline``, ``--memory``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be above zero, not {text}")
    return value


def main(argv=None) -> int:
    """The command line; returns the exit status (2 when nothing could be graded)."""
    parser = argparse.ArgumentParser(
        prog="python -m autograder.grade",
        description="Grade a class of nbgrader submissions in sandboxes, into the course's gradebook.",
    )
    parser.add_argument("submissions", type=Path, help="folder STUDENT/ASSIGNMENT/NOTEBOOK.ipynb, or a zip of one")
    parser.add_argument("--course", type=Path, default=None, help="the nbgrader course (default: _build/course)")
    parser.add_argument("--jobs", type=int, default=None, help="sandboxes at once (default: number of CPUs)")
    parser.add_argument("--out", type=Path, default=None, help="where grades.csv and the report go")
    default = sb.Limits()
    parser.add_argument(
        "--deadline",
        type=positive,
        default=None,
        help=f"seconds per notebook, wall clock (default: the section's grading: deadline_s, else "
        f"{default.deadline:g}); given, it holds for every section",
    )
    parser.add_argument(
        "--memory",
        type=positive,
        default=None,
        help=f"GiB of address space per notebook (default: the section's grading: memory_gib, else "
        f"{default.memory / sb.GiB:g}); given, it holds for every section",
    )
    parser.add_argument("--no-feedback", action="store_true", help="skip nbgrader's feedback HTML")
    parser.add_argument(
        "--similarity",
        type=share,
        default=similarity.THRESHOLD,
        metavar="SHARE",
        help=f"list pairs of answers to an exercise at least this alike, the code given to all left out "
        f"(similarity.csv, report.html; default {similarity.THRESHOLD:g})",
    )
    parser.add_argument(
        "--no-similarity",
        action="store_true",
        help="no comparison of answers: no pairs alike (similarity.csv) and no answers like qkv's reference "
        "(reference.csv), in the CSVs or the report",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument(
        "--tampered",
        choices=TAMPER_POLICIES,
        default="zero",
        help="a notebook whose locked cells were edited scores zero (default), or keeps its answers' score",
    )
    parser.add_argument(
        "--no-bubblewrap",
        action="store_true",
        help="where bubblewrap cannot run (a container): run student code as an unprivileged user, needs root "
        "(same Guard, seccomp filter and limits, no namespaces; README.md says what that still promises)",
    )
    parser.add_argument(
        "--cluster",
        default=None,
        metavar="tcp://HOST:PORT",
        help="grade on the workers of this dask scheduler (each runs the same sandbox); default: on this machine",
    )
    parser.add_argument(
        "--db",
        default=None,
        metavar="URL",
        help="the gradebook's database, e.g. postgresql://USER:PASSWORD@HOST:5432/DB (default: the course's "
        "db_url, sqlite:///gradebook.db unless nbgrader_config_local.py says otherwise)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
    given = {"deadline": args.deadline, "memory": None if args.memory is None else int(args.memory * sb.GiB)}
    given = {field: value for field, value in given.items() if value is not None}
    started = time.monotonic()
    try:
        options = GradeOptions(
            limits=sb.Limits(**given),
            fixed=tuple(given),
            tampered=args.tampered,
            bubblewrap=not args.no_bubblewrap,
            feedback=not args.no_feedback,
            progress=not args.quiet,
            jobs=args.jobs,
            db=args.db,
            cluster=args.cluster,
            similarity=None if args.no_similarity else args.similarity,
        )
        results = grade(args.submissions, args.course, args.out, options)
    except (GradingError, sb.SandboxUnavailable) as err:
        print(f"grade: {err}", file=sys.stderr)
        return 2
    counts = {s: sum(r.status == s for r in results) for s in STATUSES}
    summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    graded = report.plural(len(results), "notebook", "notebooks")
    print(f"graded {graded} in {time.monotonic() - started:.1f} s: {summary}")
    course_dir = Path(args.course or default_course()).resolve()
    out = reports_dir(course_dir, args.out)
    print(f"grades: {out / 'grades.csv'}\nreport: {out / 'report.html'} (failures: {out / 'failures.csv'})")
    if not args.no_similarity:
        print(f"answers alike, for a person to read: {out / 'similarity.csv'} and the report")
        print(f"answers like qkv's reference, for a person to read: {out / 'reference.csv'} and the report")
    if not args.no_feedback:
        print(f"feedback: {course_dir / 'feedback'}/STUDENT/ASSIGNMENT/")
    waiting = sum(len(r.waiting) for r in results)
    if waiting:
        answers = report.plural(waiting, "written answer waits", "written answers wait")
        print(f"{answers} for a grader: jupyter lab in {course_dir}, then Nbgrader > Formgrader")
    return 0


if __name__ == "__main__":
    sys.exit(main())
