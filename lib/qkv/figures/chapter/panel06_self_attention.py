"""Panel 6 of the chapter at a glance: self-attention links any two tokens in one step, at O(n^2 d) cost, timed
with the lab's code when the panel is drawn (D2L 11.6; the attention-cost lab)."""

from __future__ import annotations

import functools

from qkv.figures._draw import arrow
from qkv.figures.chapter._common import COLORS, check_lang, fonts, new_figure, title

SECTION = "self-attention-and-positional-encoding"
#: The sweep: sequence lengths n at width d, one batch, CPU time of one thread (the lab's clock on a CPU).
SIZES, WIDTH = (256, 512, 1024, 2048, 4096), 64

TEXT = {
    "en": {
        "title": "6 · Self-attention: every pair one step apart, at O(n²d) cost",
        "sa": "self-attention: any two tokens, 1 step",
        "rnn": "RNN: first to last, n − 1 steps",
        "xlabel": "sequence length n",
        "ylabel": "CPU time per call (ms)",
        "fit": "{name}: time ∝ n^{k:.2f}",
        "measured": "measured now with qkv.costlab (d = {d}, one CPU thread)",
    },
    "zh": {
        "title": "6 · 自注意力：任意两词元相隔一步，代价 O(n²d)",
        "sa": "自注意力：任意两个词元，1 步",
        "rnn": "RNN：从首到尾，n − 1 步",
        "xlabel": "序列长度 n",
        "ylabel": "每次调用的 CPU 时间（毫秒）",
        "fit": "{name}：时间 ∝ n^{k:.2f}",
        "measured": "用 qkv.costlab 现场测得（d = {d}，单个 CPU 线程）",
    },
}


@functools.cache
def measure():
    """Time 11.3's attention and a GRU over :data:`SIZES` with the lab's :func:`qkv.costlab.run_sweep` (CPU, one
    thread, median of 5 calls) and fit ``t = c n^k`` to the larger half of each: ``(rows, fits)``."""
    from qkv import costlab

    wanted = ("ours (11.3)", "GRU")
    candidates = [c for c in costlab.contenders("cpu") if c.name in wanted]
    rows = costlab.run_sweep(candidates, list(SIZES), WIDTH, device="cpu", repeats=5, memory=False)
    return rows, costlab.fit_sweep(rows)


def draw(lang: str = "en", fig=None, measured=None):
    """Draw panel 6 into ``fig`` (or a new figure) and return the figure; ``measured`` is ``(rows, fits)`` as
    :func:`measure` returns them (default: measured once per process)."""
    t = TEXT[check_lang(lang)]
    rows, fits = measured if measured is not None else measure()
    with fonts(lang):
        fig = new_figure(fig)
        title(fig, t["title"])
        left, right = fig.subplots(1, 2, width_ratios=[1, 1.25])
        left.set_xlim(0, 6)
        left.set_ylim(0, 6)
        left.axis("off")
        xs = [0.5 + i for i in range(6)]
        for i, x in enumerate(xs):
            for j in range(i + 1, 6):
                arrow(left, (x, 4.1), (xs[j], 4.1), width=0.6, color="#c0392b", style="-", rad=-0.45)
            left.add_patch(_node((x, 4.1), COLORS["query"]))
            left.add_patch(_node((x, 1.4), COLORS["key"]))
            if i:
                arrow(left, (xs[i - 1] + 0.22, 1.4), (x - 0.22, 1.4), width=1)
        left.text(3, 2.9, t["sa"], ha="center", fontsize=7)
        left.text(3, 0.3, t["rnn"], ha="center", fontsize=7)
        colors = {"ours (11.3)": "#c0392b", "GRU": "#2266cc"}
        for name, color in colors.items():
            pts = [r for r in rows if r["name"] == name and r["status"] == "ok"]
            right.plot(
                [r["n"] for r in pts],
                [r["time_ms"] for r in pts],
                "o-",
                color=color,
                label=t["fit"].format(name=name, k=fits[name][1]) if name in fits else name,
            )
        right.set_xscale("log", base=2)
        right.set_yscale("log")
        right.set_xlabel(t["xlabel"])
        right.set_ylabel(t["ylabel"])
        right.legend(fontsize=6.5, frameon=False, loc="upper left")
        right.set_title(t["measured"].format(d=WIDTH), fontsize=6.5, style="italic")
        right.spines[["top", "right"]].set_visible(False)
    return fig


def _node(xy, color):
    from matplotlib.patches import Circle

    return Circle(xy, 0.22, fc=color, ec="0.3", lw=0.8)
