"""Explorers of D2L 11.9, "Large-Scale Pretraining with Transformers" (``book/large-pretraining-transformers.md``).

:func:`sampling_explorer` shows the distribution a trained character language model samples its next character
from, after a prompt: sliders set the temperature and top-k (:func:`qkv.lm.next_token_distribution`). In the book
it draws a grid of fixed settings instead.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch

from qkv._validate import positive_int
from qkv.lm import next_token_distribution
from qkv.training import evaluating
from qkv.widgets import ipywidgets_or_none, static_figure

__all__ = ["next_char_logits", "sampling_explorer", "sampling_grid"]

TEMPERATURES = (0.5, 1.0, 2.0)
TOP_KS = (None, 3)


def next_char_logits(model, data, prompt: str) -> torch.Tensor:
    """The model's logits (V,) for the character after ``prompt`` (its last ``max_len`` characters), in eval mode
    (the model's mode given back after)."""
    if not isinstance(prompt, str) or not prompt:
        raise ValueError(f"prompt must be a non-empty string, got {prompt!r}")
    ids = data.encode(prompt)[-model.config.max_len :]  # (T,)
    with evaluating(model):
        return model(ids[None])[0, -1]  # (1, T) -> (1, T, V) -> (V,)


def _draw(ax, probs, labels, title, top=8):
    order = probs.argsort(descending=True)[:top].tolist()
    ax.bar(range(len(order)), [probs[i].item() for i in order], color="#c0392b")
    ax.set_xticks(range(len(order)), [repr(labels[i])[1:-1] or "' '" for i in order], fontsize=8)
    ax.set_ylim(0, 1)
    ax.set_title(title, fontsize=8)


def _labels(data):
    return ["␣" if t == " " else t for t in data.vocab.idx_to_token]


def sampling_grid(model, data, prompt="the time travel", temperatures=TEMPERATURES, top_ks=TOP_KS):
    """The 8 most likely next characters after ``prompt`` for every (top-k, temperature): one bar chart each."""
    logits = next_char_logits(model, data, prompt)
    labels = _labels(data)
    fig, axes = plt.subplots(
        len(top_ks), len(temperatures), figsize=(2.4 * len(temperatures), 2.2 * len(top_ks)), sharey=True, squeeze=False
    )
    for r, k in enumerate(top_ks):
        for c, t in enumerate(temperatures):
            probs = next_token_distribution(logits, t, k)  # (V,)
            _draw(axes[r][c], probs, labels, f"temperature {t}, top-k {k or 'all'}")
    fig.suptitle(f"next character after {prompt!r}", fontsize=9)
    fig.tight_layout()
    return fig


def sampling_explorer(model, data, prompt="the time travel"):
    """Sliders for the temperature and top-k over the next-character distribution after ``prompt``.

    Returns an ipywidgets panel, or (in the book, or without ipywidgets) :func:`sampling_grid`'s figure.
    """
    logits = next_char_logits(model, data, prompt)
    widgets = ipywidgets_or_none()
    if widgets is None:
        return static_figure(sampling_grid(model, data, prompt))
    labels = _labels(data)
    V = len(labels)

    def show(temperature, top_k):
        top_k = positive_int(top_k, "top_k")
        fig, ax = plt.subplots(figsize=(6, 2.5))
        probs = next_token_distribution(logits, temperature, None if top_k >= V else top_k)
        _draw(ax, probs, labels, f"after {prompt!r}: temperature {temperature:.2f}, top-k {top_k}", top=12)
        plt.show()

    return widgets.interactive(
        show,
        temperature=widgets.FloatSlider(value=1.0, min=0.1, max=3.0, step=0.05, description="temperature"),
        top_k=widgets.IntSlider(value=V, min=1, max=V, description="top-k"),
    )
