"""Small character language models on *The Time Machine*, trained in CPU seconds (D2L 11.9).

Section 11.9 argues that a decoder-only Transformer trained to predict the next token is a general model of
text, and that its loss falls as a power law of its size. This module makes both claims something a CPU can show:

- :class:`CharLMData`: the book as characters, the first 90% for training (windows of ``num_steps + 1``
  characters every ``stride`` characters, the label the input shifted by one), the last 10% held out as
  non-overlapping windows, so that every held-out character is predicted exactly once;
- three models of the same data: :class:`BigramLM` (counts of character pairs, add-one smoothing, no training),
  :class:`GRULM` (D2L 9's recurrent model) and :class:`qkv.pretraining.DecoderOnlyLM` (a small GPT);
- :func:`perplexity` on the held-out windows, :func:`fit_power_law` for the scaling fit, and
  :func:`next_token_distribution` (temperature and top-k) for the samples and the explorer.

The section's sizes and training, once then loaded, are the course's machinery: :mod:`qkv.recipes.lm`.

Shape letters: B batch, T = num_steps, V vocabulary, N hidden units.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from qkv._validate import positive_int
from qkv.data.timemachine import load_corpus
from qkv.training import evaluating, fusable

__all__ = [
    "CharLMData",
    "BigramLM",
    "GRULM",
    "GRUConfig",
    "count_parameters",
    "gru_hiddens_for",
    "perplexity",
    "next_token_distribution",
    "fit_power_law",
]


class CharLMData:
    """Characters of *The Time Machine*, split into training and held-out text (D2L 9.3, 11.9).

    ``CharLMData(num_steps=64, batch_size=32, stride=16, val_fraction=0.1)``: ``corpus`` and ``vocab`` as
    :func:`qkv.data.load_corpus` gives them; the first ``1 - val_fraction`` of the characters train, as windows
    starting every ``stride`` characters; the rest is cut into non-overlapping windows of ``num_steps + 1``.
    ``X`` (n, T) and ``Y`` (n, T) are the training inputs and labels, ``X_val`` and ``Y_val`` the held-out ones.
    """

    def __init__(self, num_steps=64, batch_size=32, stride=16, val_fraction=0.1, data_dir=None):
        num_steps, batch_size = positive_int(num_steps, "num_steps"), positive_int(batch_size, "batch_size")
        stride = positive_int(stride, "stride")
        if not 0.0 < val_fraction < 1.0:
            raise ValueError(f"val_fraction must lie in (0, 1), got {val_fraction!r}")
        self.num_steps, self.batch_size, self.stride, self.val_fraction = num_steps, batch_size, stride, val_fraction
        self.corpus, self.vocab = load_corpus("char", data_dir)
        ids = torch.tensor(self.corpus)  # (L,)
        split = int(len(ids) * (1 - val_fraction))
        train, held = ids[:split], ids[split:]
        if len(held) < num_steps + 1 or len(train) < num_steps + 1:
            raise ValueError(f"num_steps = {num_steps} is too long for a split of {len(ids)} characters")
        windows = train.unfold(0, num_steps + 1, stride)  # (n, T + 1)
        self.X, self.Y = windows[:, :-1], windows[:, 1:]  # (n, T), (n, T)
        held_windows = held.unfold(0, num_steps + 1, num_steps)  # (m, T + 1), consecutive windows share one char
        self.X_val, self.Y_val = held_windows[:, :-1], held_windows[:, 1:]  # (m, T), (m, T)

    def _loader(self, X, Y, train: bool):
        dataset = torch.utils.data.TensorDataset(X, Y)
        return torch.utils.data.DataLoader(dataset, self.batch_size, shuffle=train)

    def train_dataloader(self):
        """Shuffled batches ``(X (B, T), Y (B, T))`` of the training windows."""
        return self._loader(self.X, self.Y, True)

    def val_dataloader(self):
        """Batches of the held-out windows, in order."""
        return self._loader(self.X_val, self.Y_val, False)

    def encode(self, text: str) -> torch.Tensor:
        """Token ids (T,) of ``text``, lower-cased; characters outside the vocabulary are an error."""
        text = text.lower()
        unknown = sorted({c for c in text if c not in self.vocab.token_to_idx})
        if unknown:
            raise ValueError(f"characters {unknown} are not in the vocabulary (lowercase letters and space)")
        return torch.tensor([self.vocab[c] for c in text], dtype=torch.long)

    def decode(self, ids) -> str:
        """The characters of token ids."""
        return "".join(self.vocab.to_tokens([int(i) for i in ids]))


class BigramLM(nn.Module):
    """A count-based bigram model: P(next = b | current = a) from pair counts with add-``alpha`` smoothing.

    ``BigramLM.fit(X, Y, V)`` counts every pair (X[i, t], Y[i, t]); ``forward(X)`` (B, T) returns the logits
    (B, T, V), the log probabilities of the next character given the current one (D2L 9.3.1).
    """

    def __init__(self, counts: torch.Tensor, alpha: float = 1.0):
        super().__init__()
        probs = (counts + alpha) / (counts + alpha).sum(dim=1, keepdim=True)  # (V, V): rows sum to 1
        self.register_buffer("log_probs", probs.log())

    @classmethod
    def fit(cls, X: torch.Tensor, Y: torch.Tensor, vocab_size: int, alpha: float = 1.0) -> BigramLM:
        pairs = X.reshape(-1) * vocab_size + Y.reshape(-1)  # (n * T,): one index per (current, next) pair
        counts = torch.bincount(pairs, minlength=vocab_size * vocab_size).reshape(vocab_size, vocab_size).double()
        return cls(counts, alpha)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        return self.log_probs[X].float()  # (B, T) -> (B, T, V)


@dataclass
class GRUConfig:
    """A GRU language model: an embedding of ``num_embed``, one GRU layer of ``num_hiddens``, a linear head."""

    vocab_size: int
    num_hiddens: int = 128
    num_embed: int = 64
    lr: float = 3e-3


class GRULM(nn.Module):
    """Embedding, a one-layer GRU and a linear head to the vocabulary (D2L 10.2): (B, T) -> logits (B, T, V)."""

    def __init__(self, config: GRUConfig):
        super().__init__()
        self.config = config
        self.embedding = nn.Embedding(config.vocab_size, config.num_embed)
        self.rnn = nn.GRU(config.num_embed, config.num_hiddens, batch_first=True)
        self.head = nn.Linear(config.num_hiddens, config.vocab_size)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        H, _ = self.rnn(self.embedding(X))  # (B, T, E) -> (B, T, N)
        return self.head(H)  # (B, T, N) -> (B, T, V)

    def configure_optimizers(self):
        """Adam, fused where it can be (:func:`qkv.training.fusable`)."""
        return torch.optim.Adam(self.parameters(), lr=self.config.lr, fused=fusable(self))


def count_parameters(model: nn.Module, non_embedding: bool = False) -> int:
    """Number of distinct parameters (a tied weight once). With ``non_embedding``, the token and position
    embeddings are left out, as Kaplan et al. (2020) count a model's size."""
    seen, total = set(), 0
    for name, p in model.named_parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        if non_embedding and ("token_embedding" in name or "pos_embedding" in name):
            continue
        total += p.numel()
    return total


def gru_hiddens_for(target: int, vocab_size: int, num_embed: int = 64) -> int:
    """The GRU width whose :class:`GRULM` has the parameter count closest to ``target``."""

    def size(h):  # embedding, 3 gates (input and hidden weights, two biases each), head
        return vocab_size * num_embed + 3 * (num_embed * h + h * h + 2 * h) + h * vocab_size + vocab_size

    return min(range(1, 2048), key=lambda h: abs(size(h) - target))


def perplexity(model: nn.Module, data: CharLMData) -> float:
    """exp of the mean cross-entropy over every held-out character (D2L 9.3.2), the model in eval mode (its own
    mode given back)."""
    total, count = 0.0, 0
    with evaluating(model):
        for X, Y in data.val_dataloader():
            logits = model(X)  # (B, T, V)
            V = logits.shape[-1]
            total += F.cross_entropy(logits.reshape(-1, V).double(), Y.reshape(-1), reduction="sum").item()
            count += Y.numel()
    return math.exp(total / count)


def next_token_distribution(logits: torch.Tensor, temperature: float = 1.0, top_k=None) -> torch.Tensor:
    """The sampling distribution of the next token: softmax(logits / temperature) over the ``top_k`` largest
    logits (all if None), 0 elsewhere (D2L 11.9.3). ``logits`` (..., V) -> probabilities (..., V)."""
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature!r}")
    scaled = logits / temperature  # (..., V)
    if top_k is not None and top_k < logits.shape[-1]:
        kth = torch.topk(scaled, top_k, dim=-1).values[..., -1:]  # (..., k) -> (..., 1)
        scaled = scaled.masked_fill(scaled < kth, float("-inf"))
    return torch.softmax(scaled, dim=-1)  # (..., V)


def fit_power_law(sizes, losses) -> tuple[float, float]:
    """Least squares in log-log space: ``loss ~ a * size ** (-alpha)``; returns ``(a, alpha)`` (Kaplan et al.)."""
    x = torch.tensor([math.log(s) for s in sizes], dtype=torch.float64)
    y = torch.tensor([math.log(v) for v in losses], dtype=torch.float64)
    if len(x) < 2:
        raise ValueError("a power law needs at least two (size, loss) points")
    A = torch.stack([torch.ones_like(x), x], dim=1)  # (n, 2)
    coef = torch.linalg.lstsq(A, y[:, None]).solution[:, 0]  # (2, 1) -> (2,)
    return math.exp(coef[0].item()), -coef[1].item()
