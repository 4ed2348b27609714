"""Figures of D2L 11.5, "Multi-Head Attention" (``book/multihead-attention.md``).

:func:`glance` draws the section's diagram. The other figures look inside a small trained model,
:class:`OffsetReader`: one multi-head self-attention layer (``qkv.multihead.MultiHeadAttention``) that reads, at
every position of a sequence of random tokens, the tokens at three fixed offsets (:data:`OFFSETS`), a task where
each head can specialise on one offset. :func:`qkv.recipes.offsets.trained_offset_reader` trains it (150 Adam
steps on batches of 128 sequences, seeded) once per setting and loads it every other time; :func:`head_weights`
returns each head's weights, :func:`head_offsets` the offset each head looks at, and :func:`head_importance` the
loss when one head at a time is masked (D2L 11.5, exercise 2).
Shape letters are those of the glossary in :mod:`qkv`.
"""

from __future__ import annotations

from dataclasses import dataclass

import matplotlib.pyplot as plt
import torch
from torch import nn
from torch.nn import functional as F

from qkv.figures._draw import arrow, box, canvas
from qkv.multihead import MultiHeadAttention
from qkv.training import evaluating

__all__ = [
    "OFFSETS",
    "EVALUATION_SIZE",
    "OffsetTask",
    "OffsetReader",
    "OffsetData",
    "glance",
    "offset_batch",
    "offset_loss",
    "head_weights",
    "head_offsets",
    "head_importance",
    "plot_head_weights",
    "plot_head_importance",
]

#: The offsets the model must read at every position t: the tokens at t - 1, t + 2 and t + 4 (cyclically).
OFFSETS = (-1, 2, 4)


@dataclass(frozen=True)
class OffsetTask:
    """The toy task and its model's size: ``vocab_size`` symbols, sequences of ``num_steps`` tokens,
    ``num_hiddens`` features split into ``num_heads`` heads; ``steps`` Adam steps of ``batch_size`` sequences."""

    vocab_size: int = 8
    num_steps: int = 10
    num_hiddens: int = 32
    num_heads: int = 4
    steps: int = 150
    batch_size: int = 128
    lr: float = 0.01
    seed: int = 0


class OffsetReader(nn.Module):
    """Token and learned position embeddings, one multi-head self-attention layer, and a linear read-out of the
    token at each offset of :data:`OFFSETS` (D2L 11.5). ``forward(X)``: tokens (B, T) -> logits (B, T, 3, V)."""

    def __init__(self, task: OffsetTask):
        super().__init__()
        N, V, T = task.num_hiddens, task.vocab_size, task.num_steps
        self.embedding = nn.Embedding(V, N)
        self.position = nn.Parameter(0.5 * torch.randn(T, N))
        self.attention = MultiHeadAttention(N, task.num_heads, query_size=N, key_size=N, value_size=N)
        self.read = nn.Linear(N, len(OFFSETS) * V)

    def loss(self, logits, Y):
        """The sum over the offsets of the mean cross-entropy (nats): logits (B, T, 3, V), targets (B, T, 3)."""
        return len(OFFSETS) * F.cross_entropy(logits.reshape(-1, logits.shape[-1]), Y.reshape(-1))

    def forward(self, X):
        E = self.embedding(X) + self.position  # (B, T, N) + (T, N) -> (B, T, N)
        Y = self.attention(E, E, E)  # (B, T, N): self-attention, every position a query
        return self.read(Y).reshape(*X.shape, len(OFFSETS), -1)  # (B, T, 3 V) -> (B, T, 3, V)


def offset_batch(task: OffsetTask, batch_size: int, generator: torch.Generator):
    """Random tokens (B, T) and their targets (B, T, 3): the token at t + offset, cyclically, for each offset."""
    X = torch.randint(0, task.vocab_size, (batch_size, task.num_steps), generator=generator)  # (B, T)
    return X, torch.stack([X.roll(-o, dims=1) for o in OFFSETS], dim=-1)  # (B, T, 3)


def offset_loss(model: OffsetReader, X, Y) -> torch.Tensor:
    """The model's loss on tokens ``X`` (B, T) and targets ``Y`` (B, T, 3): :meth:`OffsetReader.loss` (nats)."""
    return model.loss(model(X), Y)


class OffsetData:
    """The training data of :class:`OffsetReader`: ``task.steps`` batches of ``task.batch_size`` random sequences,
    drawn once from a generator seeded with ``task.seed`` (one epoch of a :class:`qkv.training.Trainer` is the
    whole run). ``X`` (steps * batch, T) and ``Y`` (steps * batch, T, 3) hold them, so that
    :func:`qkv.recipes.keys.fingerprint` sees every example."""

    def __init__(self, task: OffsetTask):
        self.task = task
        self.X, self.Y = offset_batch(task, task.steps * task.batch_size, torch.Generator().manual_seed(task.seed))

    def train_dataloader(self):
        n = self.task.batch_size
        return [(self.X[i : i + n], self.Y[i : i + n]) for i in range(0, len(self.X), n)]


#: The number of sequences that :func:`head_offsets` and :func:`head_importance` average over.
EVALUATION_SIZE = 512


def _evaluation_batch(task: OffsetTask, size: int = EVALUATION_SIZE):
    return offset_batch(task, size, torch.Generator().manual_seed(task.seed + 1))


def head_weights(model: OffsetReader, X: torch.Tensor) -> torch.Tensor:
    """Each head's attention weights on the sequences ``X`` (B, T): (B, H, T, T), queries down, keys across (the
    model run in eval mode, its mode given back after)."""
    with evaluating(model):
        model(X)
    W = model.attention.attention.attention_weights  # (B * H, T, T)
    return W.reshape(X.shape[0], -1, X.shape[1], X.shape[1])  # (B * H, T, T) -> (B, H, T, T)


def head_offsets(model: OffsetReader, task: OffsetTask = OffsetTask()) -> list[tuple[int, float]]:
    """For each head: the offset (key minus query position, cyclic, in -T/2 .. T/2) that gets the most weight on
    average over an evaluation batch, and that average weight."""
    X, _ = _evaluation_batch(task)
    W = head_weights(model, X).mean(0)  # (B, H, T, T) -> (H, T, T)
    T = task.num_steps
    positions = torch.arange(T)
    result = []
    for w in W:  # (T, T), one head
        by_offset = torch.stack([w[positions, (positions + o) % T].mean() for o in range(T)])  # (T,)
        o = int(by_offset.argmax())
        result.append((o - T if o > T // 2 else o, float(by_offset[o])))
    return result


def head_importance(model: OffsetReader, task: OffsetTask = OffsetTask()) -> tuple[float, list[float]]:
    """The evaluation loss of the whole model, and the loss with each head masked in turn (its output set to
    zero before the output projection W_o, which is how a pruned head would leave the layer); in eval mode, the
    model's mode given back after."""
    X, Y = _evaluation_batch(task)
    h = task.num_hiddens // task.num_heads
    with evaluating(model):
        base = float(offset_loss(model, X, Y))
        masked = []
        for j in range(task.num_heads):

            def drop_head(module, inputs, j=j):
                kept = inputs[0].clone()  # (B, T, N): the heads' outputs side by side
                kept[..., j * h : (j + 1) * h] = 0  # head j's h features
                return (kept,)

            handle = model.attention.W_o.register_forward_pre_hook(drop_head)
            try:
                masked.append(float(offset_loss(model, X, Y)))
            finally:
                handle.remove()
    return base, masked


def glance():
    """D2L 11.5 at a glance: queries, keys and values are projected H times (one small projection per head),
    each head attends on its own, and the heads' outputs are concatenated and mixed by W_o. Returns the Figure."""
    fig, ax = canvas((8.5, 3.2), (0, 17.5), (0, 6.6))
    box(ax, 1.7, 3.3, 2.6, 2.2, "queries\nkeys\nvalues", "#eee", fontsize=10)
    ys = [5.3, 3.3, 1.3]
    for y, label in zip(ys, ["head 1", "head 2", "head H"]):
        box(ax, 6.3, y, 3.6, 1.4, r"$\mathbf{W}_q^{(i)}, \mathbf{W}_k^{(i)}, \mathbf{W}_v^{(i)}$", "#cfe3ff")
        box(ax, 10.2, y, 2.8, 1.4, "scaled dot-\nproduct attention", "#fdd", fontsize=9)
        ax.text(4.45, y + 0.85, label, fontsize=9, style="italic")
        arrow(ax, (3.0, 3.3), (4.5, y))
        arrow(ax, (8.1, y), (8.8, y))
        arrow(ax, (11.6, y), (12.6, 3.3))
    for x in (7.4, 10.2):
        ax.text(x, 2.3, r"$\vdots$", ha="center", va="center", fontsize=12)
    box(ax, 13.3, 3.3, 1.4, 3.6, "con-\ncat", "#ffe2b8", fontsize=10)
    box(ax, 15.6, 3.3, 1.6, 1.4, r"$\mathbf{W}_o$", "#d5f2d0", fontsize=12)
    arrow(ax, (14.0, 3.3), (14.8, 3.3))
    ax.text(1.7, 0.3, "(B, Q, d)", ha="center", fontsize=9)
    ax.text(10.2, 0.1, "all heads in one batched product: (B H, Q, N/H)", ha="center", fontsize=9)
    ax.text(15.6, 2.2, "(B, Q, N)", ha="center", fontsize=9)
    return fig


def plot_head_weights(model: OffsetReader, X: torch.Tensor, figsize=(9, 2.6)):
    """Heatmaps of every head's weights on one sequence ``X`` (1, T), side by side; returns the Figure."""
    W = head_weights(model, X)[0]  # (H, T, T)
    fig, axes = plt.subplots(1, W.shape[0], figsize=figsize, sharey=True)
    for j, (ax, w) in enumerate(zip(axes, W)):
        ax.imshow(w.numpy(), cmap="Reds", vmin=0, vmax=1)
        ax.set_title(f"head {j + 1}")
        ax.set_xlabel("keys (positions)")
    axes[0].set_ylabel("queries (positions)")
    fig.tight_layout()
    return fig


def plot_head_importance(base: float, masked: list[float], figsize=(4.5, 2.6)):
    """Bars of the increase in loss when each head is masked; returns the Figure."""
    fig, ax = plt.subplots(figsize=figsize)
    increase = [m - base for m in masked]
    ax.bar([f"head {j + 1}" for j in range(len(masked))], increase, color="#d55")
    ax.set_ylabel("loss increase (nats)")
    ax.set_title(f"one head masked (full model: {base:.3g} nats)", fontsize=10)
    fig.tight_layout()
    return fig
