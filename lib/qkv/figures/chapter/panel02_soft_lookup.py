"""Panel 2 of the chapter at a glance: queries, keys and values as a soft look-up (D2L 11.1, 11.2)."""

from __future__ import annotations

import torch

from qkv.figures.chapter._common import COLORS, check_lang, fonts, new_figure, title
from qkv.nadaraya_watson import nadaraya_watson

SECTION = "attention-pooling"

KEYS = (1.0, 2.0, 3.0, 4.0, 5.0)
VALUES = (2.0, 3.5, 1.0, 4.0, 2.5)
QUERY = 2.6
SIGMA = 0.8

TEXT = {
    "en": {
        "title": "2 · Queries, keys, values: a soft look-up",
        "xlabel": "keys $k_i$",
        "ylabel": r"weight $\alpha(q, k_i)$",
        "query": f"query $q = {QUERY}$",
        "value": "v",
        "dict": "a dictionary returns the one value whose key matches;",
        "soft": "attention returns a weighted sum of all values:",
    },
    "zh": {
        "title": "2 · 查询、键、值：软查找",
        "xlabel": "键 kᵢ",
        "ylabel": "权重 α(q, kᵢ)",
        "query": f"查询 q = {QUERY}",
        "value": "v",
        "dict": "字典只返回键完全匹配的那一个值；",
        "soft": "注意力返回所有值的加权和：",
    },
}


def lookup():
    """Nadaraya-Watson pooling (Gaussian kernel, width :data:`SIGMA`) of :data:`VALUES` at :data:`QUERY`:
    returns ``(weights (K,), output)``, where ``output = sum_i weights[i] * VALUES[i]``."""
    keys, values = torch.tensor(KEYS, dtype=torch.float64), torch.tensor(VALUES, dtype=torch.float64)
    y_hat, attention = nadaraya_watson(keys, values, torch.tensor([QUERY], dtype=torch.float64), "gaussian", SIGMA)
    return attention[0], float(y_hat[0])  # (1, K) -> (K,)


def draw(lang: str = "en", fig=None):
    """Draw panel 2 into ``fig`` (or a new figure) and return the figure."""
    t = TEXT[check_lang(lang)]
    w, out = lookup()
    with fonts(lang):
        fig = new_figure(fig)
        title(fig, t["title"])
        ax, note = fig.subplots(2, 1, height_ratios=[3, 1])
        bars = ax.bar(KEYS, w.numpy(), width=0.6, color=COLORS["key"], edgecolor="0.3")
        for bar, v, a in zip(bars, VALUES, w.tolist(), strict=True):
            ax.text(bar.get_x() + 0.3, a + 0.015, f"{t['value']}={v:g}\nα={a:.2f}", ha="center", fontsize=7)
        ax.axvline(QUERY, color="#2266cc", ls="--", lw=1.2)
        ax.text(QUERY + 0.08, float(w.max()) * 1.18, t["query"], color="#2266cc", fontsize=8)
        ax.set_ylim(0, float(w.max()) * 1.35)
        ax.set_xticks(KEYS)
        ax.set_xlabel(t["xlabel"])
        ax.set_ylabel(t["ylabel"])
        ax.spines[["top", "right"]].set_visible(False)
        note.axis("off")
        terms = " + ".join(f"{a:.2f}·{v:g}" for a, v in zip(w.tolist(), VALUES, strict=True))
        note.text(0, 0.95, t["dict"], fontsize=8, va="top", transform=note.transAxes)
        note.text(0, 0.6, t["soft"], fontsize=8, va="top", transform=note.transAxes)
        note.text(
            0,
            0.2,
            rf"$\sum_i \alpha(q, k_i)\, v_i$ = {terms} = {out:.2f}",
            fontsize=7.5,
            va="top",
            transform=note.transAxes,
            bbox=dict(fc=COLORS["output"], ec="0.5", boxstyle="round"),
        )
    return fig
