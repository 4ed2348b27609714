"""Explorers of D2L 11.9, "Large-Scale Pretraining with Transformers" (``book/large-pretraining-transformers.md``).

:func:`sampling_explorer` shows the distribution a trained character language model samples its next character
from, after a prompt, with a prompt menu and sliders for the temperature and top-k
(:func:`qkv.lm.next_token_distribution`). It is a live explorer (:mod:`qkv.widgets._live`): the model runs once, in
Python (:func:`next_char_logits`, for the page's prompt and a few more), and :func:`sampling_data` writes its logits
exactly; the module ``js/sampling.js`` draws them, in JupyterLab and in the book, and computes the tempered, cut
softmax in the page as the controls move. The static :func:`sampling_grid` stays for print and readers without
JavaScript.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import torch

from qkv.lm import next_token_distribution
from qkv.training import evaluating
from qkv.widgets import _live as live

__all__ = [
    "MORE_PROMPTS",
    "SHOWN",
    "TEMPERATURE_STOPS",
    "next_char_logits",
    "sampling_data",
    "sampling_explorer",
    "sampling_grid",
]

TEMPERATURES = (0.5, 1.0, 2.0)
TOP_KS = (None, 3)
#: The prompts the explorer offers after the page's own: the middle of a word ("e" likely, "a" and "i" behind),
#: two rivals ("n" or the end of the word "a"), and the start of a word (a flat distribution, where top-k bites).
MORE_PROMPTS = ("it was th", "it was a", "in the ")
#: The temperature slider's stops: 0.1 to 1 in steps of 0.05, then 1 to 3 in steps of 0.1, so that the range
#: below 1, where the distribution sharpens, gets about half the track (18 of 38 steps).
TEMPERATURE_STOPS = tuple(round(0.1 + 0.05 * i, 2) for i in range(19)) + tuple(
    round(1.1 + 0.1 * i, 1) for i in range(20)
)
#: How many of the likeliest characters the explorer draws.
SHOWN = 12


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


def _checksum(values: Sequence[float]) -> float:
    """The float64 sum of ``values`` added left to right, as the page adds them (``checksum`` in ``js/sampling.js``;
    not :func:`sum`, which may compensate)."""
    return functools.reduce(operator.add, values, 0.0)


def sampling_data(logits: Mapping[str, torch.Tensor], labels: Sequence[str]) -> dict:
    """What ``js/sampling.js`` draws from, as JSON values (D2L 11.9).

    Args:
        logits: each prompt (in the menu's order, the first shown first) and the model's logits (V,) for the
            character after it (:func:`next_char_logits`).
        labels: the V characters, as the bars are labelled (a space as ␣).

    Returns:
        ``prompts``, ``labels``, ``logits`` (a list of V floats per prompt: each value exactly, ``float(x)`` of
        a float32), ``sums`` (each row's float64 sum, added left to right: the page checks it before drawing),
        ``temperatures`` (:data:`TEMPERATURE_STOPS`) and ``shown`` (:data:`SHOWN`). The page computes
        :func:`qkv.lm.next_token_distribution` from them, in float64.
    """
    labels = [str(label) for label in labels]
    if not logits:
        raise ValueError("give the logits after at least one prompt")
    rows = []
    for prompt, row in logits.items():
        if not isinstance(prompt, str) or not prompt:
            raise ValueError(f"each prompt must be a non-empty string, got {prompt!r}")
        row = torch.as_tensor(row).detach()
        if row.shape != (len(labels),):
            raise ValueError(f"the logits after {prompt!r} have shape {tuple(row.shape)}, not ({len(labels)},)")
        rows.append([float(x) for x in row.tolist()])
    return {
        "prompts": list(logits),
        "labels": labels,
        "logits": rows,
        "sums": [_checksum(row) for row in rows],
        "temperatures": list(TEMPERATURE_STOPS),
        "shown": SHOWN,
    }


def sampling_explorer(model, data, prompt="the time travel", *, more: Sequence[str] = MORE_PROMPTS):
    """A prompt menu and sliders for the temperature and top-k over the next-character distribution (D2L 11.9).

    The model's logits after ``prompt`` and each prompt of ``more`` are computed once (:func:`next_char_logits`);
    the explorer draws the probabilities of the 12 likeliest characters, as
    :func:`qkv.lm.next_token_distribution` gives them, with those cut by top-k at 0 (a dashed outline shows what
    they had), the entropy in bits, and a line of text with the likeliest character's probability.

    Returns:
        In Jupyter, a live widget (``js/sampling.js``; its traitlets ``prompt``, ``temperature`` and ``top_k`` are
        the controls, 1.0 and V, all characters, at first). During the book build
        (:func:`qkv.widgets.static_mode`), the same explorer for the page, after the static :func:`sampling_grid`
        of ``prompt`` that it replaces; without anywidget, that figure alone (:mod:`qkv.widgets._live`).
    """
    if isinstance(more, str):
        raise TypeError(f"more is a sequence of prompts, got the string {more!r}")
    prompts = list(dict.fromkeys([prompt, *more]))  # the page's prompt first, no repeats
    logits = {p: next_char_logits(model, data, p) for p in prompts}  # (V,) each; checks each prompt
    labels = _labels(data)
    return live.explorer(
        "sampling",
        data=lambda: sampling_data(logits, labels),
        settings={"prompt": prompt, "temperature": 1.0, "top_k": len(labels)},
        static=lambda: sampling_grid(model, data, prompt),
        label="Sampling explorer: the next character's distribution after a prompt, at a temperature and top-k",
    )
