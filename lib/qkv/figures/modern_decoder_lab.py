"""The figures of the modern-decoder lab (``book/modern-decoder-lab.md``, after D2L 11.9); ``glance()`` opens it.

GPT-2's decoder block (11.9's :class:`qkv.pretraining.DecoderOnlyBlock`) beside the block of today's open models
(:class:`qkv.modern_decoder.ModernDecoderBlock`), part for part.
"""

from __future__ import annotations

import matplotlib.pyplot as plt

from qkv.figures._draw import arrow, box, canvas

__all__ = ["glance", "BLOCKS"]

#: Each block's sublayers from the bottom up (text, colour key), and what sits below it; the page's table and
#: ``glance`` both follow it.
BLOCKS = {
    "GPT-2's block (11.9)": {
        "parts": [
            ("LayerNorm", "norm"),
            ("multi-head attention\nH query, key and value heads", "attention"),
            ("+", "add"),
            ("LayerNorm", "norm"),
            ("Linear, GELU, Linear\nwidth 4N, with biases", "ffn"),
            ("+", "add"),
        ],
        "below": "token embedding + learned position table",
    },
    "the block of 2026": {
        "parts": [
            ("RMSNorm", "norm"),
            ("grouped-query attention\nH query heads share G key/value heads", "attention"),
            ("+", "add"),
            ("RMSNorm", "norm"),
            ("SwiGLU\nwidth 8N/3, no biases", "ffn"),
            ("+", "add"),
        ],
        "below": "token embedding (no position table)",
    },
}
_COLOURS = {"norm": "#eeeeee", "attention": "#ffe2b8", "add": "#ffffff", "ffn": "#cfe3ff", "below": "#d5f2d0"}


def glance():
    """The lab at a glance: GPT-2's decoder block and the block of 2026 side by side, bottom up, with the residual
    path around each sublayer, and on the new block the rotary positions and the key/value cache."""
    fig, ax = canvas((9.4, 5.6), (0, 18.8), (0, 11.2))
    for x, (title, block) in zip((3.9, 12.1), BLOCKS.items()):
        ys = [2.9 + 1.15 * i for i in range(len(block["parts"]))]
        ax.text(x, ys[-1] + 1.0, title, ha="center", fontsize=10, weight="bold")
        ax.add_patch(plt.Rectangle((x - 3.4, ys[0] - 0.7), 6.8, ys[-1] - ys[0] + 1.4, fc="none", ec="0.5", ls="--"))
        for (text, kind), y in zip(block["parts"], ys):
            wide = kind != "add"
            box(ax, x, y, 5.8 if wide else 0.7, 0.9 if wide else 0.7, text, _COLOURS[kind], fontsize=8)
        for y1, y2 in zip(ys, ys[1:]):
            arrow(ax, (x, y1 + 0.47), (x, y2 - 0.47), width=1.0)
        for start, end in ((0, 2), (3, 5)):  # the residual path around each sublayer
            arrow(ax, (x - 3.1, ys[start] - 0.6), (x - 0.4, ys[end]), width=1.0, color="0.55", rad=-0.3)
        box(ax, x, ys[0] - 1.5, 6.6, 0.75, block["below"], _COLOURS["below"], fontsize=8)
        arrow(ax, (x, ys[0] - 1.1), (x, ys[0] - 0.47), width=1.0)
    attention_y = 2.9 + 1.15
    ax.text(15.8, attention_y + 0.55, "rotary positions\non queries and keys", fontsize=8, ha="left", va="center")
    ax.text(15.8, attention_y - 0.55, "key/value cache of\nthe G shared heads", fontsize=8, ha="left", va="center")
    ax.text(9.4, 0.3, "N: the model's width. Both blocks: pre-norm, a residual path around each sublayer.",
            ha="center", fontsize=8.5, color="0.3")  # fmt: skip
    return fig
