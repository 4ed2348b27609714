"""The figures of D2L 11.9, Large-Scale Pretraining with Transformers; ``glance()`` opens the section.

- :func:`glance`: the attention masks of the three families (and the prefix LM), queries down, keys across;
- :data:`MODEL_SCALES` and :func:`plot_model_scales`: published models' parameters and training tokens;
- :func:`plot_perplexity` and :func:`plot_scaling`: the section's experiments;
- :data:`PIPELINE` and :func:`post_training_pipeline`: pretraining, instruction tuning and preference tuning (RLHF or
  DPO), each stage's data and what it optimises.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
from matplotlib.colors import ListedColormap

from qkv import pretraining
from qkv.figures._draw import arrow, box, canvas

__all__ = [
    "glance",
    "MODEL_SCALES",
    "model_scale_rows",
    "plot_model_scales",
    "plot_scaling",
    "plot_perplexity",
    "PIPELINE",
    "post_training_pipeline",
]

_KEEP = ListedColormap(["#f4f4f4", "#2c7fb8"])


def _mask_panel(ax, mask, title, xlabel="keys", ylabel="queries", split=None):
    ax.imshow(mask.int().numpy(), cmap=_KEEP, vmin=0, vmax=1)
    Q, K = mask.shape
    ax.set_xticks(range(K))
    ax.set_yticks(range(Q))
    ax.tick_params(labelsize=7, length=0)
    ax.set_xticks([k - 0.5 for k in range(K + 1)], minor=True)
    ax.set_yticks([q - 0.5 for q in range(Q + 1)], minor=True)
    ax.grid(which="minor", color="white", lw=1.5)
    if split is not None:
        ax.axvline(split - 0.5, color="#c0392b", lw=1.5, ls="--")
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(xlabel, fontsize=8)
    ax.set_ylabel(ylabel, fontsize=8)


def glance(T=6, valid_len=5, prefix_len=3, T_tgt=4):
    """D2L 11.9 at a glance: who may attend to whom in BERT, T5 and GPT, and in a prefix LM.

    Five boolean masks (blue: the query in the row may attend to the key in the column) built by
    :mod:`qkv.pretraining`: BERT's bidirectional mask over a sequence of ``valid_len`` tokens padded to ``T``; T5's
    decoder self-attention (causal, ``T_tgt`` outputs) and cross-attention (every output on every valid input);
    GPT's causal mask; a prefix LM's mask with a prefix of ``prefix_len``. Returns the figure.
    """
    enc, dec, cross = pretraining.encoder_decoder_masks(T, T_tgt, [valid_len])
    panels = [
        (pretraining.bidirectional_mask(T, [valid_len])[0], "encoder-only (BERT)\nbidirectional, 1 pad", {}),
        (dec, "encoder-decoder (T5)\ndecoder: causal", {}),
        (cross[0], "encoder-decoder (T5)\ncross: all inputs", {"xlabel": "input keys", "ylabel": "output queries"}),
        (pretraining.causal_mask(T), "decoder-only (GPT)\ncausal", {}),
        (pretraining.prefix_lm_mask(T, prefix_len), f"prefix LM\nprefix of {prefix_len}", {"split": prefix_len}),
    ]
    fig, axes = plt.subplots(1, len(panels), figsize=(10, 2.6))
    for ax, (mask, title, kw) in zip(axes, panels):
        _mask_panel(ax, mask, title, **kw)
    fig.tight_layout()
    return fig


#: Published models: (name, family, parameters, training tokens or None, source). Tokens are those seen in
#: pretraining (steps x batch x sequence length where the paper gives them), not the size of the corpus.
MODEL_SCALES = (
    (
        "BERT-large",
        "encoder-only",
        340e6,
        131e9,
        "Devlin et al. (2019), appendix A.2: 1M steps x 256 x 512 tokens, at most (90% of steps at 128)",
    ),
    (
        "RoBERTa-large",
        "encoder-only",
        355e6,
        2.1e12,
        "Liu et al. (2019), section 5 and table 4: 500K steps x 8K x 512 tokens, at most",
    ),
    (
        "T5-11B",
        "encoder-decoder",
        11e9,
        1e12,
        "Raffel et al. (2020), section 3.7: about 1 trillion tokens (1M steps x 2^11 x 512)",
    ),
    (
        "GPT-2",
        "decoder-only",
        1.5e9,
        None,
        "Radford et al. (2019), section 2.1: WebText, 40 GB of text; tokens not stated",
    ),
    ("GPT-3", "decoder-only", 175e9, 300e9, "Brown et al. (2020), tables 2.1 and 2.2: 300 billion tokens"),
    ("Chinchilla", "decoder-only", 70e9, 1.4e12, "Hoffmann et al. (2022), table 1: 1.4 trillion tokens"),
    ("PaLM", "decoder-only", 540e9, 780e9, "Chowdhery et al. (2022), table 1 and section 3: 780 billion tokens"),
)


def model_scale_rows():
    """:data:`MODEL_SCALES` as dicts with ``tokens_per_param`` (None where the tokens are not published)."""
    return [
        dict(name=n, family=f, params=p, tokens=t, tokens_per_param=None if t is None else t / p, source=s)
        for n, f, p, t, s in MODEL_SCALES
    ]


_FAMILY_COLOR = {"encoder-only": "#2c7fb8", "encoder-decoder": "#f39c12", "decoder-only": "#c0392b"}


def plot_model_scales(rows=None, ours=None):
    """Training tokens against parameters, log-log, with the lines of 1 and 20 tokens per parameter (Chinchilla's
    compute-optimal ratio is about 20). ``ours``: optional ``(name, params, tokens)`` of the section's own model."""
    rows = model_scale_rows() if rows is None else rows
    fig, ax = plt.subplots(figsize=(6, 4))
    for r in rows:
        if r["tokens"] is None:
            continue
        ax.scatter(r["params"], r["tokens"], color=_FAMILY_COLOR[r["family"]], zorder=3)
        ax.annotate(
            f"{r['name']}\n{r['tokens_per_param']:.0f} tok/param",
            (r["params"], r["tokens"]),
            fontsize=7,
            xytext=(-12, -24) if r["name"] == "PaLM" else (4, -10),
            textcoords="offset points",
        )
    if ours is not None:
        name, p, t = ours
        ax.scatter(p, t, color="k", marker="*", s=80, zorder=3)
        ax.annotate(f"{name}\n{t / p:.0f} tok/param", (p, t), fontsize=7, xytext=(4, -10), textcoords="offset points")
    xs = [1e4, 1e12]
    for ratio, style in ((1, ":"), (20, "--")):
        ax.plot(xs, [ratio * x for x in xs], style, color="0.5", lw=1, label=f"{ratio} token(s) per parameter")
    for fam, color in _FAMILY_COLOR.items():
        ax.scatter([], [], color=color, label=fam)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(3e4, 2e12)
    ax.set_ylim(1e6, 1e13)
    ax.set_xlabel("parameters")
    ax.set_ylabel("training tokens")
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    return fig


def plot_scaling(rows, a, alpha):
    """Held-out loss against the non-embedding parameters N (Kaplan et al.'s letter; log-log) with the fitted power
    law ``a * N ** -alpha``; each point is labelled with its width (``num_hiddens``) and its number of blocks."""
    fig, ax = plt.subplots(figsize=(5, 3.4))
    sizes = [r["params"] for r in rows]
    losses = [r["val_loss"] for r in rows]
    ax.scatter(sizes, losses, color="#c0392b", zorder=3, label="our GPTs (one budget of tokens)")
    for r in rows:
        blocks = "block" if r["num_blks"] == 1 else "blocks"
        ax.annotate(
            f"{r['num_hiddens']} units, {r['num_blks']} {blocks}",
            (r["params"], r["val_loss"]),
            fontsize=7,
            xytext=(4, 4),
            textcoords="offset points",
        )
    lo, hi = min(sizes) / 1.5, max(sizes) * 1.5
    xs = [lo * (hi / lo) ** (i / 50) for i in range(51)]
    ax.plot(xs, [a * x**-alpha for x in xs], "--", color="0.3", label=rf"fit: ${a:.2f}\,N^{{-{alpha:.3f}}}$")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("non-embedding parameters N")
    ax.set_ylabel("held-out loss (nats per character)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_perplexity(table):
    """Bars of held-out perplexity, one per model: ``table`` is a list of (name, perplexity)."""
    fig, ax = plt.subplots(figsize=(5, 2.6))
    names = [n for n, _ in table]
    values = [p for _, p in table]
    ax.barh(names, values, color=["0.6", "#f39c12", "#c0392b"][: len(values)])
    for i, v in enumerate(values):
        ax.text(v + 0.1, i, f"{v:.2f}", va="center", fontsize=8)
    ax.set_xlim(0, max(values) * 1.2 if values and math.isfinite(max(values)) else 1)
    ax.set_xlabel("held-out perplexity (characters; lower is better)")
    fig.tight_layout()
    return fig


#: The three stages after which a pretrained decoder-only model becomes an assistant (D2L 11.9.3.2 and 11.9.5):
#: each stage's name, its data, what it optimises (lines of text and mathtext), and the model it leaves. The third
#: stage has two routes: RLHF (a reward model fitted to the preferences, then PPO against it; Christiano et al.,
#: 2017; Ouyang et al., 2022) and DPO (the same preferences, no reward model; Rafailov et al., 2023). Bold ``x`` is
#: the prompt (or instruction), bold ``y`` a response, ``y^+`` the preferred one and ``y^-`` the rejected one, ``pi``
#: the model being tuned and ``pi_ref`` the model of stage 2, frozen (the page's letters).
PIPELINE = (
    dict(
        stage="1. pretraining",
        data="raw text",
        optimises=["next-token loss", "on every token", r"$-\log p(x_{t+1} \mid x_1, \ldots, x_t)$"],
        model="base model",
    ),
    dict(
        stage="2. supervised instruction tuning",
        data="(instruction, response) pairs",
        optimises=["next-token loss", "on the response's tokens only", r"$-\log \pi(\mathbf{y} \mid \mathbf{x})$"],
        model="instruction-tuned model",
    ),
    dict(
        stage="3. preference tuning",
        data="(prompt, preferred, rejected) triples",
        routes=(
            (
                "RLHF",
                [
                    "1. fit a reward model r to them:",
                    r"$-\log \sigma(r(\mathbf{x}, \mathbf{y}^+) - r(\mathbf{x}, \mathbf{y}^-))$",
                    "2. PPO: maximise the reward,",
                    "staying near the SFT model:",
                    r"$r(\mathbf{x}, \mathbf{y}) - \beta\, \mathrm{KL}(\pi \,\|\, \pi_{\mathrm{ref}})$",
                ],
            ),
            (
                "DPO",
                [
                    "no reward model, no sampling:",
                    "one classification-like loss",
                    r"$-\log \sigma(\beta\, h(\mathbf{y}^+) - \beta\, h(\mathbf{y}^-))$",
                    r"$h(\mathbf{y}) = \log \pi(\mathbf{y} \mid \mathbf{x})"
                    r" - \log \pi_{\mathrm{ref}}(\mathbf{y} \mid \mathbf{x})$",
                ],
            ),
        ),
        model="preference-tuned model",
    ),
)


def post_training_pipeline(stages=PIPELINE):
    """From raw text to an assistant in three stages (D2L 11.9.3.2, 11.9.5): one column per stage of ``stages``
    (:data:`PIPELINE`), its title on top, then its data (green), what it optimises (orange; the third stage's two
    routes, RLHF and DPO, side by side) and the model it leaves (blue). Arrows go from the data to what is optimised
    to the model, and along the bottom from each stage's model to the next: each stage starts from the model the
    previous one left. Returns the figure."""
    fig, ax = canvas((12.0, 5.0), (0, 24.0), (0, 10.0))
    green, orange, blue = "#d5f2d0", "#ffe2b8", "#cfe3ff"
    columns, widths = (3.0, 9.3, 18.1), (5.4, 6.0, 10.8)
    model_w = 5.0
    for x, w, stage in zip(columns, widths, stages):
        ax.text(x, 9.4, stage["stage"], ha="center", fontsize=10.5, weight="bold")
        box(ax, x, 8.2, w, 0.9, stage["data"], green, fontsize=9)
        routes = stage.get("routes") or (("", stage["optimises"]),)
        gap = 0.3
        route_w = (w - gap * (len(routes) - 1)) / len(routes)
        for k, (name, lines) in enumerate(routes):
            rx = x - w / 2 + route_w / 2 + k * (route_w + gap)
            box(ax, rx, 5.0, route_w, 3.7, "\n".join(lines), orange, fontsize=8.5)
            if name:  # the route's name, bold, above its lines
                ax.text(rx, 6.45, name, ha="center", va="center", fontsize=9.5, weight="bold")
            arrow(ax, (rx, 7.7), (rx, 6.95))
            arrow(ax, (rx, 3.05), (x + (rx - x) * 0.3, 2.05))
        box(ax, x, 1.5, model_w, 0.9, stage["model"], blue, fontsize=9)
    for x1, x2 in zip(columns, columns[1:]):
        arrow(ax, (x1 + model_w / 2 + 0.15, 1.5), (x2 - model_w / 2 - 0.15, 1.5), width=1.4)
    ax.text(
        12.0,
        0.3,
        "prompting (in-context learning) uses the model of any stage and changes no weight",
        ha="center",
        fontsize=9,
        color="0.35",
    )
    return fig
