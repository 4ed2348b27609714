"""What the similarity report costs (issue 29): the grading benchmark's class, graded, then its pairs found again.

Makes the class of ``benchmarks/grading.py`` (``--n`` submissions of 11.3 unless ``--section``: every known mistake,
pairs of them, broken and invalid notebooks, the rest the reference answers), grades it once as ``make grade`` does
without feedback (``python -m autograder.grade CLASS --no-feedback --jobs 2``, the similarity report included), then
times, in this process and on the same files, what that run spent on the report: :func:`autograder.similarity.find`
over the graded class (median of ``--repeats``), and the same answers made distinct (a line of each student's
own added to every answer, so that no fingerprint is reused: the cost of a class where everyone wrote their own
code). It prints the table and writes it to ``benchmarks/results/similarity.md`` (``--out`` to change).

    .venv/bin/python benchmarks/similarity.py [--n 1000] [--section SLUG] [--repeats 3] [--out PATH]

Target: the similarity report takes under a tenth of grading's time (exit status 1 otherwise).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import importlib.util
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import _course  # noqa: E402 (benchmarks/_course.py)

from autograder import similarity  # noqa: E402
from autograder.nbcourse import Course  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "similarity.md"
TARGET = 0.10  # the report's share of grading's time


def grading_benchmark():
    """``benchmarks/grading.py`` as a module (its class and its timed runs)."""
    spec = importlib.util.spec_from_file_location("grading_benchmark", ROOT / "benchmarks" / "grading.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclasses.dataclass(frozen=True)
class Graded:
    """What :func:`autograder.similarity.find` reads of a result: whose notebook, and its status."""

    student: str
    assignment: str
    notebook: str
    status: str


def graded(grades_csv: Path) -> list[Graded]:
    with open(grades_csv, newline="", encoding="utf-8") as fh:
        return [Graded(r["student"], r["assignment"], r["notebook"], r["status"]) for r in csv.DictReader(fh)]


def median_seconds(work, repeats: int) -> tuple[float, object]:
    """The median wall-clock seconds of ``work()`` over ``repeats`` runs, and what the last one returned."""
    times, value = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        value = work()
        times.append(time.perf_counter() - started)
    return statistics.median(times), value


def distinct(course: Course, results: list[Graded]) -> tuple[int, object]:
    """The answers of the graded class, each made distinct by a line of its student's (``_ = "written by ..."``),
    compared exercise by exercise as :func:`similarity.find` does; returns how many answers and the pairs found."""
    import json

    answers: dict[tuple, list] = {}
    for r in results:
        if r.status in similarity.NOT_ANSWERED:
            continue
        nb = json.loads(course.path("autograded", r.assignment, r.notebook, student=r.student).read_text())
        for grade_id, source in similarity.answer_cells(nb):
            own = similarity.Answer(
                student=r.student,
                assignment=r.assignment,
                notebook=r.notebook,
                grade_id=grade_id,
                source=f'{source}\n    _ = "written by {r.student}"\n',
            )
            answers.setdefault((r.assignment, r.notebook, grade_id), []).append(own)
    pairs = []
    for (assignment, notebook, _), group in sorted(answers.items()):
        release = course.release(assignment, notebook)
        given = similarity.Given.of(c.source for c in release.cells if c.cell_type == "code")
        pairs += similarity.compare(group, given)
    return sum(map(len, answers.values())), pairs


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1000, help="students in the class (default: 1000)")
    parser.add_argument("--section", default="attention-scoring-functions", help="the section's slug (11.3)")
    parser.add_argument("--jobs", type=int, default=2, help="sandboxes at once while grading (default: 2)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of the report (median; default: 3)")
    parser.add_argument("--out", type=Path, default=OUT, help=f"where the table goes (default: {OUT})")
    args = parser.parse_args(argv)
    bench = grading_benchmark()
    slug = args.section
    template = _course.released(slug)
    work = Path(tempfile.mkdtemp(prefix="similarity-bench-"))
    load = os.getloadavg()
    try:
        klass, course_dir = work / "class", work / "course"
        bench.make_class(klass, template / "release" / slug / f"{slug}.ipynb", args.n, slug)
        shutil.copytree(template, course_dir)
        cmd = [sys.executable, "-m", "autograder.grade", str(klass), "--quiet", "--no-feedback"]
        cmd += ["--jobs", str(args.jobs), "--course", str(course_dir), "--out", str(course_dir / "reports")]
        seconds, _, done, _ = bench.timed(cmd)
        if done.returncode:
            print(done.stdout, done.stderr, file=sys.stderr)
            return 1
        print(f"graded {args.n} in {seconds:.1f} s", file=sys.stderr)
        course = Course.load(course_dir)
        results = graded(course_dir / "reports" / "grades.csv")
        listed = (course_dir / "reports" / "similarity.csv").read_text().count("\n") - 1
        found_s, pairs = median_seconds(lambda: similarity.find(course, results), args.repeats)
        distinct_s, (answers, distinct_pairs) = median_seconds(lambda: distinct(course, results), args.repeats)
        share = found_s / seconds
        rows = [
            "| what | seconds | share of grading |",
            "|---|---:|---:|",
            f"| grading the class (`make grade` without feedback, the similarity report included) | {seconds:.1f} "
            "| 100% |",
            f"| the similarity report of that class (`similarity.find`) | {found_s:.2f} | {share:.2%} |",
            f"| the same {answers} answers made distinct (no fingerprint reused) | {distinct_s:.2f} "
            f"| {distinct_s / seconds:.2%} |",
        ]
        ok = share < TARGET and distinct_s / seconds < TARGET and len(pairs) == listed
        table = "\n".join(
            [
                f"Grading {args.n} submissions of `{slug}` (the class of `benchmarks/grading.py`: every known mistake, "
                f"pairs of them, broken and invalid notebooks, the rest the reference answers) on {os.cpu_count()} "
                f"CPUs, {args.jobs} sandboxes at a time; load average before: {load[0]:.2f}, {load[1]:.2f}, "
                f"{load[2]:.2f}. The report's times are medians of {args.repeats} runs in one process.",
                "",
                *rows,
                "",
                f"Pairs listed: {len(pairs)} in the graded class (similarity.csv of the run: {listed}), "
                f"{len(distinct_pairs)} with the answers made distinct. Target: the report under "
                f"{TARGET:.0%} of grading's time: {'met' if ok else 'MISSED'}.",
            ]
        )
        print(table)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(f"# The similarity report's cost (issue 29)\n\n    {' '.join(sys.argv)}\n\n{table}\n")
        return 0 if ok else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
