"""Panel 9 of the chapter at a glance: the encoder-decoder, and what its masks hide (D2L 11.7; masks of 11.9)."""

from __future__ import annotations

import torch

from qkv.figures._draw import arrow, box
from qkv.figures.chapter._common import COLORS, check_lang, fonts, new_figure, title
from qkv.figures.chapter._masks import show_mask
from qkv.pretraining import encoder_decoder_masks

SECTION = "transformer"
#: A source of T_SRC positions of which SRC_VALID are tokens (the rest padding), a target of T_TGT positions.
T_SRC, SRC_VALID, T_TGT = 6, 4, 5

TEXT = {
    "en": {
        "title": "9 · Encoder-decoder: masked self-attention, cross-attention",
        "encoder": "encoder\nself-attention\n(sees all)",
        "masked": "masked\nself-attention",
        "cross": "cross-attention\n(keys: encoder)",
        "ffn": "FFN",
        "decoder": "decoder",
        "self_mask": "decoder self-attention:\nthe future is hidden",
        "cross_mask": "cross-attention:\nthe padding is hidden",
        "src": ["x1", "x2", "x3", "<eos>", "pad", "pad"],
        "tgt": ["<bos>", "y1", "y2", "y3", "y4"],
        "legend": "blue: may attend   grey: hidden by the mask",
    },
    "zh": {
        "title": "9 · 编码器-解码器：掩蔽自注意力与交叉注意力",
        "encoder": "编码器\n自注意力\n（看得见全部）",
        "masked": "掩蔽\n自注意力",
        "cross": "交叉注意力\n（键来自编码器）",
        "ffn": "前馈网络",
        "decoder": "解码器",
        "self_mask": "解码器自注意力：\n掩蔽未来的词元",
        "cross_mask": "交叉注意力：\n掩蔽填充",
        "src": ["x1", "x2", "x3", "<eos>", "pad", "pad"],
        "tgt": ["<bos>", "y1", "y2", "y3", "y4"],
        "legend": "蓝色：可以关注   灰色：被掩码掩蔽",
    },
}


def masks():
    """The decoder's self-attention mask (T_TGT, T_TGT) and the cross-attention mask (T_TGT, T_SRC) of one example,
    from :func:`qkv.pretraining.encoder_decoder_masks` with SRC_VALID valid source positions."""
    m = encoder_decoder_masks(T_SRC, T_TGT, torch.tensor([SRC_VALID]), torch.tensor([T_TGT]))  # a batch of one
    return m.decoder[0], m.cross[0]  # (1, T_tgt, T_tgt), (1, T_tgt, T_src) -> the example's own


def draw(lang: str = "en", fig=None):
    """Draw panel 9 into ``fig`` (or a new figure) and return the figure."""
    t = TEXT[check_lang(lang)]
    dec, cross = masks()
    with fonts(lang):
        fig = new_figure(fig)
        title(fig, t["title"])
        left, right = fig.subfigures(1, 2, width_ratios=[1, 1.05])
        ax = left.add_subplot()
        ax.set_xlim(0, 5)
        ax.set_ylim(0, 8)
        ax.axis("off")
        box(ax, 1.2, 3.0, 2.2, 1.4, t["encoder"], COLORS["key"], fontsize=6)
        for y, label, color in (
            (1.8, t["masked"], COLORS["query"]),
            (3.8, t["cross"], COLORS["value"]),
            (5.5, t["ffn"], COLORS["block"]),
        ):
            box(ax, 3.8, y, 2.0, 1.1 if y < 5 else 0.6, label, color, fontsize=6.5)
        arrow(ax, (3.8, 2.37), (3.8, 3.23), width=1)
        arrow(ax, (3.8, 4.37), (3.8, 5.18), width=1)
        arrow(ax, (2.2, 3.2), (2.78, 3.8), width=1.2, color="#c0392b")
        ax.text(3.8, 6.3, t["decoder"], ha="center", fontsize=7.5, weight="bold")
        ax.text(0.0, 0.3, t["legend"], fontsize=6.2)
        a1, a2 = right.subplots(2, 1)
        show_mask(a1, dec, t["tgt"], t["tgt"], t["self_mask"], fontsize=6.5)
        show_mask(a2, cross, t["src"], t["tgt"], t["cross_mask"], fontsize=6.5)
    return fig
