"""The attention-cost lab's full sweep (D2L 11.6.2): time and peak memory of attention, a GRU and a convolution.

Sweeps the sequence length n at d = 64, then the width d at a fixed n, for every contender of
:func:`qkv.costlab.contenders` (the course's materialising attention of 11.3, PyTorch's
``scaled_dot_product_attention`` held to each backend that runs here, a GRU, a Conv1d), and writes

    benchmarks/results/attention_cost_<device kind>.csv   one row per point, after a '# key: value' header saying
                                                          where and when (device, driver, PyTorch, date, clock)
    benchmarks/results/attention_cost_<device kind>.png   the log-log plots with the fitted exponents

where the device kind is ``cpu`` or ``cuda-<gpu name>``. On a GPU: float16, batch 8, n from 256 to 65536 (a point
that runs out of memory is recorded as "oom" and the contender's larger sizes are skipped), timed by CUDA events,
in under 5 minutes. On the CPU: float32, batch 1, n from 128 to 4096, one thread timed by its CPU time (so that a
busy machine gives the same exponents), in under 2 minutes.

    .venv/bin/python benchmarks/attention_cost.py [--device auto|cpu|cuda] [--out DIR] [--ns N ...] [--ds D ...]
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
try:
    import qkv  # noqa: F401
except ImportError:  # a bare checkout (a GPU machine without the course's environment): use the sources
    sys.path.insert(0, str(ROOT / "lib"))

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import torch  # noqa: E402

from qkv import costlab, timing  # noqa: E402

SETTINGS = {
    "cuda": dict(ns=[2**p for p in range(8, 17)], ds=[16, 32, 64, 128, 256], fixed_n=4096, d=64, batch=8,
                 dtype="float16", warmup=2, repeats=5, budget_s=270.0, max_point_s=30.0),
    "cpu": dict(ns=[2**p for p in range(7, 13)], ds=[16, 32, 64, 128, 256], fixed_n=1024, d=64, batch=1,
                dtype="float32", warmup=1, repeats=3, budget_s=110.0, max_point_s=20.0),
}  # fmt: skip


def device_kind(device: torch.device) -> str:
    """``cpu``, or ``cuda-`` and the GPU's name in lower case with dashes (``cuda-nvidia-h200``)."""
    if device.type != "cuda":
        return device.type
    return "cuda-" + re.sub(r"[^a-z0-9]+", "-", torch.cuda.get_device_name(device).lower()).strip("-")


def cpu_model() -> str | None:
    """The CPU's model name from /proc/cpuinfo (Linux), or None."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def parse(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto", help="auto (CUDA when available), cpu or cuda")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results", help="folder for CSV and PNG")
    parser.add_argument("--ns", type=int, nargs="+", help="sequence lengths of the n sweep")
    parser.add_argument("--ds", type=int, nargs="+", help="widths of the d sweep")
    parser.add_argument("--fixed-n", type=int, help="the sequence length of the d sweep")
    parser.add_argument("--d", type=int, help="the width of the n sweep")
    parser.add_argument("--batch", type=int)
    parser.add_argument("--dtype", choices=["float32", "float16", "bfloat16"])
    parser.add_argument("--warmup", type=int)
    parser.add_argument("--repeats", type=int)
    parser.add_argument("--clock", default="auto", choices=["auto", "thread", "wall"], help="CPU clock (see run_sweep)")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory measurements")
    parser.add_argument("--budget-s", type=float, help="skip the points left after this many seconds")
    args = parser.parse_args(argv)
    device = costlab.pick_device(None if args.device == "auto" else args.device)
    for key, value in SETTINGS["cuda" if device.type == "cuda" else "cpu"].items():
        if getattr(args, key, None) is None:
            setattr(args, key, value)
    args.device = device
    return args


def main(argv=None) -> int:
    args = parse(argv)
    device, dtype = args.device, getattr(torch, args.dtype)
    costlab.announce_device(device)
    start = time.perf_counter()
    deadline = start + args.budget_s
    candidates = costlab.contenders(device, dtype)
    unavailable = {k: v for k, v in costlab.sdpa_backends(device, dtype).items() if v is not None}
    for name, reason in unavailable.items():
        print(f"sdpa backend {name}: not available here ({reason[:100]})")

    def show(row):
        value = f"{row['time_ms']:10.3f} ms" if row["status"] == "ok" else f"{row['status']:>13s}"
        print(f"  {row['name']:24s} n={row['n']:6d} d={row['d']:4d} {value}", flush=True)

    common = dict(batch=args.batch, device=device, warmup=args.warmup, repeats=args.repeats, clock=args.clock,
                  max_point_s=args.max_point_s, deadline=deadline, progress=show)  # fmt: skip
    print(f"n sweep: n = {args.ns}, d = {args.d}, batch {args.batch}, {args.dtype}")
    rows = costlab.run_sweep(candidates, n=args.ns, d=args.d, memory=not args.no_memory, **common)
    print(f"d sweep: d = {args.ds}, n = {args.fixed_n}")
    rows += costlab.run_sweep(candidates, n=args.fixed_n, d=args.ds, memory=False, **common)
    peak = costlab.peak_flops(device, dtype)
    elapsed = time.perf_counter() - start

    info = timing.device_info()
    if device.type == "cpu":
        info["device"] = cpu_model() or info["device"]
        info["threads_used"] = 1 if args.clock != "wall" else torch.get_num_threads()
    cpu_clock = "CPU time of one thread (time.thread_time)" if args.clock != "wall" else "wall (time.perf_counter)"
    info.update(
        clock="CUDA events" if device.type == "cuda" else cpu_clock,
        dtype=args.dtype,
        matmul_peak_flops=f"{peak:.4g}",
        warmup=args.warmup,
        repeats=args.repeats,
        command="python benchmarks/attention_cost.py " + " ".join(sys.argv[1:] if argv is None else argv),
        wall_s=f"{elapsed:.1f}",
    )
    kind = device_kind(device)
    csv_path = costlab.write_results(rows, args.out / f"attention_cost_{kind}.csv", info)
    fig = costlab.sweep_figure(rows, title=f"{info['device']} ({kind}), PyTorch {info['torch']}, {info['date'][:10]}")
    fig.savefig(args.out / f"attention_cost_{kind}.png", dpi=110)

    print(f"\nexponents (t ~ n^k, memory ~ n^k over the larger half of n), peak {peak / 1e9:,.1f} GFLOP/s:")
    n_rows = [r for r in rows if r["vary"] == "n"]
    time_fits, memory_fits = costlab.fit_sweep(n_rows), costlab.fit_sweep(n_rows, "peak_bytes")
    for name, (_, k, _) in time_fits.items():
        memory_k = memory_fits.get(name, (math.nan, math.nan))[1]
        largest = max(r["n"] for r in n_rows if r["name"] == name and r["status"] == "ok")
        print(f"  {name:24s} time k = {k:5.2f}   memory k = {memory_k:5.2f}   largest n that ran: {largest}")
    costlab.print_table(costlab.achieved(n_rows, peak), ["name", "n", "time_ms", "flop_per_s", "of_peak"],
                        {"time_ms": ".4g", "flop_per_s": ".3g", "of_peak": ".1%"})  # fmt: skip
    print(f"\nwrote {csv_path} and its .png in {elapsed:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
