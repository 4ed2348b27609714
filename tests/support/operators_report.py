"""``python -m tests.support.operators_report [SLUG ...]``: run every mutant :mod:`autograder.operators` generates
through its section's hidden tests, in the in-process harness (the grader's shell and guard), and print the table of
operators by section: generated, rejected, surviving, with each survivor named (issue 40's report)."""

from __future__ import annotations

import sys
from collections import defaultdict

from autograder import operators
from course.section import sections
from tests.support.inprocess import run_section


def survivors(slug: str) -> tuple[list, list]:
    """(rejected, surviving) generated mutants of section ``slug``."""
    rejected, surviving = [], []
    for mutant in operators.generate(slug):
        try:
            run = run_section(slug, answers={mutant.grade_id: mutant.source}, until=f"test_{mutant.grade_id}")
            outcome = run.tests[f"test_{mutant.grade_id}"]
            caught = not outcome.hidden_passed
        except RuntimeError:  # a plain cell after the stub failed: the grader would fail the notebook's tests too
            caught = True
        (rejected if caught else surviving).append(mutant)
    return rejected, surviving


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    chosen = [s.slug for s in sections() if not argv or s.slug in argv]
    table: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    named = []
    for slug in chosen:
        rejected, surviving = survivors(slug)
        for m in rejected:
            table[slug][m.operator][0] += 1
        for m in surviving:
            table[slug][m.operator][1] += 1
            named.append(f"{slug} [[{m.grade_id}]] {m.name} ({m.klass})")
        print(f"{slug}: {len(rejected)} rejected, {len(surviving)} surviving", flush=True)
    names = list(operators.OPERATORS)
    print("\n| section | " + " | ".join(names) + " | all |")
    print("|---|" + "---:|" * (len(names) + 1))
    for slug in chosen:
        row = [table[slug][n] for n in names]
        cells = [f"{r}/{r + s}" if r + s else "" for r, s in row]
        total = sum(r for r, _ in row), sum(r + s for r, s in row)
        print(f"| {slug} | " + " | ".join(cells) + f" | {total[0]}/{total[1]} |")
    print("\n(rejected/generated)\n\nSurviving:")
    for line in named:
        print(f"- {line}")


if __name__ == "__main__":
    main()
