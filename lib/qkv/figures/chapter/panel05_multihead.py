"""Panel 5 of the chapter at a glance: multi-head attention, each head of a trained model reading its own
relation (D2L 11.5)."""

from __future__ import annotations

import functools

import torch

from qkv.figures._draw import arrow, box
from qkv.figures.chapter._common import COLORS, canvas, check_lang, fonts, new_figure, title

SECTION = "multihead-attention"

TEXT = {
    "en": {
        "title": "5 · Multi-head: several projections, several relations",
        "head": "head {h}: looks {o:+d}",
        "keys": "keys",
        "queries": "queries",
        "flow": ["X", "per head:\nown $W_q, W_k, W_v$\n+ attention", "concatenate", "$W_o$", "output"],
        "note": "the four heads of section 11.5's model, trained to read tokens at fixed offsets",
    },
    "zh": {
        "title": "5 · 多头注意力：多组投影，多种关系",
        "head": "头 {h}：看向 {o:+d}",
        "keys": "键",
        "queries": "查询",
        "flow": ["X", "每个头：\n各自的 W_q, W_k, W_v\n+ 注意力", "拼接", "$W_o$", "输出"],
        "note": "第 11.5 节的模型共四个头，训练后各自读取固定偏移处的词元",
    },
}


@functools.cache
def heads():
    """Each head's weights on one sequence of 11.5's offset task, ``(H, T, T)``, and each head's offset (key
    position minus query position) that gets the most weight over the task's evaluation batch, as a list.

    The model is :func:`qkv.recipes.offsets.trained_offset_reader` (cached by
    :mod:`qkv.recipes.weights`)."""
    from qkv.figures import multihead_attention as mh
    from qkv.recipes import offsets

    task = mh.OffsetTask()
    model = offsets.trained_offset_reader(task)
    X, _ = mh.offset_batch(task, 1, torch.Generator().manual_seed(task.seed + 7))  # (1, T)
    weights = mh.head_weights(model, X)[0]  # (1, H, T, T) -> (H, T, T)
    return weights.detach().clone(), [offset for offset, _ in mh.head_offsets(model, task)]


def draw(lang: str = "en", fig=None):
    """Draw panel 5 into ``fig`` (or a new figure) and return the figure."""
    t = TEXT[check_lang(lang)]
    weights, offsets = heads()
    with fonts(lang):
        fig = new_figure(fig)
        title(fig, t["title"])
        top, bottom = fig.subfigures(2, 1, height_ratios=[1.25, 1])
        axes = top.subplots(1, len(weights))
        for h, (ax, w) in enumerate(zip(axes, weights, strict=True)):
            ax.imshow(w.numpy(), cmap="Reds", vmin=0, vmax=1)
            ax.set_title(t["head"].format(h=h + 1, o=offsets[h]), fontsize=7)
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_xlabel(t["keys"], fontsize=7)
            if h == 0:
                ax.set_ylabel(t["queries"], fontsize=7)
        ax = canvas(bottom, xlim=(0, 10), ylim=(0, 3))
        xs = [0.6, 2.9, 5.4, 7.2, 9.0]
        widths = [0.8, 2.6, 1.7, 1.0, 1.3]
        colors = [COLORS["block"], COLORS["query"], COLORS["key"], COLORS["value"], COLORS["output"]]
        for i, (x, w, label, color) in enumerate(zip(xs, widths, t["flow"], colors, strict=True)):
            box(ax, x, 1.9, w, 1.3 if i == 1 else 0.8, label, color, fontsize=7)
            if i:
                arrow(ax, (xs[i - 1] + widths[i - 1] / 2 + 0.05, 1.9), (x - w / 2 - 0.05, 1.9), width=1)
        ax.text(5, 0.45, t["note"], ha="center", fontsize=7, style="italic", color="0.3", wrap=True)
    return fig
