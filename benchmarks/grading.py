"""Grading benchmark: a class of 60 submissions (of 11.3 unless ``--section``), by stock nbgrader and by our grader.

Builds the nbgrader course of ``attention-scoring-functions`` (D2L 11.3; cached under ``_build/``), makes a
class in nbgrader's layout (correct answers, the known mistakes of ``autograder/sections/<module>/mutants.toml``,
unanswered, broken and invalid notebooks), then grades it on this machine, in one run, three ways, each into its own
copy of the course:

* stock: ``nbgrader autograde attention-scoring-functions`` (one Jupyter kernel per submission, in turn);
* ours: ``python -m autograder.grade CLASS --no-feedback`` (what ``make grade`` runs, without feedback);
* ours + feedback: the same with nbgrader's feedback HTML and the report, i.e. all of ``make grade``.

It prints seconds per submission for each (wall clock of the whole command, start-up included), the ratio
stock / ours, and whether the scores agree, exercise by exercise, on every submission that stock nbgrader
grades at all. The table also goes to ``_build/benchmarks/grading.md``.

Then the scale figures (issue 15): a class of ``--n`` submissions (default 1,000, made the same way: every known
mistake, pairs of them, broken notebooks, the rest right answers) graded on this machine (``--jobs 2``) and on a
2-worker dask ``LocalCluster`` over TCP on loopback (``--cluster``, one thread per worker: the same two sandboxes
at a time), each into its own copy of the course: seconds per submission, the cluster path's overhead over the
local one, the coordinator's peak memory (its own ``VmHWM``, without the sandboxes), and whether both
``grades.csv`` are identical. The table also goes to ``_build/benchmarks/grading-scale.md``.

    .venv/bin/python benchmarks/grading.py [--section SLUG] [--students 60] [--jobs N] [--skip-stock]
                                           [--n 1000] [--skip-scale | --scale-only]

Targets: ours at least 3x stock nbgrader's throughput, with the same scores; the cluster within 15% of local per
submission on one machine, with the same grades.csv. The exit status is 1 when one is missed.
"""

from __future__ import annotations

import argparse
import copy
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import _course  # noqa: E402 (benchmarks/_course.py)

from autograder import mutants as known  # noqa: E402
from autograder import release  # noqa: E402
from course import notebooks as nbs  # noqa: E402

SLUG = "attention-scoring-functions"
OUT = ROOT / "_build" / "benchmarks" / "grading.md"
TARGET = 3.0


def make_class(dest: Path, release: Path, students: int, slug: str = SLUG) -> dict[str, str]:
    """Write ``students`` submissions of section ``slug`` under ``dest``; returns student -> what it is.
    Deterministic: every known mistake of the section, pairs of them, broken and invalid notebooks, the rest right."""
    solved = known.solved_notebook(release, slug)
    blank = nbformat.read(release, as_version=4)
    mutants = [(gid, name) for gid, names in known.names_by_stub(slug).items() for name in names]
    stubs = [gid for gid in known.names_by_stub(slug)]
    kinds: list[tuple[str, object]] = []
    for gid, name in mutants:  # every known mistake once
        kinds.append((f"mutant {gid}/{name}", known.with_answer(solved, gid, known.mutated_cell(slug, gid, name))))
    for i in range(8):  # two mistakes in different exercises
        (g1, n1), (g2, n2) = mutants[i * 3 % len(mutants)], mutants[(i * 3 + 11) % len(mutants)]
        if g1 == g2:
            continue
        nb = known.with_answer(solved, g1, known.mutated_cell(slug, g1, n1))
        kinds.append((f"mutants {g1}/{n1} + {g2}/{n2}", known.with_answer(nb, g2, known.mutated_cell(slug, g2, n2))))
    broken = [
        ("unanswered", blank),
        ("unanswered", blank),
        (
            "raises in an answer cell",
            known.with_answer(solved, stubs[0 % len(stubs)], "raise ValueError('not done yet')"),
        ),
        ("syntax error", known.with_answer(solved, stubs[1 % len(stubs)], "def oops(:\n    pass")),
        ("syntax error", known.with_answer(solved, stubs[2 % len(stubs)], "class AdditiveAttention(\n")),
        ("answer cell deleted", _without(solved, stubs[3 % len(stubs)])),
        ("invalid JSON", '{"cells": ['),
        ("empty file", ""),
    ]
    kinds += broken
    correct = max(students - len(kinds), 0)
    kinds = [("correct", solved)] * correct + kinds
    written = {}
    for i, (what, content) in enumerate(kinds[:students]):
        student = f"student{i:03d}"
        path = dest / student / slug / f"{slug}.ipynb"
        path.parent.mkdir(parents=True)
        if isinstance(content, str):
            path.write_text(content)
        else:
            nbformat.write(content, str(path))
        written[student] = what
    return written


def _without(nb, grade_id):
    out = copy.deepcopy(nb)
    out.cells = [c for c in out.cells if nbs.grade_id(c) != grade_id]
    return out


def stock_gaps(course_dir: Path, slug: str = SLUG) -> list[float]:
    """Seconds between consecutive autograded notebooks of stock nbgrader (its time per submission, one by one)."""
    stamps = sorted(p.stat().st_mtime for p in (course_dir / "autograded").glob(f"*/{slug}/{slug}.ipynb"))
    return [b - a for a, b in zip(stamps, stamps[1:])]


def run(cmd, cwd) -> tuple[float, subprocess.CompletedProcess]:
    """Run a command; returns its wall-clock seconds and what it did."""
    started = time.monotonic()
    done = subprocess.run(cmd, cwd=cwd, env=release.venv_env(), capture_output=True, text=True)
    return time.monotonic() - started, done


def scores(course_dir: Path, graded_only: bool, slug: str = SLUG) -> dict[str, dict[str, float | None]]:
    """student -> {grade_id: auto_score} from a course's gradebook (only students with an autograded notebook)."""
    from nbgrader.api import Gradebook, MissingEntry

    out = {}
    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}", "qkv-attention") as gb:
        for student in gb.students:
            if graded_only and not (course_dir / "autograded" / student.id / slug / f"{slug}.ipynb").exists():
                continue
            try:
                nb = gb.find_submission_notebook(slug, slug, student.id)
            except MissingEntry:
                continue
            out[student.id] = {g.name: g.auto_score for g in nb.grades}
    return out


def main(argv=None) -> int:
    """Make the class, grade it three ways, print the table; returns 1 when the target is missed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--students", type=int, default=60)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--skip-stock", action="store_true", help="time our grader only")
    parser.add_argument("--section", default=SLUG, help=f"the section's slug (default: {SLUG}, D2L 11.3)")
    parser.add_argument("--n", type=int, default=1000, help="students of the scale figures (default: 1000)")
    parser.add_argument("--skip-scale", action="store_true", help="no scale figures (local vs a dask cluster)")
    parser.add_argument("--scale-only", action="store_true", help="only the scale figures")
    args = parser.parse_args(argv)
    slug = args.section
    code = 0 if args.scale_only else compare(slug, args)
    if not args.skip_scale:
        code = max(code, scale(slug, args.n))
    return code


def compare(slug: str, args) -> int:
    """Stock nbgrader against ours on ``args.students`` submissions; returns 1 when the target is missed."""
    template = _course.released(slug)
    work = Path(tempfile.mkdtemp(prefix="grading-bench-"))
    try:
        klass = work / "class"
        kinds = make_class(klass, template / "release" / slug / f"{slug}.ipynb", args.students, slug)
        n = len(kinds)
        rows, times = [], {}
        ours_cmd = [sys.executable, "-m", "autograder.grade", str(klass), "--jobs", str(args.jobs), "--quiet"]
        for label, extra in (("ours", ["--no-feedback"]), ("ours + feedback", [])):
            target = work / label.replace(" ", "").replace("+", "_")
            shutil.copytree(template, target)
            seconds, done = run([*ours_cmd, "--course", str(target), "--out", str(target / "reports"), *extra], ROOT)
            if done.returncode:
                print(done.stdout, done.stderr, file=sys.stderr)
                return 1
            times[label] = (seconds, target)
            print(f"{label}: {seconds:.1f} s ({done.stdout.strip()})", file=sys.stderr)
        agree = "not run"
        if not args.skip_stock:
            stock = work / "stock"
            shutil.copytree(template, stock)
            shutil.copytree(klass, stock / "submitted")
            cmd = [release.nbgrader_bin(), "autograde", slug, "--log-level=ERROR"]
            seconds, done = run(cmd, stock)
            times["stock nbgrader"] = (seconds, stock)
            print(f"stock nbgrader: {seconds:.1f} s (exit {done.returncode})", file=sys.stderr)
            gaps = stock_gaps(stock, slug)
            if gaps:
                stalls = sum(g > 120 for g in gaps)
                median = statistics.median(gaps)
                print(
                    f"stock nbgrader: median {median:.2f} s between submissions, {stalls} stalls > 120 s",
                    file=sys.stderr,
                )
                times["stock nbgrader, median gap"] = (median * n, stock)
            theirs, ours = scores(stock, True, slug), scores(times["ours"][1], False, slug)
            differ = sorted(s for s in theirs if theirs[s] != ours.get(s))
            agree = f"{len(theirs) - len(differ)}/{len(theirs)} agree" + (
                f"; differ: {', '.join(differ)}" if differ else ""
            )
            for s in differ:
                print(f"{s} ({kinds[s]}): stock {theirs[s]} ours {ours.get(s)}", file=sys.stderr)
        base = times.get("stock nbgrader", (None,))[0]
        pace = times.get("stock nbgrader, median gap", (None,))[0]
        rows.append("| grader | seconds | seconds per submission | throughput vs stock | vs stock's median pace |")
        rows.append("|---|---:|---:|---:|---:|")
        for label in ("stock nbgrader", "stock nbgrader, median gap", "ours", "ours + feedback"):
            if label in times:
                seconds = times[label][0]
                ratios = ["-", "-"]
                if label.startswith("ours"):
                    ratios = [f"{ref / seconds:.1f}x" if ref else "-" for ref in (base, pace)]
                rows.append(f"| {label} | {seconds:.1f} | {seconds / n:.2f} | {ratios[0]} | {ratios[1]} |")
        ok = base is None or (base / times["ours"][0] >= TARGET and "differ" not in agree)
        if pace:
            rows += [
                "",
                "The median row is stock nbgrader's median time between two graded notebooks, times the class "
                "size: its pace without its start-up and without stalls (a kernel that stops answering waits for "
                "nbgrader's 300 s cell timeout).",
            ]
        table = "\n".join(
            [
                f"Grading {n} submissions of `{slug}` on {os.cpu_count()} CPUs, our grader with --jobs {args.jobs}:",
                "",
                *rows,
                "",
                f"Scores, exercise by exercise, on the submissions stock nbgrader graded: {agree}.",
                f"Target: at least {TARGET:g}x stock nbgrader's throughput, same scores: {'met' if ok else 'MISSED'}.",
            ]
        )
        print(table)
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(table + "\n")
        return 0 if ok else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


SCALE_OUT = ROOT / "_build" / "benchmarks" / "grading-scale.md"
JOURNAL = "grading-journal.jsonl"  # grading.journal.Journal.NAME: one line per graded notebook, in the course folder
OVERHEAD_TARGET = 0.15  # the cluster path may cost at most 15% more per submission than the local one, on one machine


def watch_peak(proc: subprocess.Popen, found: dict, journal: Path | None = None) -> threading.Thread:
    """Follow ``proc``'s own peak resident memory (``VmHWM``, without its children: the sandboxes) into
    ``found["peak_mib"]`` until it ends; with ``journal`` (the course's grading journal, one line per graded
    notebook), also ``found["rss"]``: (notebooks graded so far, resident MiB now) about once a second."""

    def follow():
        status = Path(f"/proc/{proc.pid}/status")
        last = 0.0
        while proc.poll() is None:
            try:
                fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
            except OSError:
                break
            found["peak_mib"] = max(found.get("peak_mib", 0.0), int(fields["VmHWM"].split()[0]) / 1024)
            if journal is not None and time.monotonic() - last >= 1.0:
                last = time.monotonic()
                try:
                    done = journal.read_bytes().count(b"\n")
                except OSError:
                    done = 0
                found.setdefault("rss", []).append((done, int(fields["VmRSS"].split()[0]) / 1024))
            time.sleep(0.2)

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    return thread


def timed(cmd, journal: Path | None = None) -> tuple[float, float, subprocess.CompletedProcess, list]:
    """Run a grading command; returns its wall-clock seconds, the coordinator's peak MiB, what it did, and the
    (graded so far, resident MiB) samples of :func:`watch_peak`."""
    found: dict = {}
    started = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=release.venv_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    watcher = watch_peak(proc, found, journal)
    out, err = proc.communicate()
    seconds = time.monotonic() - started
    watcher.join()
    done = subprocess.CompletedProcess(cmd, proc.returncode, out, err)
    return seconds, found.get("peak_mib", float("nan")), done, found.get("rss", [])


def rss_at(samples: list, n: int) -> list[str]:
    """The coordinator's resident MiB when a quarter, half, three quarters and all of the ``n`` notebooks were
    graded (the last sample at or below each count), as table cells."""
    cells = []
    for q in (n // 4, n // 2, 3 * n // 4, n):
        seen = [rss for done, rss in samples if done <= q]
        cells.append(f"{seen[-1]:.0f}" if seen else "")
    return cells


def scale(slug: str, n: int, workers: int = 2) -> int:
    """The scale figures: ``n`` submissions of ``slug`` graded locally (``--jobs workers``) and on a
    ``workers``-worker ``LocalCluster`` over TCP on loopback (one thread each: the same parallelism), into copies of
    the course; seconds per submission, the cluster's overhead, the coordinator's peak memory, and whether the two
    grades.csv agree. Returns 1 when they differ or the overhead passes :data:`OVERHEAD_TARGET`."""
    from distributed import LocalCluster

    template = _course.released(slug)
    work = Path(tempfile.mkdtemp(prefix="grading-scale-"))
    load = os.getloadavg()
    try:
        klass = work / "class"
        make_class(klass, template / "release" / slug / f"{slug}.ipynb", n, slug)
        base = [
            sys.executable,
            "-m",
            "autograder.grade",
            str(klass),
            "--quiet",
            "--no-feedback",
            "--jobs",
            str(workers),
        ]
        measured = {}
        with LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=":0"
        ) as cluster:
            for label, extra in (
                ("local", []),
                (f"{workers}-worker LocalCluster", ["--cluster", cluster.scheduler_address]),
            ):
                course = work / label.split()[0]
                shutil.copytree(template, course)
                cmd = [*base, "--course", str(course), "--out", str(course / "reports"), *extra]
                seconds, peak, done, rss = timed(cmd, course / JOURNAL)
                if done.returncode:
                    print(done.stdout, done.stderr, file=sys.stderr)
                    return 1
                measured[label] = (seconds, peak, (course / "reports" / "grades.csv").read_text(), rss)
                print(f"{label}: {seconds:.1f} s, coordinator peak {peak:.0f} MiB", file=sys.stderr)
        (local_s, _, local_csv, _), (cluster_s, _, cluster_csv, _) = measured.values()
        overhead = cluster_s / local_s - 1
        same = local_csv == cluster_csv
        rows = [
            "| where | seconds | s per submission | vs local | coordinator peak MiB | MiB at 1/4, 1/2, 3/4, all |",
            "|---|---:|---:|---:|---:|---|",
        ]
        for label, (seconds, peak, _, rss) in measured.items():
            rows.append(
                f"| {label} | {seconds:.1f} | {seconds / n:.3f} | {seconds / local_s:.2f}x | {peak:.0f} | "
                f"{' / '.join(rss_at(rss, n))} |"
            )
        ok = same and overhead <= OVERHEAD_TARGET
        table = "\n".join(
            [
                f"Grading {n} submissions of `{slug}` (every known mistake, pairs of them, broken and invalid "
                f"notebooks, the rest right) on {os.cpu_count()} CPUs, two sandboxes at a time either way; "
                f"load average before: {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f}.",
                "",
                *rows,
                "",
                f"Cluster overhead over local: {overhead:+.1%} (target: within {OVERHEAD_TARGET:.0%}): "
                f"{'met' if overhead <= OVERHEAD_TARGET else 'MISSED'}. "
                f"grades.csv identical: {'yes' if same else 'NO'}.",
                f"At this pace one machine grades 1,000 submissions in about {local_s / n * 1000 / 60:.0f} min; each "
                "machine added to the cluster adds its own sandboxes.",
            ]
        )
        print(table)
        SCALE_OUT.parent.mkdir(parents=True, exist_ok=True)
        SCALE_OUT.write_text(table + "\n")
        return 0 if ok else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
