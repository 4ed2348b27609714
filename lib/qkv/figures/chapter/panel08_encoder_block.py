"""Panel 8 of the chapter at a glance: the Transformer encoder block, with its parameter counts taken from
qkv.transformer at D2L's sizes (D2L 11.7)."""

from __future__ import annotations

from matplotlib.patches import FancyBboxPatch

from qkv.figures._draw import arrow, box
from qkv.figures.chapter._common import COLORS, canvas, check_lang, fonts, new_figure, title

SECTION = "transformer"
#: D2L 11.7's encoder sizes: width 256, FFN hidden 64, 4 heads.
NUM_HIDDENS, FFN_NUM_HIDDENS, NUM_HEADS = 256, 64, 4

TEXT = {
    "en": {
        "title": "8 · The encoder block",
        "input": "embeddings + positional encoding",
        "attention": "multi-head self-attention",
        "addnorm": "add & LayerNorm",
        "ffn": "position-wise FFN",
        "output": "to the next block (× n)",
        "mix": "mixes information\nacross tokens",
        "each": "transforms each\ntoken on its own",
        "residual": "residual paths\nand LayerNorm\nkeep deep stacks\ntrainable",
        "params": "parameters at D2L's sizes (d = {d}):\nattention {a:,}, FFN {f:,}, norms {n:,}",
    },
    "zh": {
        "title": "8 · 编码器块",
        "input": "词嵌入 + 位置编码",
        "attention": "多头自注意力",
        "addnorm": "残差相加 & 层规范化",
        "ffn": "基于位置的前馈网络",
        "output": "送入下一个块（× n）",
        "mix": "在词元之间\n交换信息",
        "each": "对每个词元\n单独变换",
        "residual": "残差连接\n与层规范化\n让深层堆叠\n仍可训练",
        "params": "按 D2L 的规模（d = {d}）的参数量：\n注意力 {a:,}，前馈网络 {f:,}，规范化 {n:,}",
    },
}


def parameter_counts() -> dict[str, int]:
    """Parameters of :class:`qkv.transformer.TransformerEncoderBlock` at D2L's sizes, by part:
    ``attention``, ``ffn`` and ``norms``."""
    from qkv.transformer import TransformerEncoderBlock

    block = TransformerEncoderBlock(NUM_HIDDENS, FFN_NUM_HIDDENS, NUM_HEADS, 0.0)
    counts = {"attention": 0, "ffn": 0, "norms": 0}
    for name, p in block.named_parameters():
        part = "attention" if name.startswith("attention") else "ffn" if name.startswith("ffn") else "norms"
        counts[part] += p.numel()
    return counts


def draw(lang: str = "en", fig=None):
    """Draw panel 8 into ``fig`` (or a new figure) and return the figure."""
    t = TEXT[check_lang(lang)]
    counts = parameter_counts()
    with fonts(lang):
        fig = new_figure(fig)
        title(fig, t["title"])
        ax = canvas(fig, xlim=(0, 10), ylim=(0, 8))
        x = 5.0
        layers = [
            (0.6, t["input"], COLORS["block"]),
            (1.9, t["attention"], COLORS["query"]),
            (3.0, t["addnorm"], "#fff6c8"),
            (4.3, t["ffn"], COLORS["value"]),
            (5.4, t["addnorm"], "#fff6c8"),
            (6.6, t["output"], COLORS["block"]),
        ]
        for i, (y, label, color) in enumerate(layers):
            box(ax, x, y, 4.0, 0.7, label, color, fontsize=7.5)
            if i:
                arrow(ax, (x, layers[i - 1][0] + 0.37), (x, y - 0.37), width=1)
        # Residual connections: around the attention and around the FFN.
        for start, end in ((1.2, 3.0), (3.5, 5.4)):
            arrow(ax, (x - 2.0, start), (x - 2.0, end), width=1, color="#8e44ad", rad=0.6)
        ax.add_patch(FancyBboxPatch((2.5, 1.35), 5.0, 4.55, boxstyle="round,pad=0.05", fc="none", ec="0.5", ls="--"))
        ax.text(7.6, 5.75, "× n", fontsize=9, weight="bold")
        ax.text(7.65, 1.9, t["mix"], fontsize=7, va="center")
        ax.text(7.65, 4.3, t["each"], fontsize=7, va="center")
        ax.text(0.05, 3.6, t["residual"], fontsize=6.5, va="center", color="#8e44ad")
        ax.text(
            5,
            7.55,
            t["params"].format(d=NUM_HIDDENS, a=counts["attention"], f=counts["ffn"], n=counts["norms"]),
            ha="center",
            va="center",
            fontsize=7,
        )
    return fig
