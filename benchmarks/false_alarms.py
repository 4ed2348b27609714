"""False alarms of the hidden tests' statistical checks (issue 40): right answers run over many seeds.

A contract on a distribution (``mask_tokens``: each token chosen with probability 0.15 on its own; the 80/10/10
split; random ids drawn uniformly; ``span_noise``: a uniform split of the noise into spans) is checked by
``autograder/sections/_shared.py``'s laws of random draws, each at level ``_ALPHA`` (1e-8): a right answer fails one
with at most that probability, so with at most 100 such checks in a notebook a right submission loses a point by
chance less than once in a million gradings. This script shows it on the answers themselves: it runs the hidden test
of each stub with a statistical contract on the reference answer (``solutions/``) and on every right variant
(``variants.toml``), each over ``--seeds`` generator seeds (each generator the test makes is shadowed by one seeded
from its seed and the run's, so the same state still gives the same result), and on the generated mutants that break
the law (``fixed_count``, ``random_range``), to show the checks' power. It prints a table per check: runs, failures,
the smallest p-value seen and the share of p-values below 0.01 (near 1% when the check's law is right).

    .venv/bin/python benchmarks/false_alarms.py [--seeds 300]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: The stubs whose hidden tests check a law of random draws, by section.
STATISTICAL = {"large-pretraining-transformers": ["mask_tokens", "span_noise"]}


def _answers(slug: str, grade: str):
    """(label, cell source, must pass) for the reference, each variant and each generated mutant of the law."""
    from autograder import mutants, operators

    solved = mutants.solved_cell(slug, grade)
    yield "reference", solved, True
    for variant in mutants.load_variants(slug):
        if variant.grade_id == grade:
            yield f"variant {variant.name}", variant.apply(solved), True
    for mutant in operators.generate(slug, ["fixed_count", "random_range"]):
        if mutant.grade_id == grade:
            yield f"mutant {mutant.name}", mutant.source, False


def _run(slug: str, grade: str, source: str, seed: int) -> tuple[bool, list]:
    """Run the hidden test of ``grade`` on the answer ``source`` with generator seeds moved by ``seed``: whether it
    passed, and the p-values its statistical checks computed."""
    import torch

    from autograder import assemble
    from qkv import checks

    answer: dict = {"torch": torch, "checks": checks, "IGNORE_INDEX": -100}  # the names the notebook's stubs use
    exec(compile(source, f"<{grade}>", "exec"), answer)
    fn = answer[grade]

    shadows: dict[int, tuple] = {}  # id of the test's generator -> (it, the answer's): one stream per generator

    def moved(*args, generator=None, **kwargs):
        if id(generator) not in shadows:
            shadow = torch.Generator().manual_seed(generator.initial_seed() * 1_000_003 + seed)
            shadows[id(generator)] = (generator, shadow)
        return fn(*args, generator=shadows[id(generator)][1], **kwargs)

    space = {"torch": torch, "checks": checks, grade: moved}
    try:
        exec(compile(assemble.hidden_tests(slug, f"test_{grade}"), f"<hidden {grade}>", "exec"), space)
        passed = True
    except Exception:  # a failed check, or an error the grader counts as a failure too
        passed = False
    return passed, list(space.get("_P_VALUES", []))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=300)
    args = parser.parse_args(argv)
    torch_threads()
    bad = 0
    print(f"{args.seeds} seeds per answer; every check at level 1e-8\n")
    print("| stub | answer | runs | failed | check | smallest p | share p < 0.01 |")
    print("|---|---|---:|---:|---|---:|---:|")
    for slug, grades in STATISTICAL.items():
        for grade in grades:
            for label, source, right in _answers(slug, grade):
                start = time.perf_counter()
                failed, by_check = 0, defaultdict(list)
                seeds = args.seeds if right else min(args.seeds, 20)
                for seed in range(seeds):
                    passed, p_values = _run(slug, grade, source, seed)
                    failed += not passed
                    for what, p in p_values:
                        by_check[what].append(p)
                bad += failed if right else (failed < seeds)
                if not right:  # the power: one row, the smallest p-value of any check
                    least = min((min(ps), what) for what, ps in by_check.items()) if by_check else None
                    shown = f"{least[1]} | {least[0]:.1e} |" if least else "(rejected before the laws) | |"
                    print(f"| {grade} | {label} | {seeds} | {failed} | {shown} |")
                    continue
                for what, ps in sorted(by_check.items()):
                    share = sum(p < 0.01 for p in ps) / len(ps)
                    print(f"| {grade} | {label} | {seeds} | {failed} | {what} | {min(ps):.1e} | {share:.3f} |")
                print(f"<!-- {label}: {time.perf_counter() - start:.1f} s -->", file=sys.stderr)
    print(
        "\nA right answer must never fail (`failed` 0 over every seed); a mutant must fail on every seed. Each p-value"
        "\nis the check's: a right answer's are spread evenly over (0, 1], so about 1% fall below 0.01."
    )
    return 1 if bad else 0


def torch_threads() -> None:
    import torch

    torch.set_num_threads(1)


if __name__ == "__main__":
    sys.exit(main())
