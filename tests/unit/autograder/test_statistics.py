"""The laws of random draws that hidden tests check distributions with (``autograder/sections/_shared.py``, issue
40): exact binomial tails, the chi-square law of the rows' spread, each check at level ``_ALPHA``; and the budget
that makes a right submission lose a point by chance less than once in a million gradings (at most 100 statistical
checks in the hidden tests of one notebook). ``benchmarks/false_alarms.py`` runs the right answers over many seeds."""

from __future__ import annotations

import ast
import math
import random
import types

import pytest
import torch

from course.section import sections

SHARED = "autograder/sections/_shared.py"
STATISTICAL = ("_rate_problem", "_spread_problem")
BUDGET = 1e-6


@pytest.fixture(scope="module")
def laws(request):
    space = {"checks": types.SimpleNamespace(trusted=torch)}
    path = request.config.rootpath / SHARED
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), space)
    return types.SimpleNamespace(**{k: v for k, v in space.items() if k.startswith("_")})


def test_binomial_tails_are_exact(laws):
    n, p = 12, 0.3
    pmf = [math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(n + 1)]
    for k in range(n + 1):
        low, high = laws._binom_tails(k, n, p)
        assert low == pytest.approx(sum(pmf[: k + 1]), rel=1e-12)
        assert high == pytest.approx(sum(pmf[k:]), rel=1e-12)


def test_chi_square_cdf_matches_its_closed_forms(laws):
    for x in (0.01, 0.5, 2.0, 7.0):
        assert laws._chi2_cdf(x, 2) == pytest.approx(1 - math.exp(-x / 2), rel=1e-12)  # two degrees: exponential
        assert laws._chi2_cdf(x, 1) == pytest.approx(math.erf(math.sqrt(x / 2)), rel=1e-12)  # one: a squared normal
    assert laws._chi2_cdf(63.33, 64) == pytest.approx(0.5, abs=2e-3)  # near the median


def test_a_rate_is_refused_only_far_from_its_probability(laws):
    assert laws._rate_problem(2592, 17280, 0.15, "chosen") is None  # exactly the expectation
    assert laws._rate_problem(2400, 17280, 0.15, "chosen") is None  # 4 standard deviations: not yet 1e-8
    problem = laws._rate_problem(2000, 17280, 0.15, "chosen")  # 11 standard deviations
    assert problem and "too few for probability 0.1500" in problem and "2000 of 17280" in problem
    assert laws._P_VALUES[-1][0] == "chosen" and laws._P_VALUES[-1][1] < 1e-20


def test_the_spread_tells_independent_draws_from_a_fixed_count(laws):
    rng = random.Random(5)
    totals = [270] * 64
    independent = [sum(rng.random() < 0.15 for _ in range(n)) for n in totals]
    assert laws._spread_problem(independent, totals, 0.15, "per row") is None
    fixed = [round(0.15 * n) for n in totals]  # the same mean, no spread
    assert "vary far less than independent draws" in laws._spread_problem(fixed, totals, 0.15, "per row")


def _statistical_checks(path) -> int:
    """How many statistical checks a hidden test file runs: each call of a law, times the length of the literal
    list a ``for`` around it walks; a call in any other loop cannot be counted, and fails."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    total = 0

    def visit(node, times):
        nonlocal total
        for child in ast.iter_child_nodes(node):
            inner = times
            if isinstance(child, ast.For | ast.While | ast.comprehension):
                literal = isinstance(child, ast.For) and isinstance(child.iter, ast.List | ast.Tuple)
                inner = times * len(child.iter.elts) if literal and times is not None else None
            if isinstance(child, ast.Call) and getattr(child.func, "id", "") in STATISTICAL:
                assert inner is not None, f"{path}: a statistical check in a loop of unwritten length"
                total += inner
            visit(child, inner)

    visit(tree, 1)
    return total


@pytest.mark.parametrize("sec", sections(), ids=lambda s: s.slug)
def test_a_right_submission_loses_a_point_by_chance_less_than_once_in_a_million(sec, laws):
    count = sum(_statistical_checks(path) for path in sec.hidden_tests().values())
    assert count * laws._ALPHA <= BUDGET, f"{sec.slug}: {count} statistical checks at {laws._ALPHA} exceed {BUDGET}"
