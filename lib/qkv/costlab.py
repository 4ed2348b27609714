"""The attention-cost lab: sweeps, baselines and pictures for measuring attention (D2L 11.3 exercises, 11.6.2).

D2L 11.6.2 compares self-attention, a recurrent network and a convolution on
paper: O(n^2 d) operations for self-attention against O(n d^2) for an RNN and
O(k n d^2) for a CNN. The lab measures them. A :class:`Contender` is one way
of processing a sequence of ``n`` tokens of width ``d``: the course's
materialising :class:`~qkv.attention.DotProductAttention`, PyTorch's
``scaled_dot_product_attention`` with one chosen backend (math, flash,
memory-efficient), a GRU, a 1-D convolution. :func:`run_sweep` times each over
a range of sizes with :func:`qkv.timing.benchmark` and measures its peak
memory, catching out-of-memory per point; :func:`fit_sweep` fits ``t = c n^k``;
:func:`plot_sweep` draws the log-log picture; :func:`write_results` and
:func:`read_results` keep a sweep in a CSV with where and when it was measured.
:class:`SimulatedGPU` is a pretend asynchronous device that shows, on a machine
without a GPU, why a timer must synchronise.
Shape letters are those of the glossary in :mod:`qkv` (T: tokens, here ``n``).
"""

from __future__ import annotations

import contextlib
import csv
import gc
import math
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import torch
from torch import nn
from torch.nn import functional as F

from qkv import timing
from qkv.attention import DotProductAttention

__all__ = [
    "RESULTS_DIR",
    "SimulatedGPU",
    "Contender",
    "pick_device",
    "announce_device",
    "one_thread",
    "lab_clock",
    "quiet_stderr",
    "sdpa_backends",
    "contenders",
    "run_sweep",
    "fit_sweep",
    "plot_sweep",
    "sweep_figure",
    "write_results",
    "read_results",
    "show_results",
    "print_table",
    "print_pivot",
    "device_memory_bytes",
    "peak_flops",
    "achieved",
    "cost_glance",
]

#: Where ``benchmarks/attention_cost.py`` writes its CSVs and plots (in a checkout of the repository).
RESULTS_DIR = Path(__file__).resolve().parents[2] / "benchmarks" / "results"

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


# ----------------------------------------------------------------------------- the contenders

try:  # PyTorch >= 2.3
    from torch.nn.attention import SDPBackend, sdpa_kernel
except ImportError:  # pragma: no cover - older PyTorch: only the math path is measured
    SDPBackend = sdpa_kernel = None

SDPA_BACKENDS = {"math": "MATH", "flash": "FLASH_ATTENTION", "memory-efficient": "EFFICIENT_ATTENTION"}


@dataclass(frozen=True)
class Contender:
    """One way to process a sequence of ``n`` tokens of width ``d`` (D2L 11.6.2).

    ``setup(batch, n, d)`` builds the module and inputs and returns
    ``(fn, args)``, so that ``fn(*args)`` is the timed call; ``flops(batch, n,
    d)`` counts its floating-point operations (a multiply-add is 2).
    ``family`` is its row of D2L's table: "self-attention", "RNN" or "CNN".
    """

    name: str
    family: str
    setup: Callable[[int, int, int], tuple[Callable, tuple]]
    flops: Callable[[int, int, int], int]


def _attention_flops(batch: int, n: int, d: int) -> int:
    return timing.attention_flops(n, n, d, batch=batch)["total"]


def _sdpa_call(backend_name: str) -> Callable:
    backend = getattr(SDPBackend, SDPA_BACKENDS[backend_name])

    def call(queries, keys, values):
        with sdpa_kernel(backend):
            return F.scaled_dot_product_attention(queries, keys, values)  # (B, 1, T, d) -> (B, 1, T, d)

    return call


def sdpa_backends(device, dtype: torch.dtype = torch.float32, d: int = 64) -> dict[str, str | None]:
    """Which of PyTorch's attention backends run here (D2L 11.6.2, lab): name -> None, or the reason it does not.

    Each backend is tried on a tiny input of this device, dtype and head size;
    the flash and memory-efficient kernels need a GPU for most dtypes (PyTorch
    has a CPU flash kernel; the memory-efficient one is CUDA only), and flash
    on a GPU needs float16 or bfloat16.
    """
    device = torch.device(device)
    if sdpa_kernel is None:
        return {name: "this PyTorch has no torch.nn.attention.sdpa_kernel" for name in SDPA_BACKENDS}
    q = torch.randn(1, 1, 8, d, device=device, dtype=dtype)  # (B, 1, T, d)
    found = {}
    for name in SDPA_BACKENDS:
        try:
            with torch.inference_mode(), quiet_stderr(), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a refused backend also warns why, before it raises
                _sdpa_call(name)(q, q, q)
            found[name] = None
        except RuntimeError as err:
            found[name] = str(err).strip().splitlines()[0][:200] or type(err).__name__
    return found


def contenders(device, dtype: torch.dtype = torch.float32, kernel_size: int = 3) -> list[Contender]:
    """The lab's contenders that run on ``device`` with ``dtype`` (D2L 11.3.2, 11.6.2).

    ``ours (11.3)`` is :class:`qkv.attention.DotProductAttention`, which
    materialises the (B, T, T) scores; ``sdpa: <backend>`` is
    ``torch.nn.functional.scaled_dot_product_attention`` held to one backend
    with ``sdpa_kernel`` (only the backends :func:`sdpa_backends` finds);
    ``GRU`` is a one-layer ``nn.GRU`` of width d, and ``Conv1d`` a 1-D
    convolution of width d with ``kernel_size`` taps. Weights and inputs are
    random normal numbers: the cost does not depend on their values.
    """
    device = torch.device(device)

    def normal(*shape):
        return torch.randn(*shape, device=device, dtype=dtype)

    def ours(batch, n, d):
        return DotProductAttention().eval(), (normal(batch, n, d), normal(batch, n, d), normal(batch, n, d))

    def sdpa(name):
        def setup(batch, n, d):
            return _sdpa_call(name), tuple(normal(batch, 1, n, d) for _ in range(3))  # (B, 1, T, d): one head

        return setup

    def gru(batch, n, d):
        return nn.GRU(d, d, batch_first=True).to(device, dtype).eval(), (normal(batch, n, d),)  # (B, T, d)

    def conv(batch, n, d):
        layer = nn.Conv1d(d, d, kernel_size, padding=kernel_size // 2).to(device, dtype).eval()
        return layer, (normal(batch, d, n),)  # (B, d, T): channels first

    found = [Contender("ours (11.3)", "self-attention", ours, _attention_flops)]
    for name, reason in sdpa_backends(device, dtype).items():
        if reason is None:
            found.append(Contender(f"sdpa: {name}", "self-attention", sdpa(name), _attention_flops))
    # A GRU step: three gates, each W x + U h with (d, d) matrices: 6 d^2 multiply-adds per token.
    found.append(Contender("GRU", "RNN", gru, lambda b, n, d: 12 * b * n * d * d))
    found.append(Contender(f"Conv1d (k={kernel_size})", "CNN", conv, lambda b, n, d: 2 * kernel_size * b * n * d * d))
    return found


# ----------------------------------------------------------------------------- the sweep

FIELDS = ["vary", "name", "family", "batch", "n", "d", "dtype", "time_ms", "peak_bytes", "flops", "status"]


def _is_oom(err: BaseException) -> bool:
    if isinstance(err, torch.cuda.OutOfMemoryError | MemoryError):
        return True
    text = str(err).lower()
    return "out of memory" in text or "can't allocate memory" in text or "not enough memory" in text


def _free(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def run_sweep(
    candidates: Sequence[Contender],
    n: int | Sequence[int],
    d: int | Sequence[int],
    batch: int = 1,
    *,
    device=None,
    warmup: int = 1,
    repeats: int = 5,
    memory: bool = True,
    clock: str = "auto",
    max_point_s: float | None = None,
    deadline: float | None = None,
    progress: Callable[[dict], None] | None = None,
) -> list[dict]:
    """Time (and measure the peak memory of) each contender at each size; one row per point (D2L 11.6.2, lab).

    Exactly one of ``n`` and ``d`` is a sequence: the sizes to sweep; the
    other is fixed. Each point calls :func:`qkv.timing.benchmark` (``warmup``
    untimed calls, the median of ``repeats``) and :func:`qkv.timing.peak_memory`.
    ``clock``: on a CUDA device "auto" times with CUDA events; on the CPU
    "auto" or "thread" runs PyTorch on one thread timed by its CPU time
    (:func:`one_thread`), "wall" uses ``time.perf_counter`` and all threads.

    Each row holds ``vary`` ("n" or "d"), ``name``, ``family``, ``batch``,
    ``n``, ``d``, ``dtype``, ``time_ms``, ``peak_bytes``, ``flops`` and
    ``status``: "ok"; "oom" (out of memory at this size, after which larger
    sizes of that contender are "skipped"); "skipped" (larger than a size
    that ran out of memory or took longer than ``max_point_s`` seconds, or
    any point once ``time.perf_counter()`` has passed ``deadline``); or
    "error: ..." with the first line of the message (a backend that refuses
    this size, say). ``progress(row)`` is called after each point.
    """
    if isinstance(n, int) == isinstance(d, int):
        raise ValueError("give one of n and d as a list of sizes to sweep and the other as one fixed size")
    vary, sizes = ("d", list(d)) if isinstance(n, int) else ("n", list(n))
    if not sizes or any(not isinstance(s, int) or s < 1 for s in sizes):
        raise ValueError(f"the sizes to sweep must be positive integers, got {sizes}")
    if clock not in ("auto", "thread", "wall"):
        raise ValueError(f"clock must be 'auto', 'thread' or 'wall', got {clock!r}")
    device = pick_device() if device is None else torch.device(device)
    use_thread_clock = device.type == "cpu" and clock in ("auto", "thread")
    rows = []
    with contextlib.ExitStack() as stack:
        timer = stack.enter_context(one_thread()) if use_thread_clock else time.perf_counter
        stack.enter_context(torch.inference_mode())
        for contender in candidates:
            stop = None
            for size in sorted(sizes):
                n_, d_ = (size, d) if vary == "n" else (n, size)
                row = dict(vary=vary, name=contender.name, family=contender.family, batch=batch, n=n_, d=d_)
                row.update(flops=contender.flops(batch, n_, d_), time_ms=math.nan, peak_bytes=math.nan)
                if stop is not None or (deadline is not None and time.perf_counter() > deadline):
                    row.update(status="skipped", dtype="")
                else:
                    row.update(_measure(contender, batch, n_, d_, device, warmup, repeats, memory, timer))
                    if row["status"] == "oom":
                        stop = "oom"
                    elif max_point_s is not None and row["time_ms"] * (warmup + repeats) / 1e3 > max_point_s:
                        stop = "slow"
                rows.append(row)
                if progress is not None:
                    progress(row)
    return rows


def _measure(contender, batch, n, d, device, warmup, repeats, memory, timer) -> dict:
    out, failure = {"dtype": ""}, None
    try:
        fn, args = contender.setup(batch, n, d)
        out["dtype"] = str(args[0].dtype).replace("torch.", "")
        t = timing.benchmark(fn, *args, warmup=warmup, repeats=repeats, device=device, clock=timer)
        out["time_ms"] = t.median_ms
        if memory:
            with quiet_stderr():
                out["peak_bytes"] = timing.peak_memory(fn, *args, device=device)
        out["status"] = "ok"
    except (RuntimeError, MemoryError) as err:  # out of memory, or a kernel that refuses these sizes
        failure = err
    fn = args = None  # drop the tensors before freeing the cache
    if failure is not None:
        oom = _is_oom(failure)
        out["status"] = "oom" if oom else "error: " + (str(failure).strip().splitlines() or ["?"])[0][:160]
        failure = None  # the traceback holds the frames, and so the tensors, of the failed call
        _free(device)
    elif device.type == "cuda":
        torch.cuda.empty_cache()  # give the next size the whole memory (a full gc.collect costs 0.1 s or more)
    return out


def fit_sweep(rows: Sequence[dict], value: str = "time_ms", tail: int | None = None) -> dict[str, tuple]:
    """Fit ``value = c * size^k`` per contender over its successful points (D2L 11.6.2, lab).

    Returns a dict: name -> (c, k, the sizes used).

    The size is ``n`` or ``d``, whichever the rows vary. Small sizes are
    dominated by fixed overheads (Python, kernel launches), so by default the
    fit uses only the larger half of the points, and at least 3 when there are
    that many (``tail`` sets the number). Contenders with fewer than two usable
    points are left out.
    """
    fits = {}
    for name in dict.fromkeys(r["name"] for r in rows):
        pts = [r for r in rows if r["name"] == name and r["status"] == "ok" and _positive(r[value])]
        if len(pts) < 2:
            continue
        key = pts[0]["vary"]
        pts.sort(key=lambda r: r[key])
        keep = tail if tail is not None else max(min(3, len(pts)), (len(pts) + 1) // 2)
        pts = pts[-keep:]
        sizes = [r[key] for r in pts]
        if len(set(sizes)) < 2:
            continue
        c, k = timing.fit_power_law(sizes, [float(r[value]) for r in pts])
        fits[name] = (c, k, sizes)
    return fits


def _positive(x) -> bool:
    try:
        return math.isfinite(float(x)) and float(x) > 0
    except (TypeError, ValueError):
        return False


_LABELS = {
    "time_ms": "time per call (ms)",
    "peak_bytes": "peak memory (bytes)",
    "flops": "FLOPs",
    "flop_per_s": "achieved FLOP/s",
}


def plot_sweep(rows: Sequence[dict], value: str = "time_ms", ax=None, fit: bool = True, title: str | None = None):
    """Draw ``value`` against the swept size on log-log axes, one line per contender, with the fitted exponent
    in the legend and the fitted line dashed over the points it used. Returns the axes (D2L 11.6.2, lab)."""
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 3.6))
    fits = fit_sweep(rows, value) if fit else {}
    styles = {"self-attention": "-", "RNN": "--", "CNN": ":"}
    key = rows[0]["vary"] if rows else "n"
    for i, name in enumerate(dict.fromkeys(r["name"] for r in rows)):
        pts = sorted((r for r in rows if r["name"] == name), key=lambda r: r[key])
        ok = [r for r in pts if r["status"] == "ok" and _positive(r[value])]
        if not ok:
            continue
        label = name + (f"  (k = {fits[name][1]:.2f})" if name in fits else "")
        color = f"C{i}"
        ax.plot([r[key] for r in ok], [float(r[value]) for r in ok], styles.get(ok[0]["family"], "-"), marker="o",
                ms=3.5, color=color, label=label)  # fmt: skip
        if name in fits:
            c, k, sizes = fits[name]
            ax.plot(sizes, [c * s**k for s in sizes], color=color, lw=4, alpha=0.2)
        oom = [r for r in pts if r["status"] == "oom"]
        if oom:
            ax.plot([oom[0][key]], [float(ok[-1][value])], "x", color=color, ms=8)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("sequence length n" if key == "n" else "width d")
    ax.set_ylabel(_LABELS.get(value, value))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    if title:
        ax.set_title(title, fontsize=9)
    return ax


def sweep_figure(rows: Sequence[dict], title: str | None = None, ncols: int | None = None):
    """The lab's summary picture: time and peak memory against n, and time against d (those that were swept),
    in one row of panels, or in rows of ``ncols`` (D2L 11.6.2, lab)."""
    panels = [(v, val) for v in ("n", "d") for val in ("time_ms", "peak_bytes") if (v, val) != ("d", "peak_bytes")]
    panels = [(v, val) for v, val in panels if any(r["vary"] == v and r["status"] == "ok" for r in rows)]
    ncols = max(1, min(ncols or len(panels), len(panels)))
    nrows = max(1, math.ceil(len(panels) / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(5 * ncols, 3.8 * nrows), squeeze=False)
    for ax in axes.flat[len(panels) :]:
        ax.axis("off")
    for ax, (v, val) in zip(axes.flat, panels):
        part = [r for r in rows if r["vary"] == v]
        fixed = f"d = {part[0]['d']}" if v == "n" else f"n = {part[0]['n']}"
        plot_sweep(part, val, ax=ax, title=f"{_LABELS[val]}, {fixed}, batch {part[0]['batch']}")
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------- results on disk


def write_results(rows: Sequence[dict], path, info: dict | None = None) -> Path:
    """Write the rows of a sweep to a CSV whose first lines, starting with ``#``, say where and when it was
    measured (``info``, by default :func:`qkv.timing.device_info`) (D2L 11.6.2, lab)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    info = timing.device_info() if info is None else info
    with path.open("w", newline="", encoding="utf-8") as f:
        for key, value in info.items():
            f.write(f"# {key}: {value}\n")
        writer = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return path


def read_results(path) -> tuple[dict, list[dict]]:
    """Read a CSV of :func:`write_results`: ``(info, rows)`` with numbers as ints and floats again (D2L 11.6.2, lab)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no results file {path}: run benchmarks/attention_cost.py to make one")
    info, body = {}, []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# ") and ":" in line and not body:
            key, _, value = line[2:].partition(":")
            info[key.strip()] = value.strip()
        elif line.strip():
            body.append(line)
    rows = []
    for row in csv.DictReader(body):
        for key in ("batch", "n", "d", "flops"):
            row[key] = int(row[key])
        for key in ("time_ms", "peak_bytes"):
            row[key] = float(row[key]) if row[key] not in ("", "nan") else math.nan
        rows.append(row)
    return info, rows


def show_results(folder=None, pattern: str = "attention_cost_*.csv") -> list:
    """Plot every committed result CSV in ``folder`` (default :data:`RESULTS_DIR`), saying where and when each
    was measured; returns the figures (none, with a message, when there are no results) (D2L 11.6.2, lab)."""
    folder = RESULTS_DIR if folder is None else Path(folder)
    files = sorted(folder.glob(pattern)) if folder.is_dir() else []
    if not files:
        print(f"No measured results in {folder}: run `python benchmarks/attention_cost.py` to make some.")
        return []
    figures = []
    for path in files:
        info, rows = read_results(path)
        where = f"{info.get('device', '?')} ({info.get('device_type', '?')})"
        versions = f"PyTorch {info.get('torch', '?')}"
        if info.get("device_type") == "cuda":
            versions += f", CUDA {info.get('cuda_runtime', '?')}, driver {info.get('cuda_driver', '?')}"
        print(f"{path.name}: measured on {where},\n  {versions}, on {info.get('date', '?')},\n"
              f"  timed by {info.get('clock', '?')}")  # fmt: skip
        title = f"{info.get('device', '?')}, {info.get('date', '?')[:10]}"
        figures.append(sweep_figure(rows, title=title, ncols=2))
    return figures


def print_table(rows: Sequence[dict], columns: Sequence[str], formats: dict | None = None) -> None:
    """Print ``rows`` (dicts) as an aligned table of ``columns`` (D2L 11.6.2, lab); ``formats``: column -> format."""
    formats = formats or {}
    cells = [[format(r[c], formats.get(c, "")) if r[c] is not None else "-" for c in columns] for r in rows]
    widths = [max(len(c), *(len(line[i]) for line in cells)) for i, c in enumerate(columns)]
    print("  ".join(c.rjust(w) for c, w in zip(columns, widths)))
    for line in cells:
        print("  ".join(x.rjust(w) for x, w in zip(line, widths)))


def print_pivot(rows: Sequence[dict], value: str = "time_ms", fmt: str = ".3g") -> None:
    """Print ``value`` with one line per contender and one column per swept size (D2L 11.6.2, lab)."""
    if not rows:
        print("(no rows)")
        return
    key = rows[0]["vary"]
    sizes = sorted({r[key] for r in rows})
    table = []
    for name in dict.fromkeys(r["name"] for r in rows):
        line = {"": name}
        for r in rows:
            if r["name"] == name:
                line[f"{key}={r[key]}"] = format(float(r[value]), fmt) if r["status"] == "ok" else r["status"][:7]
        table.append(line)
    columns = ["", *(f"{key}={s}" for s in sizes)]
    print_table([{c: line.get(c, "-") for c in columns} for line in table], columns)


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


def achieved(rows: Sequence[dict], peak: float) -> list[dict]:
    """For each contender, its largest successful point (D2L 11.6.2, lab): FLOPs, time, achieved FLOP/s and its
    fraction of ``peak``."""
    out = []
    for name in dict.fromkeys(r["name"] for r in rows):
        ok = [r for r in rows if r["name"] == name and r["status"] == "ok" and _positive(r["time_ms"])]
        if not ok:
            continue
        r = max(ok, key=lambda r: (r["n"], r["d"]))
        rate = r["flops"] / (float(r["time_ms"]) / 1e3)
        out.append(dict(name=name, n=r["n"], d=r["d"], flops=r["flops"], time_ms=float(r["time_ms"]),
                        flop_per_s=rate, of_peak=rate / peak))  # fmt: skip
    return out


# ----------------------------------------------------------------------------- at a glance


def cost_glance():
    """The lab at a glance: self-attention fills an n x n table of scores in one parallel step; an RNN walks
    the n tokens one after another; on log-log axes their costs are lines of slope 2 and 1 (D2L 11.6.2)."""
    from matplotlib.patches import FancyArrowPatch, Rectangle

    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.0), gridspec_kw={"width_ratios": [1.45, 1]})
    left.set_xlim(0, 10)
    left.set_ylim(0.8, 6.1)
    left.set_aspect("equal")
    left.axis("off")
    m = 6
    for i in range(m):
        for j in range(m):
            left.add_patch(Rectangle((0.4 + 0.5 * j, 4.9 - 0.5 * i), 0.5, 0.5, fc="#cfe3ff", ec="0.4", lw=0.6))
    left.text(1.9, 5.65, "self-attention", ha="center", fontsize=10, weight="bold")
    left.text(1.9, 1.45, "n x n scores, all at once\n$O(n^2 d)$ FLOPs, $O(1)$ steps", ha="center", fontsize=8.5)
    left.text(7.0, 5.65, "RNN", ha="center", fontsize=10, weight="bold")
    for i in range(m):
        x = 4.6 + i * 0.85
        left.add_patch(Rectangle((x, 3.3), 0.6, 0.6, fc="#ffe2b8", ec="0.4", lw=0.6))
        if i:
            left.add_patch(FancyArrowPatch((x - 0.25, 3.6), (x, 3.6), arrowstyle="-|>", mutation_scale=8, lw=0.8))
    left.text(7.0, 1.45, "one token after another\n$O(n d^2)$ FLOPs, $O(n)$ steps", ha="center", fontsize=8.5)
    ns = [2.0**p for p in range(7, 15)]
    right.loglog(ns, [(n / ns[0]) ** 2 for n in ns], "-", color="C0", label="slope 2: attention")
    right.loglog(ns, [n / ns[0] for n in ns], "--", color="C1", label="slope 1: RNN, CNN")
    right.set_xlabel("sequence length n")
    right.set_ylabel("cost (relative)")
    right.set_title("measure, then fit $t = c\\,n^k$", fontsize=9)
    right.grid(True, which="both", alpha=0.3)
    right.legend(fontsize=8)
    fig.tight_layout()
    return fig
