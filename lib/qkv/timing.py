"""Measuring and counting the cost of attention (D2L 11.3 exercises, 11.6.2 complexity table).

Two halves. Counting: :func:`attention_flops` and :func:`attention_bytes` give
the arithmetic and the memory traffic of one scaled dot-product attention
(D2L 11.3.3) from its sizes alone, so they are exact and easy to grade.
Measuring: :func:`benchmark` times a function correctly (warm-up calls, then
repeats, synchronising the device before every clock read, or CUDA events),
:func:`peak_memory` measures the peak allocation of one call, and
:func:`fit_power_law` turns a sweep of times into the exponent ``k`` of
``t = c n^k``, which D2L 11.6.2 predicts to be 2 for self-attention in the
sequence length. The clock and the synchronisation are arguments, so a test
can replace them by fakes that record the order of calls.
Shape letters are those of the glossary in :mod:`qkv`.
"""

from __future__ import annotations

import datetime
import math
import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

__all__ = [
    "Timing",
    "benchmark",
    "peak_memory",
    "attention_flops",
    "attention_bytes",
    "fit_power_law",
    "matmul_peak_flops",
    "device_info",
]


@dataclass(frozen=True)
class Timing:
    """Result of :func:`benchmark`: the median and every timed repeat, in milliseconds (D2L 11.6.2)."""

    median_ms: float
    times_ms: list[float]
    warmup: int
    repeats: int
    device: str

    @property
    def min_ms(self) -> float:
        return min(self.times_ms)

    @property
    def mean_ms(self) -> float:
        return statistics.fmean(self.times_ms)


def _infer_device(device, args) -> torch.device:
    if device is not None:
        return torch.device(device)
    for a in args:
        if isinstance(a, torch.Tensor):
            return a.device
    return torch.device("cpu")


def _default_synchronize(device: torch.device) -> Callable[[], None]:
    """Wait for the device's queued work: CUDA and MPS run asynchronously; the CPU needs nothing."""
    if device.type == "cuda":
        return lambda: torch.cuda.synchronize(device)
    if device.type == "mps":
        return torch.mps.synchronize
    return lambda: None


def benchmark(
    fn: Callable,
    *args,
    warmup: int = 3,
    repeats: int = 10,
    device=None,
    use_cuda_events: bool | None = None,
    clock: Callable[[], float] = time.perf_counter,
    synchronize: Callable[[], None] | None = None,
) -> Timing:
    """Time ``fn(*args)``: ``warmup`` untimed calls, then ``repeats`` timed ones (D2L 11.6.2, exercise).

    The course's timer, the one the attention-cost lab has students write (its exercise ``time_fn``, where the
    page explains why a GPU needs it): no clock is read while the device still has work queued, and the warm-up
    calls pay one-off costs (memory allocation, kernel selection, caches) outside the timing.

    Args:
        fn, args: the function and its positional arguments.
        warmup, repeats: untimed and timed calls (repeats >= 1).
        device: where ``fn`` runs; None takes the device of the first tensor
            argument, else the CPU.
        use_cuda_events: time on the GPU with ``torch.cuda.Event`` pairs instead
            of the host clock. None means: events on a CUDA device unless a
            ``clock`` or ``synchronize`` was passed, in which case those are used.
        clock: a function returning seconds (``time.perf_counter`` by default).
        synchronize: called before every clock read; None means the device's
            own (``torch.cuda.synchronize`` on CUDA, nothing on the CPU).

    Returns:
        A :class:`Timing` whose ``times_ms`` are the repeats in order and whose
        ``median_ms`` is their median, robust to the odd slow repeat.
    """
    if not callable(fn):
        raise TypeError(f"benchmark needs a function to call, got {type(fn).__name__}")
    if not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"warmup must be an integer >= 0, got {warmup!r}")
    if not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be an integer >= 1, got {repeats!r}")
    device = _infer_device(device, args)
    if use_cuda_events is None:
        use_cuda_events = device.type == "cuda" and clock is time.perf_counter and synchronize is None
    if use_cuda_events and device.type != "cuda":
        raise ValueError(f"CUDA events time CUDA work only; the device is {device}. Use use_cuda_events=False")
    sync = synchronize if synchronize is not None else _default_synchronize(device)
    for _ in range(warmup):
        fn(*args)
    times_ms = []
    if use_cuda_events:
        sync()
        for _ in range(repeats):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn(*args)
            end.record()
            end.synchronize()
            times_ms.append(start.elapsed_time(end))
    else:
        for _ in range(repeats):
            sync()
            t0 = clock()
            fn(*args)
            sync()
            t1 = clock()
            times_ms.append((t1 - t0) * 1e3)
    return Timing(statistics.median(times_ms), times_ms, warmup, repeats, str(device))


def _cpu_peak_bytes(fn: Callable, args) -> int:
    """Peak of the running total of CPU allocations minus frees seen by the PyTorch profiler during one call."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn(*args)
    try:
        events = prof.profiler.kineto_results.events()
    except AttributeError as err:  # a private attribute: say so clearly if a future PyTorch drops it
        raise RuntimeError("this PyTorch's profiler does not expose its memory records; use a CUDA device") from err
    records = sorted(
        (e.start_ns(), e.nbytes()) for e in events if e.name() == "[memory]" and e.device_type().name == "CPU"
    )
    live = peak = 0
    for _, nbytes in records:
        live += nbytes
        peak = max(peak, live)
    return peak


def peak_memory(fn: Callable, *args, device=None) -> int:
    """Peak bytes of tensor memory that one call ``fn(*args)`` allocates beyond what was live before (D2L 11.6.2).

    On CUDA: the peak of ``torch.cuda.max_memory_allocated`` after
    ``reset_peak_memory_stats``, minus the bytes allocated before the call.
    On the CPU PyTorch keeps no allocator statistics, and ``tracemalloc`` does
    not see tensor storage, so the call runs under ``torch.profiler`` with
    ``profile_memory=True`` and the answer is the peak of the running sum of
    the recorded CPU allocations and frees. Both count tensor storage only (not
    Python objects); allocator rounding makes them slightly above ``numel *
    element_size``. The profiler slows the call down but does not change its
    allocations. ``device`` as in :func:`benchmark`.
    """
    if not callable(fn):
        raise TypeError(f"peak_memory needs a function to call, got {type(fn).__name__}")
    device = _infer_device(device, args)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        before = torch.cuda.memory_allocated(device)
        fn(*args)
        torch.cuda.synchronize(device)
        return int(torch.cuda.max_memory_allocated(device) - before)
    if device.type == "cpu":
        return _cpu_peak_bytes(fn, args)
    raise ValueError(f"peak_memory measures 'cpu' or 'cuda' devices, got {device}")


def _check_sizes(**sizes) -> None:
    for name, value in sizes.items():
        if not isinstance(value, int | np.integer) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")


def attention_flops(n_q: int, n_k: int, d: int, d_v: int | None = None, batch: int = 1) -> dict[str, int]:
    """Floating-point operations of one scaled dot-product attention (D2L 11.3.3, 11.6.2).

    Convention: a multiply-add counts as 2 FLOPs (as ``torch.utils.flop_counter``
    counts matmuls), and every other elementwise operation as 1. With B =
    ``batch``, Q = ``n_q``, K = ``n_k``, v = ``d_v`` (default ``d``):

    - ``scores``: Q K^T, (B, Q, d) @ (B, d, K): 2 B Q K d
    - ``scale``: division of each score by sqrt(d): B Q K
    - ``softmax``: per score 5 operations (a comparison for the row maximum,
      the subtraction of that maximum, exp, the addition into the row sum,
      the division by it): 5 B Q K
    - ``weighted_sum``: (B, Q, K) @ (B, K, v): 2 B Q K v
    - ``total``: the sum of the four.

    Everything is proportional to Q K: quadratic in the sequence length for
    self-attention (Q = K = T), the 11.6.2 entry O(T^2 d).
    """
    d_v = d if d_v is None else d_v
    _check_sizes(n_q=n_q, n_k=n_k, d=d, d_v=d_v, batch=batch)
    QK = batch * n_q * n_k
    parts = {"scores": 2 * QK * d, "scale": QK, "softmax": 5 * QK, "weighted_sum": 2 * QK * d_v}
    parts["total"] = sum(parts.values())
    return parts


def attention_bytes(
    n_q: int, n_k: int, d: int, d_v: int | None = None, batch: int = 1, dtype_bytes: int = 4, materialize: bool = True
) -> dict[str, int]:
    """Bytes moved to and from memory by one scaled dot-product attention (D2L 11.6.2, lab).

    Convention: each tensor crosses memory once per kernel that reads or
    writes it, with no cache reuse between kernels. Q, K and V are read once
    and the output (B, Q, v) written once. A materialising implementation runs
    three kernels (scores Q K^T; scale and softmax; weights @ V) and so also
    writes the (B, Q, K) scores, reads them back, writes the weights and reads
    them back: ``scores_and_weights`` = 4 B Q K elements (0 when not
    materialising, as in a fused kernel such as FlashAttention that keeps them
    on chip). Every element is ``dtype_bytes`` bytes (4 for float32, 2 for
    float16). Returns the parts and their ``total``.
    """
    d_v = d if d_v is None else d_v
    _check_sizes(n_q=n_q, n_k=n_k, d=d, d_v=d_v, batch=batch, dtype_bytes=dtype_bytes)
    s = dtype_bytes * batch
    parts = {
        "queries": s * n_q * d,
        "keys": s * n_k * d,
        "values": s * n_k * d_v,
        "output": s * n_q * d_v,
        "scores_and_weights": 4 * s * n_q * n_k if materialize else 0,
    }
    parts["total"] = sum(parts.values())
    return parts


def fit_power_law(ns, times) -> tuple[float, float]:
    """Fit ``t = c * n^k`` by least squares on ``log t = log c + k log n``; returns ``(c, k)`` (D2L 11.6.2, lab).

    The fit is in log space so that each size counts equally whatever its
    time. ``k`` near 2 for attention against sequence length is D2L's O(T^2).
    """
    x, y = np.asarray(ns, dtype=float), np.asarray(times, dtype=float)
    if x.ndim != 1 or y.ndim != 1 or len(x) != len(y):
        raise ValueError(f"ns and times must be two 1-D sequences of equal length, got shapes {x.shape} and {y.shape}")
    if len(x) < 2:
        raise ValueError(f"a power law has two parameters: give at least 2 points, got {len(x)}")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))) or np.any(x <= 0) or np.any(y <= 0):
        raise ValueError("sizes and times must be finite and positive (their logarithms are fitted)")
    log_n = np.log(x)
    if np.ptp(log_n) == 0:
        raise ValueError("all sizes are equal, so the exponent is undetermined: use at least two different sizes")
    A = np.stack([np.ones_like(log_n), log_n], axis=1)  # (m,), (m,) -> (m, 2)
    (log_c, k), *_ = np.linalg.lstsq(A, np.log(y), rcond=None)  # (m, 2) \ (m,) -> (2,)
    return float(math.exp(log_c)), float(k)


def matmul_peak_flops(
    n: int | None = None,
    device=None,
    dtype: torch.dtype = torch.float32,
    warmup: int = 2,
    repeats: int = 5,
    clock: Callable[[], float] = time.perf_counter,
) -> float:
    """Achieved FLOP/s of an (n, n) @ (n, n) matrix product: a practical peak to compare attention with.

    Counts ``2 n^3`` FLOPs per product and divides by the median time of
    :func:`benchmark`. ``n`` defaults to 4096 on a GPU and 1024 on the CPU;
    ``device`` None means CUDA when available.
    """
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(device)
    n = (4096 if device.type == "cuda" else 1024) if n is None else n
    _check_sizes(n=n)
    A = torch.randn(n, n, device=device, dtype=dtype)
    B = torch.randn(n, n, device=device, dtype=dtype)
    sync = None if clock is time.perf_counter else _default_synchronize(device)
    timing = benchmark(torch.mm, A, B, warmup=warmup, repeats=repeats, device=device, clock=clock, synchronize=sync)
    return 2 * n**3 / (timing.median_ms / 1e3)  # (n, n) @ (n, n) -> (n, n)


def device_info() -> dict:
    """What the measurements ran on: device, PyTorch and CUDA versions, CPU count, date (for the lab's report)."""
    cuda = torch.cuda.is_available()
    info = {
        "device": torch.cuda.get_device_name(0) if cuda else (platform.processor() or platform.machine() or "cpu"),
        "device_type": "cuda" if cuda else "cpu",
        "torch": torch.__version__,
        "cuda_runtime": torch.version.cuda if cuda else None,
        "cuda_driver": None,
        "gpu_memory_bytes": torch.cuda.get_device_properties(0).total_memory if cuda else None,
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }
    if cuda:
        info["cuda_driver"] = _cuda_driver_version()
    return info


def _cuda_driver_version() -> str | None:
    """The CUDA driver's version as "major.minor", from the driver library itself; None if it cannot be read."""
    try:
        import ctypes

        lib = ctypes.CDLL("libcuda.so.1" if os.name != "nt" else "nvcuda.dll")
        version = ctypes.c_int()
        if lib.cuDriverGetVersion(ctypes.byref(version)) != 0:
            return None
        return f"{version.value // 1000}.{version.value % 1000 // 10}"
    except (OSError, AttributeError):
        return None
