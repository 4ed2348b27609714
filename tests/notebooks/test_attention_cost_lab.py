"""The attention-cost lab's own guarantees: its measured-exponent grade does not depend on the grader's noise, and its
benchmark writes a CSV and a plot that say where and when they were measured (D2L 11.6.2, lab)."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from autograder import assemble, mutants
from course import notebooks as nbs
from course.section import section

SLUG = "attention-cost-lab"
SECTION = section(SLUG)
ROOT = Path(__file__).resolve().parents[2]
GRADINGS = 10


def _cell(grade: str) -> str:
    for cell in nbs.read(nbs.BOOK / f"{SLUG}.md").cells:
        if nbs.grade_id(cell) == grade:
            return cell.source
    raise AssertionError(f"{SLUG} has no cell {grade}")


def _namespace(answer: str) -> dict:
    """A fresh notebook namespace: the locked setup cell, then ``answer`` in place of the measured_exponent stub."""
    namespace = {"__name__": "__main__"}
    exec(compile(_cell("setup"), "<setup>", "exec"), namespace)  # noqa: S102 (course code)
    exec(compile(answer, "<measured_exponent>", "exec"), namespace)  # noqa: S102
    return namespace


def _grade_repeatedly(answer: str) -> list[str | None]:
    """Run the hidden test of measured_exponent GRADINGS times; the error of each run, None when it passed."""
    hidden = assemble.hidden_tests(SLUG, "test_measured_exponent")
    code = compile(hidden, "<hidden test_measured_exponent>", "exec")
    outcomes = []
    for _ in range(GRADINGS):
        namespace = _namespace(answer)  # a fresh namespace per grading, as for a fresh kernel
        try:
            exec(code, namespace)  # noqa: S102
            outcomes.append(None)
        except AssertionError as err:
            outcomes.append(str(err).splitlines()[0])
    return outcomes


@pytest.mark.slow
def test_the_measured_exponent_grade_is_the_same_every_time():
    """The solution passes all 10 gradings and a linear-time sweep fails all 10: noise cannot flip the grade."""
    solution = assemble.fill_stubs(
        _cell("measured_exponent"), "measured_exponent", assemble.solutions_module(SLUG), markers=False
    )
    passed = _grade_repeatedly(solution)
    assert passed == [None] * GRADINGS, f"the solution failed some gradings: {passed}"
    linear = mutants.mutated_cell(SECTION, "measured_exponent", "single_query")
    failed = _grade_repeatedly(linear)
    assert all(f is not None for f in failed), f"the linear-time sweep passed some gradings: {failed}"
    assert all("exponent" in f for f in failed), f"it should fail on its exponent, every time: {failed}"


def test_benchmark_writes_a_csv_with_its_provenance_and_a_log_log_plot(tmp_path):
    """A tiny CPU run of benchmarks/attention_cost.py: every contender at every size, and a header that says where."""
    cmd = [sys.executable, str(ROOT / "benchmarks" / "attention_cost.py"), "--device", "cpu", "--out", str(tmp_path)]
    cmd += ["--ns", "32", "64", "--ds", "8", "16", "--fixed-n", "32", "--repeats", "1", "--no-memory"]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    csv_path, png_path = tmp_path / "attention_cost_cpu.csv", tmp_path / "attention_cost_cpu.png"
    assert csv_path.exists() and png_path.exists(), sorted(p.name for p in tmp_path.iterdir())
    assert png_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    lines = csv_path.read_text().splitlines()
    header = dict(line[2:].split(": ", 1) for line in lines if line.startswith("# "))
    for key in ("device", "device_type", "torch", "cuda_driver", "date", "clock"):
        assert key in header, f"the CSV header should say {key}: {header}"
    assert header["device_type"] == "cpu"
    rows = list(csv.DictReader(line for line in lines if not line.startswith("#")))
    names = {r["name"] for r in rows}
    assert {"ours (11.3)", "sdpa: math", "GRU", "Conv1d (k=3)"} <= names
    sweeps = {(r["vary"], r["name"]): [] for r in rows}
    for r in rows:
        sweeps[(r["vary"], r["name"])].append(int(r["n"] if r["vary"] == "n" else r["d"]))
    for (vary, name), sizes in sweeps.items():
        assert sizes == ([32, 64] if vary == "n" else [8, 16]), f"{vary} sweep of {name}: {sizes}"
    assert all(r["status"] == "ok" and float(r["time_ms"]) > 0 for r in rows), rows
