"""Training on a busy machine: torch's two spinning threads against the Trainer's choice (issue 37).

A student's walk found 11.8's ViT taking 1,449 s where the page said 80 s, its CPU seconds 7.5 times an idle run's:
two torch threads on two cores that other work kept busy, each spinning while it waited for the other. The Trainer
now trains on the cores other work leaves free (``qkv.training.training_threads``: one thread on a busy machine).

This trains our ViT recipe's model (``qkv.recipes.vit.CPU_RECIPE``, batches of 128 random 28-pixel images) for a
fixed number of steps, three ways, in one run, and prints the wall and CPU seconds of each with their ratios to the
first (the baseline):

1. the machine idle, two threads (what the page's times were measured as);
2. the machine busy with ``--hogs`` processes that spin on the CPU (a shared hub, a laptop doing other work), two
   threads, as the Trainer trained before;
3. the same busy machine, the Trainer's choice (``threads="auto"``).

Unlike the other benchmarks it leaves OpenMP's wait policy at its default, as a student's kernel has it.

    .venv/bin/python benchmarks/busy_machine.py [--steps 40] [--hogs 2]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import torch
from torch.utils.data import DataLoader, TensorDataset

from qkv.recipes import vit as recipes
from qkv.training import Trainer


class _Images:
    """``steps`` batches of 128 random Fashion-MNIST-sized images and labels: what a training step costs, no data."""

    def __init__(self, steps: int):
        g = torch.Generator().manual_seed(0)
        self.X = torch.rand(steps * 128, 1, 28, 28, generator=g)  # (n, C, S, S)
        self.Y = torch.randint(0, 10, (steps * 128,), generator=g)  # (n,)

    def train_dataloader(self):
        return DataLoader(TensorDataset(self.X, self.Y), batch_size=128)


def _train(steps: int, threads) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (this process, every thread) and the threads used for ``steps`` training steps."""
    torch.manual_seed(0)
    model = recipes.CPU_RECIPE.build()
    trainer = Trainer(1, seed=0, lr=1e-3, optimizer="adam", progress=False, threads=threads)
    data = _Images(steps)
    trainer.fit(model, _Images(2))  # warm-up: one-off costs outside the timing
    wall, cpu = time.perf_counter(), time.process_time()
    trainer.fit(model, data)
    return time.perf_counter() - wall, time.process_time() - cpu, trainer.threads_used


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40, help="training steps per run (default 40)")
    parser.add_argument("--hogs", type=int, default=os.cpu_count() or 2, help="busy processes (default: one a core)")
    args = parser.parse_args(argv)
    torch.set_num_threads(2)
    rows = [("idle, 2 threads (baseline)", *_train(args.steps, 2))]
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.hogs)]
    try:
        time.sleep(1.0)  # the hogs running
        rows.append((f"busy ({args.hogs} spinning processes), 2 threads", *_train(args.steps, 2)))
        rows.append((f"busy ({args.hogs} spinning processes), threads='auto'", *_train(args.steps, "auto")))
    finally:
        for hog in hogs:
            hog.kill()
    base_wall, base_cpu = rows[0][1], rows[0][2]
    print(
        f"{args.steps} training steps of the ViT recipe (batch 128), torch {torch.__version__}, {os.cpu_count()} CPUs"
    )
    print("| run | threads | wall s | x baseline | CPU s | x baseline |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, wall, cpu, threads in rows:
        print(f"| {name} | {threads} | {wall:.2f} | {wall / base_wall:.2f} | {cpu:.2f} | {cpu / base_cpu:.2f} |")


if __name__ == "__main__":
    main()
