"""The decoder lab's two language models: 11.9's GPT (the baseline) and the block of 2026, at one size and budget.

Trains both recipes of ``qkv.recipes.modern`` cold (in a fresh folder of trained weights), one seed after another,
and prints for each model and seed the held-out perplexity, the CPU seconds of its training
(``time.process_time()``, the whole process) and the wall seconds, then each model's mean with its ratio to the
GPT's measured in the same run. Writes the table to ``benchmarks/results/decoder_lab_cpu.md``.

    .venv/bin/python benchmarks/decoder_lab.py [--seeds 0 1 2] [--threads 1] [--data-dir ../shared/data]

One torch thread by default, for the reason ``benchmarks/lm.py`` gives: on a shared machine CPU seconds with one
thread measure the work, wall seconds the neighbours.

Targets (exit status 1 if missed): each training within 90 s of CPU time (11.9 budgets 60 s of wall time on 2
cores); the new block's mean perplexity below the GPT's (what the lab's page says).
"""

from __future__ import annotations

import argparse
import os
import sys

from _common import before_torch  # noqa: E402 (benchmarks/_common.py, which imports no torch)

before_torch()

import platform  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "decoder_lab_cpu.md"
TARGET_CPU_S = 90.0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    os.environ.setdefault("QKV_DATA_DIR", args.data_dir)
    tmp = tempfile.TemporaryDirectory()
    os.environ["QKV_TRAINED_DIR"] = tmp.name  # cold: every model trains
    torch.set_num_threads(args.threads)
    from qkv.lm import CharLMData, count_parameters
    from qkv.recipes import modern
    from qkv.recipes.weights import smoke_batches

    if smoke_batches():
        raise SystemExit("QKV_TRAIN_SMOKE is set: unset it, a benchmark trains for real")
    data = CharLMData()
    rows = []  # (model, seed, parameters, perplexity, cpu s, wall s)
    names = {"gpt": "GPT-2's block (11.9's GPT)", "modern": "the block of 2026"}
    for seed in args.seeds:
        cpu0, wall0 = time.process_time(), time.perf_counter()
        marks = {}

        def log(message, _marks=marks, _cpu0=cpu0, _wall0=wall0):
            if "trained in" in message:  # the first model of the pair has finished
                _marks.setdefault("first", (time.process_time(), time.perf_counter()))

        pair = modern.train_pair(data, seed=seed, progress=False, log=log)
        cpu1, wall1 = time.process_time(), time.perf_counter()
        first_cpu, first_wall = marks.get("first", (cpu1, wall1))
        spans = {"gpt": (first_cpu - cpu0, first_wall - wall0), "modern": (cpu1 - first_cpu, wall1 - first_wall)}
        for name in ("gpt", "modern"):
            model = pair[name]["fitted"].model
            cpu, wall = spans[name]
            rows.append((name, seed, count_parameters(model), pair[name]["perplexity"], cpu, wall))
            print(f"{names[name]:>26} seed {seed}: perplexity {pair[name]['perplexity']:.3f}, {cpu:.1f} CPU s",
                  flush=True)  # fmt: skip
    mean = {
        name: [sum(r[i] for r in rows if r[0] == name) / len(args.seeds) for i in (3, 4, 5)]
        for name in ("gpt", "modern")
    }
    lines = [
        "# The decoder lab's two language models on The Time Machine (characters), CPU",
        "",
        f"{platform.machine()}, {os.cpu_count()} CPUs, {args.threads} torch thread(s), load average "
        f"{os.getloadavg()[0]:.2f} at the end; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. "
        f"`benchmarks/decoder_lab.py --seeds {' '.join(map(str, args.seeds))} --threads {args.threads}`. "
        "Baseline: 11.9's GPT, in the same run.",
        "",
        "| model | seed | parameters | held-out perplexity | training CPU s | wall s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, seed, params, ppl, cpu, wall in rows:
        lines.append(f"| {names[name]} | {seed} | {params:,} | {ppl:.3f} | {cpu:.1f} | {wall:.1f} |")
    lines += ["", "| model | mean perplexity | / GPT | mean CPU s | / GPT |", "|---|---:|---:|---:|---:|"]
    for name in ("gpt", "modern"):
        ppl, cpu, _ = mean[name]
        lines.append(
            f"| {names[name]} | {ppl:.3f} | {ppl / mean['gpt'][0]:.3f} | {cpu:.1f} | {cpu / mean['gpt'][1]:.2f} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.write_text(text, encoding="utf-8")
    missed = [r for r in rows if r[4] > TARGET_CPU_S]
    if missed or not mean["modern"][0] < mean["gpt"][0]:
        print(
            f"targets missed: trainings over {TARGET_CPU_S} CPU s {missed}; or the new block not better",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
