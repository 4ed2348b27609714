"""Figures of D2L 11.6, "Self-Attention and Positional Encoding" (``book/self-attention-and-positional-encoding.md``).

``glance()`` opens the section; ``path_lengths`` and ``paths`` compare how far a signal travels in a CNN, an RNN and
self-attention (D2L 11.6.2); ``binary_analogy`` sets the bits of 0, 1, 2, ... beside the sinusoidal table
(D2L 11.6.3); ``permutation`` draws self-attention's outputs for tokens in two orders.
"""

from __future__ import annotations

from collections import deque

import matplotlib.pyplot as plt
import numpy as np

from qkv.figures._draw import box
from qkv.positional import sinusoidal_table

__all__ = ["glance", "path_lengths", "paths", "binary_analogy", "permutation"]

_RED = "#c0392b"


def glance():
    """D2L 11.6 at a glance: every token attends to every token of its own sequence (left), and each token gets the
    encoding of its position added first (right: the sinusoidal table). Returns the ``Figure``."""
    fig = plt.figure(figsize=(9, 3.0))
    ax = fig.add_axes((0.0, 0.0, 0.56, 1.0))
    ax.set_xlim(0, 11)
    ax.set_ylim(-0.3, 5.4)
    ax.set_aspect("equal")
    ax.axis("off")
    n = 5
    xs = [1.4 + 2.0 * i for i in range(n)]
    for i, x in enumerate(xs):
        box(ax, x, 0.45, 1.3, 0.7, rf"$\mathbf{{x}}_{i}$", "#cfe3ff")
        ax.text(x, 1.3, rf"$+\,\mathbf{{p}}_{i}$", ha="center", va="center", fontsize=10, color="#1f5fa8")
        box(ax, x, 4.3, 1.3, 0.7, rf"$\mathbf{{y}}_{i}$", "#d5f2d0")
    for x_in in xs:
        for x_out in xs:
            ax.plot([x_in, x_out], [1.6, 3.95], color="0.55", lw=0.8, zorder=0)
    ax.text(5.5, 5.15, "self-attention: queries, keys and values all from one sequence", ha="center", fontsize=9,
            weight="bold")  # fmt: skip
    ax.text(5.5, 2.75, "every pair, one step", ha="center", fontsize=9, color="0.25",
            bbox=dict(fc="white", ec="none", pad=1))  # fmt: skip
    hm = fig.add_axes((0.64, 0.17, 0.33, 0.68))
    P = sinusoidal_table(40, 32).numpy()  # (T, d)
    hm.imshow(P, cmap="RdBu_r", aspect="auto", vmin=-1, vmax=1)
    hm.set_xlabel("column j of the encoding")
    hm.set_ylabel("position i")
    hm.set_title(r"$\mathbf{p}_i$: sines and cosines", fontsize=10)
    return fig


def path_lengths(n: int, k: int = 3) -> dict[str, tuple[int, int]]:
    """For a sequence of ``n`` tokens, (layers, steps) that a signal needs to get from the first token to the last
    (D2L 11.6.2), found by breadth-first search on each architecture's connections:

    - "CNN": 1-D convolutions of odd kernel size ``k`` (position i of one layer sees i - k//2 .. i + k//2 of the
      layer below), stacked: the number of layers needed, each one step;
    - "RNN": one layer whose hidden state at position i depends on i - 1: n - 1 steps;
    - "self-attention": one layer in which every position sees every position: 1 step.
    """
    if n < 2 or k < 3 or k % 2 == 0:
        raise ValueError(f"need n >= 2 tokens and an odd kernel size k >= 3, got n = {n}, k = {k}")

    def bfs(neighbours):
        seen, todo = {0: 0}, deque([0])
        while todo:
            i = todo.popleft()
            for j in neighbours(i):
                if j not in seen:
                    seen[j] = seen[i] + 1
                    todo.append(j)
        return seen[n - 1]

    half = k // 2
    cnn = bfs(lambda i: range(max(0, i - half), min(n, i + half + 1)))
    rnn = bfs(lambda i: [i + 1] if i + 1 < n else [])
    attention = bfs(lambda i: range(n))
    return {"CNN": (cnn, cnn), "RNN": (1, rnn), "self-attention": (1, attention)}


def paths(n: int = 8, k: int = 3):
    """D2L 11.6.2's comparison as drawings: the connections of a CNN (kernel ``k``, as many layers as the first token
    needs to reach the last), an RNN and self-attention over ``n`` tokens, with the shortest path from the first token
    to the last in red. Returns the ``Figure``."""
    lengths = path_lengths(n, k)
    cnn_layers = lengths["CNN"][0]
    fig, axes = plt.subplots(1, 3, figsize=(10, 3.2), gridspec_kw={"width_ratios": [1, 1, 1]})
    half = k // 2
    xs = np.arange(n)

    def tokens(ax, y, color="#cfe3ff"):
        ax.scatter(xs, [y] * n, s=90, c=color, edgecolors="0.25", zorder=3)

    # CNN: layer l position i sees positions i - half .. i + half of layer l - 1
    ax = axes[0]
    for layer in range(cnn_layers + 1):
        tokens(ax, layer, "#cfe3ff" if layer == 0 else "#e8e8e8")
    for layer in range(1, cnn_layers + 1):
        for i in range(n):
            for j in range(max(0, i - half), min(n, i + half + 1)):
                ax.plot([j, i], [layer - 1, layer], color="0.75", lw=0.7, zorder=1)
    pos = 0
    for layer in range(1, cnn_layers + 1):  # the path: move right by half a kernel each layer
        nxt = min(n - 1, pos + half)
        ax.plot([pos, nxt], [layer - 1, layer], color=_RED, lw=2.2, zorder=2)
        pos = nxt
    ax.set_title(f"CNN (k = {k}): {lengths['CNN'][1]} steps", fontsize=10)
    # RNN: a chain
    ax = axes[1]
    tokens(ax, 0)
    tokens(ax, 1, "#e8e8e8")
    for i in range(n):
        ax.plot([i, i], [0, 1], color="0.75", lw=0.7, zorder=1)
    ax.plot([0, 0], [0, 1], color=_RED, lw=2.2, zorder=2)
    ax.plot([0, n - 1], [1, 1], color=_RED, lw=2.2, zorder=2)
    ax.set_title(f"RNN: {lengths['RNN'][1]} steps", fontsize=10)
    # self-attention: every pair
    ax = axes[2]
    tokens(ax, 0)
    tokens(ax, 1, "#e8e8e8")
    for i in range(n):
        for j in range(n):
            ax.plot([j, i], [0, 1], color="0.8", lw=0.5, zorder=1)
    ax.plot([0, n - 1], [0, 1], color=_RED, lw=2.2, zorder=2)
    ax.set_title(f"self-attention: {lengths['self-attention'][1]} step", fontsize=10)
    for ax in axes:
        ax.set_xlim(-0.6, n - 0.4)
        ax.set_ylim(-0.5, max(cnn_layers, 1) + 0.5)
        ax.axis("off")
        ax.text(0, -0.42, "first", ha="center", fontsize=8)
        ax.text(n - 1, -0.42, "last", ha="center", fontsize=8)
    fig.tight_layout()
    return fig


def binary_analogy(num_positions: int = 16, num_bits: int = 4, num_columns: int = 8):
    """D2L 11.6.3's analogy: the bits of 0 .. ``num_positions - 1`` (left; the lowest bit flips at every step, the
    next every second step...) beside the first ``num_columns`` columns of the sinusoidal table of width 32 for the
    same positions (right; the frequency falls from one column pair to the next). Returns the ``Figure``."""
    bits = np.array([[(i >> b) & 1 for b in range(num_bits)] for i in range(num_positions)])  # (T, bits): bit 0 first
    P = sinusoidal_table(num_positions, 32).numpy()[:, :num_columns]  # (T, columns)
    fig, (left, right) = plt.subplots(1, 2, figsize=(7, 3.6), gridspec_kw={"width_ratios": [num_bits, num_columns]})
    left.imshow(bits, cmap="Greys", aspect="auto", vmin=0, vmax=1.6)
    for i in range(num_positions):
        for b in range(num_bits):
            left.text(b, i, str(bits[i, b]), ha="center", va="center", fontsize=7,
                      color="white" if bits[i, b] else "black")  # fmt: skip
    left.set_xticks(range(num_bits), [f"bit {b}" for b in range(num_bits)], fontsize=8)
    left.set_ylabel("position i")
    left.set_title("i in binary (bit 0 first)", fontsize=10)
    right.imshow(P, cmap="RdBu_r", aspect="auto", vmin=-1, vmax=1)
    right.set_xticks(range(num_columns), [str(j) for j in range(num_columns)], fontsize=8)
    right.set_xlabel("column j")
    right.set_title("sinusoidal encoding, d = 32", fontsize=10)
    fig.tight_layout()
    return fig


def permutation(inputs, outputs, perm, outputs_permuted):
    """Self-attention's outputs for tokens in two orders (D2L 11.6.3): the inputs (T, d) and outputs (T, N) of one
    sequence, and the outputs for the same tokens reordered by ``perm`` (the token at row r is inputs[perm[r]]).
    Draws four heatmaps: inputs, outputs, outputs for the shuffled tokens, and those rows put back in the original
    order, which match the outputs. Returns the ``Figure``."""
    inputs, outputs = np.asarray(inputs), np.asarray(outputs)
    outputs_permuted, perm = np.asarray(outputs_permuted), np.asarray(perm)
    if sorted(int(p) for p in perm) != list(range(len(inputs))):
        raise ValueError(f"perm must be a permutation of 0 .. {len(inputs) - 1}, got {perm.tolist()}")
    back = np.empty_like(outputs_permuted)
    back[perm] = outputs_permuted  # row r of the shuffled outputs belongs to token perm[r]
    panels = [
        (inputs, "tokens x"),
        (outputs, "outputs f(x)"),
        (outputs_permuted, "outputs for shuffled x"),
        (back, "shuffled outputs, put back"),
    ]
    fig, axes = plt.subplots(1, 4, figsize=(10, 2.8))
    vmax = max(abs(a).max() for a, _ in panels[1:])
    for ax, (a, title) in zip(axes, panels):
        scale = abs(a).max() if a is inputs else vmax
        ax.imshow(a, cmap="RdBu_r", aspect="auto", vmin=-scale, vmax=scale)
        ax.set_title(title, fontsize=10)
        ax.set_xticks([])
        ax.set_yticks(range(len(a)))
        ax.tick_params(labelsize=7)
    labels = [str(int(p)) for p in perm]
    axes[2].set_yticks(range(len(perm)), labels)
    axes[0].set_ylabel("token")
    fig.tight_layout()
    return fig
