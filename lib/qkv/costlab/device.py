"""The lab's device: choosing CPU or GPU, saying which, and timing on it (D2L 11.3 exercises).

:class:`SimulatedGPU` is a pretend asynchronous device that shows, on a machine
without a GPU, why a timer must synchronise. :func:`peak_flops` measures what the
device can do with a large matrix product, the yardstick for achieved FLOP/s.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence

import torch

from qkv import timing

# ----------------------------------------------------------------------------- the device


def pick_device(prefer: str | None = None) -> torch.device:
    """The device of the lab: ``prefer`` if given, else CUDA when available, else the CPU (D2L 11.6.2, lab)."""
    if prefer is not None:
        device = torch.device(prefer)
        if device.type == "cuda" and not torch.cuda.is_available():
            raise ValueError("a CUDA device was asked for, but torch.cuda.is_available() is False: use 'cpu'")
        return device
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def announce_device(device: torch.device) -> str:
    """Print, and return, one line saying where the lab runs; loud when it falls back to the CPU (D2L 11.6.2, lab)."""
    device = torch.device(device)
    if device.type == "cuda":
        line = f"Running on the GPU: {torch.cuda.get_device_name(device)} (PyTorch {torch.__version__})."
    else:
        line = (
            f"NO GPU FOUND: falling back to the CPU ({os.cpu_count()} cores, PyTorch {torch.__version__}).\n"
            "The sweeps are smaller, and timed by the CPU time of one thread."
        )
    print(line)
    return line


class SimulatedGPU:
    """A pretend GPU that runs work asynchronously, to show (and test) what a correct timer does (D2L 11.6.2, lab).

    Time is simulated, so every measurement is exact. The host's clock
    advances only when it launches a kernel (``launch_ms`` per launch) or
    waits in :meth:`synchronize`; a launched kernel runs on the device after
    the work queued before it, while the host carries on. Each event is
    appended to ``log`` (``"launch"``, ``"sync"``, ``"clock"``), and
    ``unsynchronised_reads`` counts clock reads taken while work was still
    queued: a timer that reads the clock then has measured launches, not work.
    """

    def __init__(self, launch_ms: float = 0.01):
        if launch_ms < 0:
            raise ValueError(f"launch_ms must be >= 0, got {launch_ms}")
        self.launch_s = launch_ms / 1e3
        self.now = 0.0  # the host's clock, in seconds
        self.busy_until = 0.0  # when the device finishes the work queued so far
        self.log: list[str] = []
        self.unsynchronised_reads = 0

    @property
    def busy(self) -> bool:
        """Whether launched work is still running when the host looks now."""
        return self.busy_until > self.now

    def kernel(self, durations_ms: float | Sequence[float]) -> Callable:
        """A function whose every call launches one kernel; its work takes ``durations_ms`` (one number for every
        call, or one per call in order). The function accepts and ignores any arguments."""
        if isinstance(durations_ms, int | float):
            durations = None
            constant = float(durations_ms)
        else:
            durations, constant = [float(t) for t in durations_ms], None
        calls = [0]

        def launch(*args, **kwargs):
            if durations is not None and calls[0] >= len(durations):
                raise IndexError(f"this simulated kernel was given {len(durations)} durations but called again")
            work_s = (constant if durations is None else durations[calls[0]]) / 1e3
            calls[0] += 1
            self.log.append("launch")
            self.now += self.launch_s
            self.busy_until = max(self.busy_until, self.now) + work_s

        return launch

    def synchronize(self) -> None:
        """Wait until the device has finished all launched work (``torch.cuda.synchronize``)."""
        self.log.append("sync")
        self.now = max(self.now, self.busy_until)

    def clock(self) -> float:
        """The host's clock in seconds (``time.perf_counter``)."""
        self.log.append("clock")
        if self.busy:
            self.unsynchronised_reads += 1
        return self.now


@contextlib.contextmanager
def one_thread() -> Iterator[Callable[[], float]]:
    """Run PyTorch on one CPU thread and yield ``time.thread_time``, the CPU time of this thread (D2L 11.6.2, lab).

    On a shared machine the wall clock counts the time other programs hold
    the cores; the CPU time of the one thread doing the work does not, so a
    sweep timed this way gives the same exponent on a busy machine as on an
    idle one. (It is the right clock only for work on this one thread.)
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield time.thread_time
    finally:
        torch.set_num_threads(threads)


@contextlib.contextmanager
def lab_clock(device) -> Iterator[Callable[[], float]]:
    """Yield the clock the lab times ``device`` with (D2L 11.6.2, lab): on the CPU, the CPU time of one thread
    (:func:`one_thread`); on a GPU, ``time.perf_counter``, for which :func:`qkv.timing.benchmark` substitutes CUDA
    events."""
    if torch.device(device).type == "cpu":
        with one_thread() as clock:
            yield clock
    else:
        yield time.perf_counter


@contextlib.contextmanager
def quiet_stderr() -> Iterator[None]:
    """Send the C++ library's own writes to stderr (the profiler's start/stop lines) to /dev/null (D2L 11.6.2, lab)."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no real file descriptor 2 (some embedded interpreters)
        yield
        return
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def device_memory_bytes(device) -> int:
    """The memory a sweep can use on ``device``: the GPU's, or the machine's physical RAM (D2L 11.6.2, lab)."""
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).total_memory
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not a POSIX system: say 16 GiB
        return 16 * 2**30


def peak_flops(device, dtype: torch.dtype = torch.float32) -> float:
    """A practical peak of ``device`` (D2L 11.6.2, lab): the FLOP/s of a large matrix product
    (:func:`qkv.timing.matmul_peak_flops`), timed as :func:`run_sweep` times on that device (CUDA events; on the
    CPU, one thread and its CPU time)."""
    device = torch.device(device)
    if device.type == "cuda":
        return timing.matmul_peak_flops(n=8192, device=device, dtype=dtype, warmup=3, repeats=10)
    with one_thread() as clock:
        return timing.matmul_peak_flops(n=1024, device=device, dtype=dtype, warmup=2, repeats=5, clock=clock)
