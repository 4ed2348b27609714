"""What the timed benchmarks share: OpenMP's wait policy, chosen before torch starts.

``benchmarks/mt.py``, ``lm.py`` and ``vit.py`` call :func:`before_torch` before they import torch. PyTorch's CPU
threads come from OpenMP, whose idle threads spin by default: the fastest choice on an idle machine. On a busy one a
spinning thread waits for a partner that is not scheduled, and two-thread training of our small models runs several
times slower. ``OMP_WAIT_POLICY=PASSIVE`` makes idle threads sleep instead, which saves a busy machine but makes
those same models more than twice as slow on an idle one. The policy is read once, when torch starts its thread
pool, so :func:`choose_wait_policy` must run before ``import torch``; this module imports no torch.

The 1-minute load average lags: a job that ended seconds ago still counts. So the choice first waits for the load to
fall, and falls back to sleeping threads only when it does not.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable

__all__ = ["choose_wait_policy", "before_torch"]


def choose_wait_policy(
    max_wait: float = 150.0,
    *,
    busy: float = 1.0,
    step: float = 10.0,
    log: Callable[[str], None] = print,
    load: Callable[[], float] = lambda: os.getloadavg()[0],
    sleep: Callable[[float], None] = time.sleep,
) -> str:
    """Set ``OMP_WAIT_POLICY`` for this process and return the policy in force (``"default"`` when unset).

    An ``OMP_WAIT_POLICY`` already in the environment wins and nothing waits. Otherwise, while the 1-minute load is
    above ``busy``, wait in steps of ``step`` seconds, at most ``max_wait`` in all, saying so through ``log``; if the
    load is still above ``busy`` then, set ``PASSIVE`` and say so.
    """
    if "OMP_WAIT_POLICY" in os.environ:
        return os.environ["OMP_WAIT_POLICY"]
    if max_wait < 0 or step <= 0:
        raise ValueError(f"max_wait must be >= 0 and step > 0, got max_wait={max_wait!r}, step={step!r}")
    waited = 0.0
    while load() > busy and waited < max_wait:
        log(f"waiting for the machine to settle: 1-minute load {load():.2f} above {busy:g} ({waited:.0f} s so far)")
        sleep(step)
        waited += step
    if load() > busy:
        log(f"the machine is busy (1-minute load {load():.2f}): idle OpenMP threads sleep (OMP_WAIT_POLICY=PASSIVE)")
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
        return "PASSIVE"
    return "default"


def before_torch(argv=None) -> None:
    """The benchmarks' preamble, run before ``import torch``: :func:`choose_wait_policy`, unless the command line
    only asks for ``--help`` (which must not wait for the machine to settle)."""
    if not {"-h", "--help"} & set(sys.argv[1:] if argv is None else argv):
        choose_wait_policy()
