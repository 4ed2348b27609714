"""benchmarks/_common.py: the benchmarks' OpenMP wait policy, chosen before torch starts."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

COMMON = Path(__file__).resolve().parents[3] / "benchmarks" / "_common.py"
_spec = importlib.util.spec_from_file_location("benchmarks_common", COMMON)
_common = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_common)
choose_wait_policy, before_torch = _common.choose_wait_policy, _common.before_torch


def _clock(loads):
    """A fake 1-minute load that takes the next value at every sleep, and the sleeps made."""
    state = {"i": 0, "slept": []}

    def load():
        return loads[min(state["i"], len(loads) - 1)]

    def sleep(seconds):
        state["slept"].append(seconds)
        state["i"] += 1

    return load, sleep, state


def test_an_idle_machine_keeps_spinning_threads_and_waits_for_nothing(monkeypatch):
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    load, sleep, state = _clock([0.3])
    said = []
    assert choose_wait_policy(load=load, sleep=sleep, log=said.append) == "default"
    assert state["slept"] == [] and said == []
    assert "OMP_WAIT_POLICY" not in os.environ


def test_a_load_that_falls_is_waited_for_and_the_threads_keep_spinning(monkeypatch):
    """The trap this guards against: the load of a job that has just ended, which used to switch on PASSIVE."""
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    load, sleep, state = _clock([1.6, 1.3, 0.9])
    said = []
    assert choose_wait_policy(load=load, sleep=sleep, log=said.append, step=10) == "default"
    assert state["slept"] == [10, 10]
    assert len(said) == 2 and all("waiting for the machine to settle" in s for s in said)
    assert "OMP_WAIT_POLICY" not in os.environ


def test_a_machine_that_stays_busy_gets_sleeping_threads_after_the_longest_wait(monkeypatch):
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    load, sleep, state = _clock([3.0])
    said = []
    assert choose_wait_policy(30, step=10, load=load, sleep=sleep, log=said.append) == "PASSIVE"
    assert sum(state["slept"]) == 30
    assert "PASSIVE" in said[-1]
    assert os.environ["OMP_WAIT_POLICY"] == "PASSIVE"


def test_a_policy_in_the_environment_wins_and_nothing_waits(monkeypatch):
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    load, sleep, state = _clock([5.0])
    assert choose_wait_policy(load=load, sleep=sleep, log=lambda s: None) == "ACTIVE"
    assert state["slept"] == []


def test_bad_arguments_are_refused(monkeypatch):
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    with pytest.raises(ValueError, match="step > 0"):
        choose_wait_policy(step=0, load=lambda: 2.0, sleep=lambda s: None, log=lambda s: None)


def test_the_preamble_chooses_unless_asked_for_help(monkeypatch):
    chosen = []
    monkeypatch.setattr(_common, "choose_wait_policy", lambda: chosen.append(1))
    before_torch(["--help"])
    before_torch(["-h", "--seeds", "0"])
    assert chosen == []
    before_torch(["--seeds", "0"])
    assert chosen == [1]


def test_the_module_imports_no_torch():
    """It runs before torch starts its thread pool, so it must not start torch itself; the benchmarks import it
    as a script's neighbour (``from _common import before_torch``)."""
    code = "import sys; sys.path.insert(0, sys.argv[1]); import _common; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code, str(COMMON.parent)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
