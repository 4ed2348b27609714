"""Panel 7 of the chapter at a glance: the sinusoidal positional encoding of qkv.positional (D2L 11.6.3)."""

from __future__ import annotations

from qkv.figures.chapter._common import check_lang, fonts, new_figure, title
from qkv.positional import PositionalEncoding

SECTION = "self-attention-and-positional-encoding"
#: The table shown: positions 0..T-1, encoding width N, and the columns drawn as curves (D2L's 6 to 9).
T, N, COLUMNS = 60, 32, (6, 7, 8, 9)

TEXT = {
    "en": {
        "title": "7 · Positional encoding: sines and cosines at many frequencies",
        "position": "position i",
        "dimension": "encoding dimension j",
        "column": "column {j}",
        "curves": "low columns change fast, high columns slowly",
    },
    "zh": {
        "title": "7 · 位置编码：多种频率的正弦与余弦",
        "position": "位置 i",
        "dimension": "编码维度 j",
        "column": "第 {j} 列",
        "curves": "低维列变化快，高维列变化慢",
    },
}


def table():
    """The encoding table, ``PositionalEncoding(N, max_len=T).P[0]``, shape (T, N)."""
    return PositionalEncoding(N, max_len=T).P[0]  # (1, T, N) -> (T, N)


def draw(lang: str = "en", fig=None):
    """Draw panel 7 into ``fig`` (or a new figure) and return the figure."""
    t = TEXT[check_lang(lang)]
    P = table()
    with fonts(lang):
        fig = new_figure(fig)
        title(fig, t["title"])
        heat, curves = fig.subplots(1, 2, width_ratios=[1, 1.3])
        image = heat.imshow(P.numpy(), cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto")
        heat.set_xlabel(t["dimension"])
        heat.set_ylabel(t["position"])
        fig.colorbar(image, ax=heat, shrink=0.6, location="bottom")
        for j in COLUMNS:
            curves.plot(range(T), P[:, j].numpy(), label=t["column"].format(j=j))
        curves.set_xlabel(t["position"])
        curves.legend(fontsize=6.5, frameon=False, loc="lower left", ncols=2)
        curves.set_ylim(-1.5, 1.2)
        curves.set_title(t["curves"], fontsize=7.5)
        curves.spines[["top", "right"]].set_visible(False)
    return fig
