"""Panel 1 of the chapter at a glance: the question attention answers, and the chapter's path (D2L 11.1-11.9)."""

from __future__ import annotations

import torch

from qkv.attention import masked_softmax
from qkv.figures._draw import arrow, box
from qkv.figures.chapter._common import COLORS, canvas, check_lang, fonts, new_figure, title

SECTION = "queries-keys-values"

TEXT = {
    "en": {
        "title": "1 · Where should this token look?",
        "tokens": ["the", "animal", "didn't", "cross", "the", "street", "because", "it", "was", "tired"],
        "query": 7,
        "note": "illustrative weights: 'it' looks mostly at 'animal'",
        "path": "the chapter's path",
        "steps": [
            "attention pooling\n11.1-11.2",
            "scoring functions\n11.3",
            "Bahdanau\n11.4",
            "multi-head\n11.5",
            "self-attention\n11.6",
            "Transformer\n11.7",
            "ViT\n11.8",
            "pretraining\n11.9",
        ],
    },
    "zh": {
        "title": "1 · 这个词元该看向哪里？",
        "tokens": ["动物", "没有", "过", "马路", "，", "因为", "它", "太", "累", "了"],
        "query": 6,
        "note": "示意权重：“它”主要看向“动物”",
        "path": "本章的脉络",
        "steps": [
            "注意力汇聚\n11.1-11.2",
            "评分函数\n11.3",
            "Bahdanau 注意力\n11.4",
            "多头注意力\n11.5",
            "自注意力\n11.6",
            "Transformer\n11.7",
            "ViT\n11.8",
            "大规模预训练\n11.9",
        ],
    },
}

#: Hand-set scores of the query token against every token (the same in both languages: the antecedent scores
#: highest); the weights are their softmax.
SCORES = {
    "en": [0.2, 3.0, 0.3, 0.6, 0.1, 1.2, 0.4, 0.9, 0.5, 1.0],
    "zh": [3.0, 0.3, 0.4, 1.2, 0.0, 0.4, 0.9, 0.5, 1.0, 0.2],
}


def weights(lang: str = "en") -> torch.Tensor:
    """The query token's weights over the sentence's tokens: the softmax of :data:`SCORES` (T,)."""
    scores = torch.tensor(SCORES[check_lang(lang)])[None, None, :]  # (T,) -> (1, 1, T)
    return masked_softmax(scores)[0, 0]  # (1, 1, T) -> (T,)


def draw(lang: str = "en", fig=None):
    """Draw panel 1 into ``fig`` (or a new figure) and return the figure."""
    t = TEXT[check_lang(lang)]
    with fonts(lang):
        fig = new_figure(fig)
        title(fig, t["title"])
        ax = canvas(fig, xlim=(0, 10), ylim=(0, 8))
        w = weights(lang)
        xs = [0.5 + i for i in range(len(t["tokens"]))]
        q = t["query"]
        for i, (x, token) in enumerate(zip(xs, t["tokens"], strict=True)):
            ax.text(
                x,
                5.0,
                token,
                ha="center",
                va="center",
                fontsize=8,
                weight="bold" if i == q else "normal",
                bbox=dict(boxstyle="round,pad=0.2", fc=COLORS["query"] if i == q else "white", ec="0.6"),
            )
            ax.text(x, 4.3, f"{w[i]:.2f}", ha="center", fontsize=6.5, color="0.35")
            if i != q:
                rad = 0.5 if i < q else -0.5  # bend upwards, above the tokens
                arrow(ax, (xs[q], 5.35), (x, 5.35), width=0.3 + 6 * float(w[i]), color="#c0392b", rad=rad, style="-")
        ax.text(5, 3.75, t["note"], ha="center", fontsize=7, style="italic", color="0.3")
        ax.text(0.1, 3.05, t["path"], fontsize=8, weight="bold")
        for j, step in enumerate(t["steps"]):
            row, col = divmod(j, 4)
            x, y = 1.25 + 2.5 * col, 2.15 - 1.45 * row
            box(ax, x, y, 2.1, 1.0, step, COLORS["block"] if j < 4 else COLORS["output"], fontsize=7)
            if col:
                arrow(ax, (x - 1.45, y), (x - 1.05, y), width=1)
        arrow(ax, (8.75, 1.62), (1.25, 1.22), width=1, rad=0.08)
    return fig
