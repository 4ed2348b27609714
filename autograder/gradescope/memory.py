"""How much memory grading one submission takes on Gradescope's path, per section, and the container that needs.

``memory.toml`` beside this module holds what ``benchmarks/gradescope_chroot.py`` measured: for each section, the
peak memory of ``run_autograder`` grading its solved notebook in a fresh Debian root, without bubblewrap as on
Gradescope (the cgroup's peak, every process of the grading included; the benchmark's note,
``benchmarks/results/gradescope_chroot.md``, says how). ``make gradescope`` writes the container a section needs
into its zip (``gradescope.json``'s ``container_mb``, and the zip's README.md), and ``run_autograder`` warns in its
log when the container has less.
"""

from __future__ import annotations

import functools
import math
import tomllib
from pathlib import Path

FILE = Path(__file__).with_name("memory.toml")
#: Gradescope's default memory for an autograder's container (its documentation: "Our default memory limit is
#: 768MB"); more is set in the assignment's Autograder Settings.
DEFAULT_MB = 768
#: Room above the measured peak: a student's answer may allocate more than the reference does.
HEADROOM = 1.25
#: What the recommendation is rounded up to.
STEP_MB = 256


@functools.cache
def measured() -> dict[str, dict]:
    """``{slug: {"peak_mib": float, "measured": str}}`` from :data:`FILE`."""
    data = tomllib.loads(FILE.read_text(encoding="utf-8")) if FILE.exists() else {}
    return data.get("sections", {})


def peak_mib(slug: str) -> float | None:
    """The measured peak of grading one submission of the section (MiB), None where it was not measured."""
    found = measured().get(slug)
    return float(found["peak_mib"]) if found else None


def container_mb(slug: str) -> int:
    """The memory (MB, as Gradescope's settings say it) the section's container needs: the measured peak with
    :data:`HEADROOM`, rounded up to :data:`STEP_MB`, and never less than Gradescope's default; the default where
    nothing was measured."""
    peak = peak_mib(slug)
    return DEFAULT_MB if peak is None else container_for(peak)


def container_for(peak: float) -> int:
    """The container (MB) for a measured peak of ``peak`` MiB: with :data:`HEADROOM`, rounded up to
    :data:`STEP_MB`, at least :data:`DEFAULT_MB`."""
    needed = peak * 2**20 / 10**6 * HEADROOM
    return max(DEFAULT_MB, math.ceil(needed / STEP_MB) * STEP_MB)
