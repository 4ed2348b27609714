"""Explorers of D2L 11.4, "Bahdanau Attention" (``book/bahdanau-attention.md``).

:func:`decoding_explorer` steps through the greedy translation of one sentence: a slider picks the decoding step,
and the bars show where in the source that step looked (its attention weights over the source tokens), with the
translation emitted so far. In the book it draws every step side by side instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import matplotlib.pyplot as plt
import torch

from qkv.translate import translate
from qkv.widgets import ipywidgets_or_none, static_figure

__all__ = ["Decoding", "decode_sentence", "decoding_explorer"]


@dataclass
class Decoding:
    """One sentence decoded greedily: its valid source tokens, the emitted tokens (up to and including ``<eos>``,
    if emitted) and the weights, (steps, source tokens), row ``i`` those of the step that emitted token ``i``."""

    src_tokens: list[str]
    out_tokens: list[str]
    weights: torch.Tensor


def decode_sentence(model, data, sentence: str) -> Decoding:
    """Translate ``sentence`` with ``model`` (greedy, :func:`qkv.translate.translate`) and keep every step's
    weights over the source's valid tokens (padding, which gets weight 0, is left out) (D2L 11.4.3)."""
    if not isinstance(sentence, str):
        raise TypeError(f'sentence must be one string, such as "i\'m home .", got {type(sentence).__name__}')
    ((translation, steps),) = translate(model, data, [sentence])
    weights = torch.cat([w[0] for w in steps], dim=1)[0]  # n x (1, 1, T) -> (1, n, T) -> (n, T)
    src_ids = data.build([sentence], ["."])[0][0]  # (T,): the source, padded
    src_tokens = data.src_vocab.to_tokens(src_ids.tolist())
    n_valid = src_tokens.index("<eos>") + 1 if "<eos>" in src_tokens else len(src_tokens)
    out_tokens = translation.split()
    if len(out_tokens) < weights.shape[0]:  # the last step emitted <eos>
        out_tokens.append("<eos>")
    return Decoding(src_tokens[:n_valid], out_tokens, weights[:, :n_valid].detach().cpu())


def _draw_step(ax, decoding: Decoding, step: int) -> None:
    w = decoding.weights[step].tolist()
    xs = range(len(w))
    ax.bar(xs, w, color=["#b03030" if i == max(xs, key=w.__getitem__) else "#e8a0a0" for i in xs])
    ax.set_xticks(list(xs), decoding.src_tokens, rotation=45, ha="right", fontsize=8)
    ax.set_ylim(0, 1)
    so_far = " ".join(decoding.out_tokens[: step + 1])
    ax.set_title(f"step {step + 1}: emits {decoding.out_tokens[step]!r}\n{so_far}", fontsize=8)


def decoding_grid(decoding: Decoding):
    """Every step of ``decoding`` side by side: one bar chart of the source weights per step. Returns the figure."""
    n = len(decoding.out_tokens)
    fig, axes = plt.subplots(1, n, figsize=(1.9 * n + 0.6, 2.6), sharey=True, squeeze=False)
    for step, ax in enumerate(axes[0]):
        _draw_step(ax, decoding, step)
    axes[0][0].set_ylabel("attention weight")
    fig.tight_layout()
    return fig


def decoding_explorer(model, data, sentence: str = "i'm home ."):
    """Step through the greedy translation of ``sentence``: a slider picks the step (D2L 11.4.3).

    Returns, in Jupyter, an ``ipywidgets.interactive`` panel; while the book is built (or without ipywidgets),
    the static :func:`decoding_grid` of every step.
    """
    decoding = decode_sentence(model, data, sentence)
    widgets = ipywidgets_or_none()
    if widgets is None:
        return static_figure(decoding_grid(decoding))
    last = {"fig": None}

    def draw(step):
        if last["fig"] is not None:
            plt.close(last["fig"])
        fig, ax = plt.subplots(figsize=(4.5, 3))
        _draw_step(ax, decoding, step - 1)
        ax.set_ylabel("attention weight")
        fig.tight_layout()
        last["fig"] = fig
        return fig

    step = widgets.IntSlider(value=1, min=1, max=len(decoding.out_tokens), description="step")
    return widgets.interactive(draw, step=step)
