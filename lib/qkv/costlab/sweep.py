"""Sweeping sequence length and width, and fitting the power law t = c n^k (D2L 11.3 exercises, 11.6.2).

:func:`run_sweep` times each contender over a range of sizes with
:func:`qkv.timing.benchmark` and measures its peak memory, catching
out-of-memory per point; :func:`fit_sweep` fits ``t = c n^k`` by least squares
on log-log axes; :func:`achieved` sets measured FLOP/s beside the device's peak.
"""

from __future__ import annotations

import contextlib
import gc
import math
import time
from collections.abc import Callable, Sequence

import torch

from qkv import timing
from qkv.costlab.contenders import Contender
from qkv.costlab.device import one_thread, pick_device, quiet_stderr

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
