"""Panel 10 of the chapter at a glance: one block, four uses: BERT, T5, GPT and ViT as attention masks and
objectives, with the masks of qkv.pretraining (D2L 11.8, 11.9)."""

from __future__ import annotations

import torch

from qkv.figures.chapter._common import check_lang, fonts, new_figure, title
from qkv.figures.chapter._masks import show_mask
from qkv.pretraining import bidirectional_mask, causal_mask, encoder_decoder_masks

SECTION = "large-pretraining-transformers"
T_BERT, T_SRC, T_TGT, T_GPT, PATCHES = 6, 4, 3, 6, 4

TEXT = {
    "en": {
        "title": "10 · One block, four uses",
        "names": {
            "BERT": "BERT\n(encoder only)",
            "T5": "T5\n(encoder-decoder)",
            "GPT": "GPT\n(decoder only)",
            "ViT": "ViT\n(on patches)",
        },
        "goals": {
            "BERT": "predict masked tokens\nfrom both sides",
            "T5": "input both ways,\noutput left to right",
            "GPT": "predict the next token",
            "ViT": "classify the image\nfrom <cls>",
        },
        "bert": ["<cls>", "the", "[M]", "sat", "on", "<sep>"],
        "patch": "p{i}",
    },
    "zh": {
        "title": "10 · 同一个块，四种用法",
        "names": {
            "BERT": "BERT\n（仅编码器）",
            "T5": "T5\n（编码器-解码器）",
            "GPT": "GPT\n（仅解码器）",
            "ViT": "ViT\n（图像块）",
        },
        "goals": {
            "BERT": "由两侧上下文\n预测被掩蔽的词元",
            "T5": "输入双向读取，\n输出从左到右",
            "GPT": "预测下一个词元",
            "ViT": "用 <cls> 的输出\n对图像分类",
        },
        "bert": ["<cls>", "猫", "[M]", "在", "垫子", "<sep>"],
        "patch": "块{i}",
    },
}


def masks() -> dict[str, torch.Tensor]:
    """The four patterns, each (Q, K) with True where a query may attend to a key: BERT's
    :func:`~qkv.pretraining.bidirectional_mask`, T5's encoder, cross and decoder masks of
    :func:`~qkv.pretraining.encoder_decoder_masks` joined into one (T_SRC + T_TGT) square (the encoder's
    positions first; an encoder position never sees the decoder's), GPT's
    :func:`~qkv.pretraining.causal_mask` and ViT's bidirectional mask over <cls> and the patches."""
    m = encoder_decoder_masks(T_SRC, T_TGT)
    top = torch.cat([m.encoder, torch.zeros(T_SRC, T_TGT, dtype=torch.bool)], dim=1)  # (S, S) | (S, T) -> (S, S+T)
    bottom = torch.cat([m.cross, m.decoder], dim=1)  # (T, S) | (T, T) -> (T, S+T)
    return {
        "BERT": bidirectional_mask(T_BERT),
        "T5": torch.cat([top, bottom], dim=0),  # (S, S+T) over (T, S+T) -> (S+T, S+T)
        "GPT": causal_mask(T_GPT),
        "ViT": bidirectional_mask(PATCHES + 1),
    }


def draw(lang: str = "en", fig=None):
    """Draw panel 10 into ``fig`` (or a new figure) and return the figure."""
    t = TEXT[check_lang(lang)]
    ms = masks()
    labels = {
        "BERT": t["bert"],
        "T5": [f"x{i}" for i in range(1, T_SRC + 1)] + [f"y{i}" for i in range(1, T_TGT + 1)],
        "GPT": [f"t{i}" for i in range(1, T_GPT + 1)],
        "ViT": ["<cls>"] + [t["patch"].format(i=i) for i in range(1, PATCHES + 1)],
    }
    with fonts(lang):
        fig = new_figure(fig)
        title(fig, t["title"])
        axes = fig.subplots(1, 4)
        for ax, name in zip(axes, ms, strict=True):
            show_mask(ax, ms[name], labels[name], labels[name], t["names"][name], fontsize=6.5)
            ax.set_xlabel(t["goals"][name], fontsize=6.3)
    return fig
