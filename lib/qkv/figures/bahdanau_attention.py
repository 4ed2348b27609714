"""Figures of D2L 11.4, "Bahdanau Attention" (``book/bahdanau-attention.md``); ``glance()`` opens the section."""

from __future__ import annotations

import matplotlib.pyplot as plt

from qkv.figures._draw import arrow, box, canvas

__all__ = ["glance", "source_heatmap"]


def glance():
    """D2L 11.4 at a glance (our drawing of D2L's Fig. 11.4.2): the encoder's states of every source token are
    the keys and values; the decoder's previous state is the query; the context of each step enters the decoder
    with the embedded previous token. Returns the ``Figure``."""
    fig, ax = canvas((8.5, 3.6), (0, 17), (0, 7.2))
    src = ["i'm", "home", ".", "<eos>"]
    enc_x = [1.5 + 2.0 * i for i in range(len(src))]
    for i, (x, tok) in enumerate(zip(enc_x, src)):
        box(ax, x, 0.6, 1.6, 0.8, tok, "#eeeeee", fontsize=9)
        box(ax, x, 2.3, 1.6, 1.0, rf"$\mathbf{{h}}_{i + 1}$", "#cfe3ff")
        arrow(ax, (x, 1.0), (x, 1.8))
        if i:
            arrow(ax, (x - 1.2, 2.3), (x - 0.8, 2.3))
    ax.text(enc_x[0] - 0.9, 3.2, "encoder (keys = values)", fontsize=9, ha="left", color="#1f4e99")
    # the attention pool: every encoder state feeds it
    att = (9.6, 4.9)
    box(ax, *att, 2.8, 1.2, "additive\nattention", "#fdd", fontsize=9)
    for x in enc_x:
        arrow(ax, (x + 0.3, 2.8), (att[0] - 1.3, att[1] - 0.4), width=0.8, color="0.55")
    # the decoder: previous state -> query; context + embedding -> GRU -> new state -> logits
    prev, new = (12.6, 2.3), (15.6, 2.3)
    box(ax, *prev, 1.9, 1.0, r"$\mathbf{s}_{t'-1}$", "#d5f2d0")
    box(ax, *new, 1.9, 1.0, r"$\mathbf{s}_{t'}$", "#d5f2d0")
    box(ax, 14.1, 0.6, 2.4, 0.8, r"embed $y_{t'-1}$", "#eeeeee", fontsize=9)
    arrow(ax, (prev[0] - 0.4, 2.8), (att[0] + 1.1, att[1] - 0.6), width=1.2, color="#2a7a2a")
    ax.text(11.9, 3.6, "query", fontsize=9, color="#2a7a2a")
    arrow(ax, (att[0] + 1.4, att[1]), (new[0] - 0.5, 2.8), width=1.2, color="#b03030")
    ax.text(12.9, 5.0, r"context $\mathbf{c}_{t'}$", fontsize=9, color="#b03030")
    arrow(ax, (prev[0] + 0.95, 2.3), (new[0] - 0.95, 2.3), width=1.2)
    arrow(ax, (14.1, 1.0), (new[0] - 0.6, 1.8))
    ax.text(14.1, 1.75, "GRU", fontsize=8, ha="center")
    box(ax, 15.6, 6.3, 2.2, 0.8, "next token", "#eeeeee", fontsize=9)
    arrow(ax, (new[0], 2.8), (15.6, 5.9))
    ax.text(9.6, 6.6, r"$\mathbf{c}_{t'} = \sum_t \alpha(\mathbf{s}_{t'-1}, \mathbf{h}_t)\,\mathbf{h}_t$", ha="center")
    return fig


def source_heatmap(weights, src_tokens, tgt_tokens, ax=None):
    """Heatmap of one sentence's attention weights: rows the decoding steps (the tokens they emitted), columns
    the source tokens. ``weights`` is (T_out, T_src) or anything that squeezes to it. Returns the ``Axes``."""
    import torch

    w = torch.as_tensor(weights).detach().to("cpu", torch.float64).squeeze()
    if w.dim() == 1:
        w = w.unsqueeze(0)  # (T_src,) -> (1, T_src): a single step
    if w.dim() != 2:
        raise ValueError(f"expected the weights of one sentence, (T_out, T_src), got shape {tuple(w.shape)}")
    if w.shape != (len(tgt_tokens), len(src_tokens)):
        raise ValueError(
            f"weights of shape {tuple(w.shape)} do not fit {len(tgt_tokens)} output tokens x "
            f"{len(src_tokens)} source tokens; cut the weights to the tokens shown"
        )
    if ax is None:
        _, ax = plt.subplots(figsize=(0.6 * len(src_tokens) + 1.8, 0.45 * len(tgt_tokens) + 0.9))
    image = ax.imshow(w.numpy(), cmap="Reds", vmin=0, vmax=1)
    ax.set_xticks(range(len(src_tokens)), src_tokens, rotation=45, ha="right")
    ax.set_yticks(range(len(tgt_tokens)), tgt_tokens)
    ax.set_xlabel("source tokens (keys)")
    ax.set_ylabel("decoding step (emitted token)")
    for (i, j), value in ((ij, float(w[ij])) for ij in ((i, j) for i in range(w.shape[0]) for j in range(w.shape[1]))):
        ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=7, color="white" if value > 0.6 else "black")
    ax.figure.colorbar(image, ax=ax, shrink=0.8)
    return ax
