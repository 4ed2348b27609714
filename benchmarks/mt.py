"""Translation benchmark: D2L's Bahdanau (11.4) and Transformer (11.7) translators on MTFraEng, several seeds.

Trains each model with D2L's hyper-parameters (batch 128, 30 epochs, gradient clip 1, Adam) on the default
``MTFraEng`` split, translates D2L's four test sentences, scores them with BLEU (k = 2), and prints a table beside
D2L's published BLEU and D2L's measured 27-30 s per run on a 2-core machine (the baseline, taken as 28.5 s).
The table also goes to ``_build/benchmarks/mt.md``.

    .venv/bin/python benchmarks/mt.py [--seeds 0 1 2] [--models bahdanau transformer] [--threads 2]
                                      [--data-dir ../shared/data] [--epochs 30]

Targets: each run no slower than 28.5 s, mean BLEU over seeds at least D2L's, all runs together under 5 minutes.
The exit status is 1 when a target is missed. Times are wall-clock on this machine; the CPU seconds the process
used are printed beside them, so that a run slowed by other processes on the machine can be recognised.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from _common import before_torch  # noqa: E402 (benchmarks/_common.py, which imports no torch)

# OpenMP's wait policy must be chosen before torch starts its threads: on a busy machine, wait for it to settle, else
# let idle threads sleep (_common.py says why). An OMP_WAIT_POLICY already in the environment wins.
before_torch()

import torch  # noqa: E402

from qkv.bahdanau import BahdanauConfig  # noqa: E402
from qkv.data import MTFraEng  # noqa: E402
from qkv.recipes.translate import D2L_BATCH_SIZE, D2L_CLIP, D2L_EPOCHS  # noqa: E402
from qkv.training import Trainer  # noqa: E402
from qkv.transformer import TransformerConfig  # noqa: E402
from qkv.translate import evaluate_bleu  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "_build" / "benchmarks" / "mt.md"

# D2L's four test sentences and references (D2L 10.7.8, 11.4.3, 11.7.6).
PAIRS = [
    ("go .", "va !"),
    ("i lost .", "j'ai perdu ."),
    ("he's calm .", "il est calme ."),
    ("i'm home .", "je suis chez moi ."),
]
# D2L's published BLEU of each sentence (the PyTorch edition of 11.4 and 11.7).
D2L_BLEU = {"bahdanau": [1.000, 1.000, 0.000, 1.000], "transformer": [1.000, 0.687, 0.658, 1.000]}
D2L_SECONDS = 28.5  # D2L's measured 27-30 s per run on a 2-core machine
TOTAL_BUDGET = 300.0  # all runs together, seconds

CONFIGS = {"bahdanau": BahdanauConfig(), "transformer": TransformerConfig()}  # D2L's hyper-parameters


@dataclass
class Run:
    model: str
    seed: int
    seconds: float
    cpu_seconds: float
    rows: list

    @property
    def mean_bleu(self) -> float:
        return statistics.fmean(r.bleu for r in self.rows)


def train_one(name: str, seed: int, data: MTFraEng, epochs: int) -> Run:
    """Build (seeded), train and evaluate one model; the time covers ``Trainer.fit`` only."""
    torch.manual_seed(seed)
    model = CONFIGS[name].build(len(data.src_vocab), len(data.tgt_vocab), tgt_pad=data.tgt_vocab["<pad>"])
    trainer = Trainer(epochs, gradient_clip_val=D2L_CLIP, device="cpu", seed=seed, progress=False)
    cpu0, t0 = time.process_time(), time.perf_counter()
    trainer.fit(model, data)
    seconds, cpu_seconds = time.perf_counter() - t0, time.process_time() - cpu0
    rows = evaluate_bleu(model, data, PAIRS, k=2, device="cpu")
    return Run(name, seed, seconds, cpu_seconds, rows)


def _fmt_translation(row) -> str:
    return f"{row.prediction or '(empty)'} ({row.bleu:.3f})".replace("|", "\\|")


def report(runs: list[Run], args, total_seconds: float, load_before, load_after) -> tuple[str, bool]:
    """The Markdown report and whether every target was met."""
    lines = [
        "# Translation benchmark (D2L 11.4 Bahdanau, 11.7 Transformer)",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__}, "
        f"{args.threads} thread(s), OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', 'default (spin)')}; "
        f"{args.epochs} epochs, batch {D2L_BATCH_SIZE}, clip {D2L_CLIP:g}. "
        f"Load average before / after: {load_before:.2f} / {load_after:.2f}.",
        "",
        "BLEU with k = 2; each cell is the translation and its BLEU. Time: `Trainer.fit` wall seconds (CPU seconds).",
        "",
        "| model | seed | seconds (CPU s) | / 28.5 s | "
        + " | ".join(f"`{src}`" for src, _ in PAIRS)
        + " | mean BLEU |",
        "|---|---:|---:|---:|" + "---|" * len(PAIRS) + "---:|",
    ]
    for run in runs:
        cells = " | ".join(_fmt_translation(r) for r in run.rows)
        lines.append(
            f"| {run.model} | {run.seed} | {run.seconds:.1f} ({run.cpu_seconds:.1f}) | "
            f"{run.seconds / D2L_SECONDS:.2f} | {cells} | {run.mean_bleu:.3f} |"
        )
    lines += [
        "",
        "References: " + ", ".join(f"`{src}` -> `{ref}`" for src, ref in PAIRS) + ".",
        "",
        "| model | runs | mean seconds | / 28.5 s (D2L, 2 cores) | mean BLEU | D2L's BLEU per sentence "
        "| D2L mean BLEU | target met |",
        "|---|---:|---:|---:|---:|---|---:|---|",
    ]
    ok = total_seconds < TOTAL_BUDGET
    for name in dict.fromkeys(r.model for r in runs):
        mine = [r for r in runs if r.model == name]
        seconds = statistics.fmean(r.seconds for r in mine)
        bleu = statistics.fmean(r.mean_bleu for r in mine)
        d2l = statistics.fmean(D2L_BLEU[name])
        fast = all(r.seconds <= D2L_SECONDS for r in mine)
        good = bleu >= d2l - 1e-9
        ok = ok and fast and good
        verdict = f"time {'yes' if fast else 'NO'}, BLEU {'yes' if good else 'NO'}"
        lines.append(
            f"| {name} | {len(mine)} | {seconds:.1f} | {seconds / D2L_SECONDS:.2f} | {bleu:.3f} | "
            f"{' / '.join(f'{b:.3f}' for b in D2L_BLEU[name])} | {d2l:.3f} | {verdict} |"
        )
    lines += [
        "",
        f"All {len(runs)} runs (with data loading and evaluation): {total_seconds:.1f} s "
        f"(budget {TOTAL_BUDGET:.0f} s: {'met' if total_seconds < TOTAL_BUDGET else 'MISSED'}).",
    ]
    return "\n".join(lines) + "\n", ok


def default_data_dir() -> Path:
    return Path(os.environ.get("QKV_DATA_DIR", str(ROOT.parent / "shared" / "data")))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--models", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--data-dir", type=Path, default=default_data_dir(), help="folder holding fra-eng/fra.txt")
    parser.add_argument("--threads", type=int, default=2, help="torch intra-op threads (default 2, D2L's 2 cores)")
    parser.add_argument("--epochs", type=int, default=D2L_EPOCHS, help="D2L trains 30 epochs")
    parser.add_argument("--out", type=Path, default=OUT, help="where to write the Markdown table")
    args = parser.parse_args(argv)
    if args.threads < 1:
        parser.error(f"--threads must be at least 1, got {args.threads}")
    torch.set_num_threads(args.threads)
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    data = MTFraEng(D2L_BATCH_SIZE, data_dir=args.data_dir)
    runs = []
    for name in args.models:
        for seed in args.seeds:
            run = train_one(name, seed, data, args.epochs)
            print(
                f"{name} seed {seed}: {run.seconds:.1f} s, mean BLEU {run.mean_bleu:.3f}", file=sys.stderr, flush=True
            )
            runs.append(run)
    text, ok = report(runs, args, time.perf_counter() - start, load_before, os.getloadavg()[0])
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(f"written to {args.out}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
