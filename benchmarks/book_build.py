"""Book build budget (docs/design.md): a cold build of the whole book on 2 CPU cores in under 8 minutes (the
notebooks run side by side, publish/execute.py, the lab's timings alone), a warm rebuild in under 30 s.

Builds each edition into a scratch folder (so your own build and its cache are untouched): once cold (empty
execution cache), once warm (nothing changed), and prints a table with the ratio of each to its budget. For a cold
build that trains every model too, give it an empty folder of trained weights:

    QKV_TRAINED_DIR=$(mktemp -d) .venv/bin/python benchmarks/book_build.py [--edition student|solutions|both]
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
from autograder import editions  # noqa: E402
from publish.build_book import build  # noqa: E402

BUDGETS = {"cold": 480.0, "warm": 30.0}


def timed_build(edition: str, out: Path) -> float:
    t0 = time.perf_counter()
    if edition == "solutions":
        editions.build(out=out, quiet=True)
    else:
        build(edition, out=out, quiet=True)
    return time.perf_counter() - t0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edition", default="both", choices=["student", "solutions", "both"])
    args = parser.parse_args(argv)
    editions = ["student", "solutions"] if args.edition == "both" else [args.edition]
    times: dict[tuple[str, str], float] = {}
    for edition in editions:
        with tempfile.TemporaryDirectory(prefix="qkv-book-bench-") as tmp:
            out = Path(tmp) / edition
            for kind in ("cold", "warm"):
                times[edition, kind] = timed_build(edition, out)
            shutil.rmtree(out, ignore_errors=True)
    print("\nBook build (budgets from docs/design.md)\n")
    print("| edition | build | seconds | budget (s) | ratio to budget |")
    print("|---|---|---:|---:|---:|")
    for (edition, kind), seconds in times.items():
        print(f"| {edition} | {kind} | {seconds:.1f} | {BUDGETS[kind]:.0f} | {seconds / BUDGETS[kind]:.2f} |")
    return 0 if all(seconds <= BUDGETS[kind] for (_, kind), seconds in times.items()) else 1


if __name__ == "__main__":
    sys.exit(main())
