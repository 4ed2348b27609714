"""Grading cost per submission, section by section: seconds of hidden tests, visible tests and everything else.

The design's budget (docs/design.md, "Budgets"): the hidden tests of one submission run in at most 5 s on 2 CPU
cores. This runs each section's notebook, stubs filled from ``solutions/``, top to bottom in a fresh Python process
per section and repeat (as the grader runs one kernel per submission), and times every code cell: the hidden tests
of each test cell, its visible part, and all other cells (set-up, demos, figures, training). The first section
named is the baseline, and every row shows its hidden-test time as a ratio to the baseline's, measured in the same
run, so that the load of a shared machine shows in both. The median of ``--repeats`` runs is reported.

    .venv/bin/python benchmarks/hidden_tests.py [SLUG ...] [--repeats 3]

Default: 11.3 (the baseline, ``attention-scoring-functions``) and 11.5 (``multihead-attention``). Exit status 1
when a section's hidden tests take more than 5 s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUDGET_S = 5.0
DEFAULT = ("attention-scoring-functions", "multihead-attention")


def _one_run(slug: str) -> dict:
    """Time every code cell of ``slug`` with the solutions (in this process); returns seconds by kind."""
    sys.path.insert(0, str(ROOT))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from autograder import assemble
    from course import notebooks as nbs

    sec = assemble.as_section(slug)
    solutions = assemble.solutions_module(sec)
    ns: dict = {"__name__": "__main__"}
    times = {"hidden": 0.0, "visible": 0.0, "other": 0.0}
    per_test = {}
    for index, cell in enumerate(nbs.read(sec.path).cells):
        if cell.cell_type != "code":
            continue
        role, grade = nbs.role(cell), nbs.grade_id(cell)
        source = assemble.fill_stubs(cell.source, grade, solutions, False) if role == "stub" else cell.source
        start = time.perf_counter()
        exec(compile(source, f"<{slug} cell {index}>", "exec"), ns)  # noqa: S102 (the course's own code)
        kind = "visible" if role == "test" else "other"
        times[kind] += time.perf_counter() - start
        if role == "test":
            hidden = assemble.hidden_tests(sec, grade)
            start = time.perf_counter()
            exec(compile(hidden, f"<{slug} {grade} hidden>", "exec"), ns)  # noqa: S102
            per_test[grade] = time.perf_counter() - start
            times["hidden"] += per_test[grade]
        plt.close("all")
    return {**times, "per_test": per_test}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("slugs", nargs="*", default=list(DEFAULT))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: run one section in this process
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(_one_run(args.one)))
        return 0
    results = {}
    for _ in range(args.repeats):  # sections alternate, so that a change in the load hits all of them
        for slug in args.slugs:
            out = subprocess.run(
                [sys.executable, __file__, "--one", slug], capture_output=True, text=True, cwd=ROOT, check=True
            )
            results.setdefault(slug, []).append(json.loads(out.stdout.strip().splitlines()[-1]))
    load = os.getloadavg()[0]
    print(f"Seconds per submission (solutions), median of {args.repeats}, {os.cpu_count()} CPUs, load {load:.1f}")
    print(f"{'section':32s}{'hidden':>9s}{'ratio':>8s}{'visible':>9s}{'other':>9s}   hidden per test cell")
    base = statistics.median(r["hidden"] for r in results[args.slugs[0]])
    over = False
    for slug, runs in results.items():
        med = {k: statistics.median(r[k] for r in runs) for k in ("hidden", "visible", "other")}
        tests = {g: statistics.median(r["per_test"][g] for r in runs) for g in runs[0]["per_test"]}
        detail = ", ".join(f"{g.removeprefix('test_')} {s:.2f}" for g, s in tests.items())
        print(
            f"{slug:32s}{med['hidden']:9.2f}{med['hidden'] / base:8.2f}{med['visible']:9.2f}{med['other']:9.2f}"
            f"   {detail}"
        )
        over |= med["hidden"] > BUDGET_S
    print(f"budget: hidden tests <= {BUDGET_S:g} s per submission" + (" -- MISSED" if over else " -- met"))
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
