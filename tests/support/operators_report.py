"""``python -m tests.support.operators_report [SLUG ...]``: run every mutant :mod:`autograder.operators` generates
through its section's hidden tests, in the in-process harness (the grader's shell and guard), and print the table of
operators by section: rejected/generated, and how many of the rest each section's ``equivalents.toml`` lists, with
every survivor it does not list named (issue 40's report; ``tests/grading/test_generated_mutants.py`` is the gate).
``--counts`` prints the same table from the counts alone, in seconds: true whenever the gate passes."""

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


def counts_table(chosen: list[str]) -> None:
    """The table without running anything: generated per operator and section, the equivalents listed, and the
    rest, which ``tests/grading/test_generated_mutants.py`` proves rejected when it passes (``--counts``)."""
    names = list(operators.OPERATORS)
    rows = {}
    for slug in chosen:
        listed = {(e.stub, e.mutant) for e in operators.equivalents(slug)}
        row = {n: [0, 0, 0] for n in names}
        for m in operators.generate(slug):
            row[m.operator][1 if (m.grade_id, m.name) in listed else 0] += 1
        rows[slug] = row
    rows["all"] = {n: [sum(rows[s][n][i] for s in chosen) for i in range(3)] for n in names}
    print("| section | " + " | ".join(names) + " | all |")
    print("|---|" + "---:|" * (len(names) + 1))
    for slug, row in rows.items():
        cells = [_cell(*row[n]) for n in names]
        print(f"| {slug} | " + " | ".join(cells) + f" | {_cell(*(sum(row[n][i] for n in names) for i in range(3)))} |")
    print("\n(rejected/generated, + the equivalents listed)")


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if "--counts" in argv:
        argv = [a for a in argv if a != "--counts"]
        counts_table([s.slug for s in sections() if not argv or s.slug in argv])
        return
    chosen = [s.slug for s in sections() if not argv or s.slug in argv]
    # slug -> operator -> [rejected, listed equivalent, surviving unlisted]
    table: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0, 0]))
    named, stale = [], []
    for slug in chosen:
        listed = {(e.stub, e.mutant) for e in operators.equivalents(slug)}
        rejected, surviving = survivors(slug)
        for m in rejected:
            table[slug][m.operator][0] += 1
            if (m.grade_id, m.name) in listed:
                stale.append(f"{slug} [[{m.grade_id}]] {m.name}: listed equivalent, but rejected")
        for m in surviving:
            equivalent = (m.grade_id, m.name) in listed
            table[slug][m.operator][1 if equivalent else 2] += 1
            if not equivalent:
                named.append(f"{slug} [[{m.grade_id}]] {m.name} ({m.klass})")
        print(f"{slug}: {len(rejected)} rejected, {len(surviving)} surviving", flush=True)
    names = list(operators.OPERATORS)
    print("\n| section | " + " | ".join(names) + " | all |")
    print("|---|" + "---:|" * (len(names) + 1))
    for slug in chosen + ["all"]:
        rows = (
            [table[slug][n] for n in names]
            if slug != "all"
            else [[sum(table[s][n][i] for s in chosen) for i in range(3)] for n in names]
        )
        cells = [_cell(*row) for row in rows]
        print(f"| {slug} | " + " | ".join(cells) + f" | {_cell(*(sum(r[i] for r in rows) for i in range(3)))} |")
    print("\n(rejected/generated, + the equivalents listed; ! the survivors not listed)\n\nSurviving, not listed:")
    for line in named + stale:
        print(f"- {line}")


def _cell(rejected: int, equivalent: int, unlisted: int) -> str:
    generated = rejected + equivalent + unlisted
    if not generated:
        return ""
    return f"{rejected}/{generated}" + (f" +{equivalent}" if equivalent else "") + (f" !{unlisted}" if unlisted else "")


if __name__ == "__main__":
    main()
