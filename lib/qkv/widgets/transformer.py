"""Explorers of D2L 11.7, "The Transformer Architecture" (``book/transformer.md``).

:func:`cross_attention_explorer` translates a sentence the reader types with the trained Transformer and shows, for a
block and a head picked with sliders, where each emitted French token looked in the English source: the
encoder-decoder attention, one row per emitted token, one column per valid source token. In the book, where there is
no slider, it draws every block and head of one sentence side by side.
"""

from __future__ import annotations

from dataclasses import dataclass

import matplotlib.pyplot as plt
import torch

from qkv.widgets import ipywidgets_or_none, static_figure

__all__ = ["CrossAttention", "cross_attention", "cross_attention_grid", "cross_attention_explorer"]


@dataclass
class CrossAttention:
    """One sentence translated greedily: its valid source tokens, the emitted tokens (with ``<eos>`` when emitted)
    and the encoder-decoder weights, (blocks, heads, emitted tokens, valid source tokens)."""

    src_tokens: list[str]
    out_tokens: list[str]
    weights: torch.Tensor

    @property
    def num_blocks(self) -> int:
        return self.weights.shape[0]

    @property
    def num_heads(self) -> int:
        return self.weights.shape[1]


def cross_attention(model, data, sentence: str) -> CrossAttention:
    """Translate ``sentence`` with the encoder-decoder ``model`` and keep its cross-attention over the valid source
    tokens (the padding, which gets weight 0, left out) (D2L 11.7.6)."""
    from qkv.figures.transformer import decode_with_attention

    if not isinstance(sentence, str):
        raise TypeError(f'sentence must be one string, such as "i\'m home .", got {type(sentence).__name__}')
    if not sentence.strip():
        raise ValueError('sentence is empty: type an English sentence, such as "i\'m home ."')
    translation, _, _, cross, length = decode_with_attention(model, data, sentence)  # cross: (L, H, n, T_src)
    src_ids = data.build([sentence], ["."])[0][0]  # (T_src,): the source, padded
    src_tokens = data.src_vocab.to_tokens(src_ids.tolist())[:length]
    out_tokens = translation.split()
    if len(out_tokens) < cross.shape[2]:  # the last step emitted <eos>
        out_tokens.append("<eos>")
    return CrossAttention(src_tokens, out_tokens, cross[:, :, :, :length].detach().cpu())


def _draw(ax, attn: CrossAttention, block: int, head: int, labels: bool = True) -> None:
    """Block ``block``'s head ``head`` (both from 0) as a heatmap, tokens on the axes."""
    w = attn.weights[block, head]  # (n, T_src)
    ax.imshow(w.numpy(), cmap="Reds", vmin=0, vmax=1, aspect="auto")
    ax.set_xticks(range(len(attn.src_tokens)), attn.src_tokens, rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(len(attn.out_tokens)), attn.out_tokens if labels else [""] * len(attn.out_tokens), fontsize=8)
    ax.set_title(f"block {block + 1}, head {head + 1}", fontsize=8)


def cross_attention_grid(attn: CrossAttention):
    """Every block (rows) and head (columns) of ``attn`` side by side. Returns the figure."""
    L, H = attn.num_blocks, attn.num_heads
    fig, axes = plt.subplots(L, H, figsize=(1.9 * H + 0.8, 1.9 * L + 0.6), squeeze=False)
    for i in range(L):
        for h in range(H):
            _draw(axes[i][h], attn, i, h, labels=h == 0)
    fig.suptitle(f"{' '.join(attn.src_tokens[:-1])}  ->  {' '.join(attn.out_tokens)}", fontsize=9)
    fig.tight_layout()
    return fig


def cross_attention_explorer(model, data, sentence: str = "i'm home ."):
    """Type a sentence, pick a block and a head: where each emitted token looked in the source (D2L 11.7.6).

    Returns, in Jupyter, an ``ipywidgets.interactive`` panel (a text box and two sliders); while the book is built
    (or without ipywidgets), the static :func:`cross_attention_grid` of ``sentence``.
    """
    first = cross_attention(model, data, sentence)
    widgets = ipywidgets_or_none()
    if widgets is None:
        return static_figure(cross_attention_grid(first))
    cache = {sentence: first}
    last = {"fig": None}

    def draw(sentence, block, head):
        if last["fig"] is not None:
            plt.close(last["fig"])
        fig, ax = plt.subplots(figsize=(4.5, 3.2))
        last["fig"] = fig
        if not sentence.strip():
            ax.set_axis_off()
            ax.text(0.5, 0.5, "type an English sentence", ha="center", va="center")
            return fig
        if sentence not in cache:
            cache[sentence] = cross_attention(model, data, sentence)
        _draw(ax, cache[sentence], block - 1, head - 1)
        ax.set_xlabel("source (English)")
        ax.set_ylabel("emitted (French)")
        fig.tight_layout()
        return fig

    return widgets.interactive(
        draw,
        sentence=widgets.Text(value=sentence, description="sentence", continuous_update=False),
        block=widgets.IntSlider(value=first.num_blocks, min=1, max=first.num_blocks, description="block"),
        head=widgets.IntSlider(value=1, min=1, max=first.num_heads, description="head"),
    )
