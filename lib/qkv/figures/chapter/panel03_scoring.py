"""Panel 3 of the chapter at a glance: a scoring function in four steps, and why divide by sqrt(d) (D2L 11.3)."""

from __future__ import annotations

import math

import matplotlib
import numpy as np
import torch

from qkv.attention import masked_softmax
from qkv.figures.chapter._common import COLORS, check_lang, fonts, new_figure, title

SECTION = "attention-scoring-functions"

#: Sizes of the example: 3 queries, 5 keys of which the first 3 are valid, width d, values of width v.
Q, K, VALID, D, V = 3, 5, 3, 16, 4
DIMS = (4, 16, 64, 256)

TEXT = {
    "en": {
        "title": "3 · Score, mask, softmax, weighted sum",
        "steps": [r"1 score $QK^\top/\sqrt{d}$", "2 mask padding", "3 softmax", r"4 weighted sum $AV$"],
        "queries": "queries",
        "keys": "keys",
        "values": "features",
        "std": r"spread of $q^\top k$ (random $q, k$ in $\mathbb{R}^d$)",
        "raw": r"$q^\top k$: grows like $\sqrt{d}$",
        "scaled": r"$q^\top k/\sqrt{d}$: stays near 1",
        "why": r"dividing by $\sqrt{d}$ keeps softmax out of saturation",
    },
    "zh": {
        "title": "3 · 评分、掩蔽、softmax、加权求和",
        "steps": ["1 评分 QKᵀ/√d", "2 掩蔽填充", "3 softmax", "4 加权求和 AV"],
        "queries": "查询",
        "keys": "键",
        "values": "特征",
        "std": "qᵀk 的标准差（随机向量 q, k ∈ ℝᵈ）",
        "raw": "qᵀk：按 √d 增长",
        "scaled": "qᵀk/√d：保持在 1 附近",
        "why": "除以 √d，softmax 就不会饱和",
    },
}


def steps():
    """The four steps on one example (seed 0): a dict of ``scores`` (Q, K), ``masked`` (Q, K, NaN where masked),
    ``weights`` (Q, K) from :func:`qkv.attention.masked_softmax` and ``output`` (Q, V) = weights @ values."""
    g = torch.Generator().manual_seed(0)
    queries, keys = torch.randn(1, Q, D, generator=g), torch.randn(1, K, D, generator=g)  # (1, Q, d), (1, K, d)
    values = torch.randn(1, K, V, generator=g)  # (1, K, v)
    scores = queries @ keys.transpose(1, 2) / math.sqrt(D)  # (1, Q, d) @ (1, d, K) -> (1, Q, K)
    weights = masked_softmax(scores, torch.tensor([VALID]))  # (1, Q, K)
    masked = scores.clone()
    masked[..., VALID:] = float("nan")
    return {
        "scores": scores[0],
        "masked": masked[0],
        "weights": weights[0],
        "output": (weights @ values)[0],  # (1, Q, K) @ (1, K, v) -> (1, Q, v) -> (Q, v)
    }


def spreads(samples: int = 4000):
    """The standard deviation of ``q^T k`` and of ``q^T k / sqrt(d)`` over ``samples`` random pairs of N(0, I)
    vectors, for each d of :data:`DIMS`: two lists."""
    g = torch.Generator().manual_seed(1)
    raw, scaled = [], []
    for d in DIMS:
        dots = (torch.randn(samples, d, generator=g) * torch.randn(samples, d, generator=g)).sum(1)  # (S, d) -> (S,)
        raw.append(float(dots.std()))
        scaled.append(float(dots.std() / math.sqrt(d)))
    return raw, scaled


def draw(lang: str = "en", fig=None):
    """Draw panel 3 into ``fig`` (or a new figure) and return the figure."""
    t = TEXT[check_lang(lang)]
    s = steps()
    with fonts(lang):
        fig = new_figure(fig)
        title(fig, t["title"])
        top, bottom = fig.subfigures(2, 1, height_ratios=[1.1, 1])
        axes = top.subplots(1, 4, width_ratios=[K, K, K, V])
        cmap = matplotlib.colormaps["RdBu_r"].with_extremes(bad=COLORS["mask"])
        shown = [s["scores"], s["masked"], s["weights"], s["output"]]
        for i, (ax, data, name) in enumerate(zip(axes, shown, t["steps"], strict=True)):
            a = np.ma.masked_invalid(data.numpy())
            lim = float(np.nanmax(np.abs(data.numpy())))
            ax.imshow(a, cmap="Reds" if i == 2 else cmap, vmin=0 if i == 2 else -lim, vmax=lim if i != 2 else 1)
            ax.set_title(name, fontsize=7.5)
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_xlabel(t["values"] if i == 3 else t["keys"], fontsize=7)
            if i == 0:
                ax.set_ylabel(t["queries"], fontsize=7)
            if i == 2:
                for (r, c), value in np.ndenumerate(data.numpy()):
                    ax.text(c, r, f"{value:.2f}"[1:] if value < 1 else "1", ha="center", va="center", fontsize=5.5)
        ax = bottom.subplots()
        raw, scaled = spreads()
        ax.plot(DIMS, raw, "o-", color="#c0392b", label=t["raw"])
        ax.plot(DIMS, scaled, "s-", color="#2266cc", label=t["scaled"])
        ax.set_xscale("log", base=2)
        ax.set_xticks(DIMS, [str(d) for d in DIMS])
        ax.set_xlabel("d")
        ax.set_title(t["std"], fontsize=7.5)
        ax.legend(fontsize=7, frameon=False, loc="upper left")
        ax.text(0.02, 0.42, t["why"], transform=ax.transAxes, ha="left", fontsize=7, style="italic")
        ax.spines[["top", "right"]].set_visible(False)
    return fig
