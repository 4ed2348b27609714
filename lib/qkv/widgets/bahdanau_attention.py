"""Explorers of D2L 11.4, "Bahdanau Attention" (``book/bahdanau-attention.md``).

:func:`decoding_explorer` steps through the greedy translation of a sentence: a slider picks the decoding step,
and the bars show where in the source that step looked (its attention weights over the source tokens), beside the
heatmap of every step and the translation emitted so far. It is a live explorer (:mod:`qkv.widgets._live`): the
model's numbers are computed in Python, by :func:`decode_sentence`, and written into the page as they are
(:func:`bahdanau_decoding_data`); the module ``js/bahdanau_decoding.js`` draws them, in JupyterLab and in the book,
where no model runs. The static :func:`decoding_grid` (every step side by side) stays for print and readers without
JavaScript.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import matplotlib.pyplot as plt
import torch

from qkv.translate import translate
from qkv.widgets import _live as live

__all__ = ["Decoding", "bahdanau_decoding_data", "decode_sentence", "decoding_explorer", "decoding_grid"]


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


def bahdanau_decoding_data(decodings: Mapping[str, Decoding]) -> dict:
    """What ``js/bahdanau_decoding.js`` draws, as JSON values (D2L 11.4.3).

    ``decodings`` maps each sentence, in the order of the explorer's menu, to its :func:`decode_sentence`. For each,
    the data hold the sentence (``source``), its valid source tokens, the tokens emitted (up to ``<eos>``) and the
    weights, one row per step and one column per source token. The weights are the float32 values the model
    computed, each written as ``float(x)`` (JSON's shortest decimal for it reads back as the same number); nothing
    is rounded and no padding is kept.
    """
    if not isinstance(decodings, Mapping) or not decodings:
        raise TypeError("give a dict of one or more sentences, each with its Decoding (decode_sentence)")
    sentences = []
    for source, d in decodings.items():
        if not isinstance(source, str) or not isinstance(d, Decoding):
            raise TypeError(f"each sentence (a str) maps to its Decoding (decode_sentence), got {source!r}: {d!r}")
        weights = d.weights.detach().to("cpu")
        if weights.shape != (len(d.out_tokens), len(d.src_tokens)):
            raise ValueError(
                f"{source!r}: weights of shape {tuple(weights.shape)} do not fit {len(d.out_tokens)} emitted "
                f"tokens x {len(d.src_tokens)} source tokens"
            )
        sentences.append(
            {
                "source": source,
                "src_tokens": list(d.src_tokens),
                "out_tokens": list(d.out_tokens),
                "weights": [[float(x) for x in row] for row in weights.tolist()],
            }
        )
    return {"sentences": sentences}


def _sentences(sentence, more) -> list[str]:
    """``sentence`` then each of ``more`` not already given, checked: strings only."""
    if not isinstance(sentence, str):
        raise TypeError(f'sentence must be one string, such as "i\'m home .", got {type(sentence).__name__}')
    if not isinstance(more, Sequence) or isinstance(more, str) or not all(isinstance(s, str) for s in more):
        raise TypeError(f'more is a tuple of sentences, such as ("go .", "i lost ."), got {more!r}')
    return list(dict.fromkeys([sentence, *more]))


def decoding_explorer(model, data, sentence: str = "i'm home .", *, more: Sequence[str] = ()):
    """Step through the greedy translation of ``sentence``: a slider picks the step (D2L 11.4.3).

    ``more``: other sentences to offer in a menu beside ``sentence`` (which comes first). Each is translated now,
    by :func:`decode_sentence`; the explorer shows, for the chosen step, the bars of its weights over the source
    tokens (the largest marked), the heatmap of every step with that step's row outlined, the translation so far,
    and a line of text that says which token the step emitted and where its largest weight went.

    Returns:
        In Jupyter, a live widget (``js/bahdanau_decoding.js``; its traitlets ``sentence`` and ``step``, from 1,
        are the controls). During the book build (:func:`qkv.widgets.static_mode`), the same explorer for the page,
        with the model's numbers written in, after the static :func:`decoding_grid` of ``sentence`` that it
        replaces; without anywidget, that figure alone (:mod:`qkv.widgets._live`).
    """
    decodings = {s: decode_sentence(model, data, s) for s in _sentences(sentence, more)}
    return live.explorer(
        "bahdanau_decoding",
        data=lambda: bahdanau_decoding_data(decodings),
        settings={"sentence": sentence, "step": 1},
        static=lambda: decoding_grid(decodings[sentence]),
        label=f"Decoding explorer: choose {'a sentence and ' if len(decodings) > 1 else ''}a decoding step to see "
        "where in the source that step looked",
    )
