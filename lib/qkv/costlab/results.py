"""The lab's results: log-log plots, CSV files with where and when they were measured, tables (D2L 11.6.2).

:func:`plot_sweep` draws the log-log picture; :func:`write_results` and
:func:`read_results` keep a sweep in a CSV; :func:`show_results` draws every
sweep saved under ``benchmarks/results``. The lab's opening diagram is
:func:`qkv.figures.attention_cost_lab.glance`.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt

from qkv import timing
from qkv.costlab.sweep import FIELDS, _positive, fit_sweep

#: Where ``benchmarks/attention_cost.py`` writes its CSVs and plots (in a checkout of the repository).
RESULTS_DIR = Path(__file__).resolve().parents[3] / "benchmarks" / "results"

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
    """Plot every saved result CSV in ``folder`` (default :data:`RESULTS_DIR`), saying where and when each
    was measured; returns the figures (none, with a message, when there are no results) (D2L 11.6.2, lab)."""
    folder = RESULTS_DIR if folder is None else Path(folder)
    files = sorted(folder.glob(pattern)) if folder.is_dir() else []
    if not files and not folder.is_dir():  # e.g. qkv installed from the repository, on Colab
        print(
            f"No folder {folder}: the measured results live in the course repository, under benchmarks/results "
            "(an installed qkv does not carry them). Run the lab from a checkout to see them here."
        )
        return []
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
