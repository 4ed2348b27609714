"""Book build budget (docs/design.md): a cold build of the whole book on 2 CPU cores in under 10 minutes, a warm
rebuild in under a minute.

Builds the student edition into a scratch copy of _build (so your own build and its cache are untouched): once cold
(empty execution cache), once warm (nothing changed), and prints a table with the ratio of each to its budget.

    .venv/bin/python benchmarks/book_build.py [--edition student|solutions]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from publish.build_book import build  # noqa: E402

BUDGETS = {"cold": 600.0, "warm": 60.0}


def timed_build(edition: str, out: Path) -> float:
    t0 = time.perf_counter()
    build(edition, out=out, quiet=True)
    return time.perf_counter() - t0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edition", default="student", choices=["student", "solutions"])
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="qkv-book-bench-") as tmp:
        out = Path(tmp) / args.edition
        times = {"cold": timed_build(args.edition, out), "warm": timed_build(args.edition, out)}
        shutil.rmtree(out, ignore_errors=True)
    print(f"\nBook build, {args.edition} edition (budget from docs/design.md)\n")
    print("| build | seconds | budget (s) | ratio to budget |")
    print("|---|---:|---:|---:|")
    for kind, seconds in times.items():
        print(f"| {kind} | {seconds:.1f} | {BUDGETS[kind]:.0f} | {seconds / BUDGETS[kind]:.2f} |")
    return 0 if all(times[k] <= BUDGETS[k] for k in times) else 1


if __name__ == "__main__":
    sys.exit(main())
