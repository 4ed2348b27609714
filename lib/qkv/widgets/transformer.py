"""Explorers of D2L 11.7, "The Transformer Architecture" (``book/transformer.md``).

:func:`cross_attention_explorer` shows where the trained Transformer looked while it translated: for a sentence, a
block and a head, its encoder-decoder attention, one row per emitted French token, one column per valid English
source token. It is a live explorer (:mod:`qkv.widgets._live`): the module ``js/cross_attention.js`` draws it, in
JupyterLab and in the book, from :func:`cross_attention_data`, the weights of a few sentences computed by ``qkv``
when the page runs; a menu picks the sentence, sliders the block, the head and the emitted token. In JupyterLab a
text box adds the sentences the reader types (the kernel translates them). The static :func:`cross_attention_grid`
of every block and head stays for print and readers without JavaScript.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import matplotlib.pyplot as plt
import torch

from qkv.widgets import _live as live
from qkv.widgets import static_mode

__all__ = [
    "CrossAttention",
    "cross_attention",
    "cross_attention_data",
    "cross_attention_grid",
    "cross_attention_explorer",
]


@dataclass
class CrossAttention:
    """One sentence translated greedily: its valid source tokens, the emitted tokens (with ``<eos>`` when emitted)
    and the encoder-decoder weights, (blocks, heads, emitted tokens, valid source tokens)."""

    src_tokens: list[str]
    out_tokens: list[str]
    weights: torch.Tensor

    @property
    def num_blocks(self) -> int:
        return self.weights.shape[0]

    @property
    def num_heads(self) -> int:
        return self.weights.shape[1]


def cross_attention(model, data, sentence: str) -> CrossAttention:
    """Translate ``sentence`` with the encoder-decoder ``model`` and keep its cross-attention over the valid source
    tokens (the padding, which gets weight 0, left out) (D2L 11.7.6)."""
    from qkv.figures.transformer import decode_with_attention

    if not isinstance(sentence, str):
        raise TypeError(f'sentence must be one string, such as "i\'m home .", got {type(sentence).__name__}')
    if not sentence.strip():
        raise ValueError('sentence is empty: type an English sentence, such as "i\'m home ."')
    translation, _, _, cross, length = decode_with_attention(model, data, sentence)  # cross: (L, H, n, T_src)
    src_ids = data.build([sentence], ["."])[0][0]  # (T_src,): the source, padded
    src_tokens = data.src_vocab.to_tokens(src_ids.tolist())[:length]
    out_tokens = translation.split()
    if len(out_tokens) < cross.shape[2]:  # the last step emitted <eos>
        out_tokens.append("<eos>")
    return CrossAttention(src_tokens, out_tokens, cross[:, :, :, :length].detach().cpu())


def _draw(ax, attn: CrossAttention, block: int, head: int, labels: bool = True) -> None:
    """Block ``block``'s head ``head`` (both from 0) as a heatmap, tokens on the axes."""
    w = attn.weights[block, head]  # (n, T_src)
    ax.imshow(w.numpy(), cmap="Reds", vmin=0, vmax=1, aspect="auto")
    ax.set_xticks(range(len(attn.src_tokens)), attn.src_tokens, rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(len(attn.out_tokens)), attn.out_tokens if labels else [""] * len(attn.out_tokens), fontsize=8)
    ax.set_title(f"block {block + 1}, head {head + 1}", fontsize=8)


def cross_attention_grid(attn: CrossAttention):
    """Every block (rows) and head (columns) of ``attn`` side by side. Returns the figure."""
    L, H = attn.num_blocks, attn.num_heads
    fig, axes = plt.subplots(L, H, figsize=(1.9 * H + 0.8, 1.9 * L + 0.6), squeeze=False)
    for i in range(L):
        for h in range(H):
            _draw(axes[i][h], attn, i, h, labels=h == 0)
    fig.suptitle(f"{' '.join(attn.src_tokens[:-1])}  ->  {' '.join(attn.out_tokens)}", fontsize=9)
    fig.tight_layout()
    return fig


def _sentence_key(sentence: str) -> str:
    """A sentence as the explorer names it: its words separated by single spaces."""
    return " ".join(sentence.split())


def _entry(data, sentence: str, attn: CrossAttention) -> dict:
    """One sentence of :func:`cross_attention_data`."""
    from qkv.data.mt import preprocess_fra_eng

    words = preprocess_fra_eng(sentence).split()
    unk = data.src_vocab["<unk>"]
    unknown = list(dict.fromkeys(w for w in words[: data.num_steps] if data.src_vocab[w] == unk))
    return {
        "sentence": sentence,
        "src": list(attn.src_tokens),
        "out": list(attn.out_tokens),
        "weights": attn.weights.tolist(),  # float32 values as Python floats: exact, and JSON writes them exactly
        "checksum": math.fsum(attn.weights.flatten().tolist()),
        "unknown": unknown,
        "cut": len(words) + 1 > data.num_steps,
    }


def cross_attention_data(data, attentions: Mapping[str, CrossAttention]) -> dict:
    """What ``js/cross_attention.js`` draws from, as JSON values (D2L 11.7.6).

    ``attentions`` maps each sentence, in the explorer's order, to its :func:`cross_attention`; ``data`` is the
    translation data the model was trained on (its source vocabulary and ``num_steps``). Each sentence gives its
    valid source tokens ``src``, the emitted tokens ``out``, the weights (blocks, heads, emitted, source) as nested
    lists of the float32 values written exactly, their sum ``checksum`` (math.fsum, which the page checks), the words
    that are not in the source vocabulary (read as ``<unk>``) and whether the sentence was cut to ``num_steps``
    tokens.
    """
    if not isinstance(attentions, Mapping) or not attentions:
        raise ValueError("give at least one sentence's cross_attention, as a dict {sentence: CrossAttention}")
    first = next(iter(attentions.values()))
    shape = (first.num_blocks, first.num_heads)
    for sentence, attn in attentions.items():
        if not isinstance(attn, CrossAttention):
            raise TypeError(f"attentions[{sentence!r}] is a {type(attn).__name__}, not a CrossAttention")
        if (attn.num_blocks, attn.num_heads) != shape:
            raise ValueError(f"every sentence needs the same blocks and heads; {sentence!r} has another model's")
    return {
        "blocks": shape[0],
        "heads": shape[1],
        "num_steps": int(data.num_steps),
        "sentences": [_entry(data, sentence, attn) for sentence, attn in attentions.items()],
    }


def cross_attention_explorer(model, data, sentence: str = "i'm home .", more: Sequence[str] = ()):
    """Pick a sentence, a block, a head and an emitted token: where that token looked in the source (D2L 11.7.6).

    ``sentence`` is shown first and ``more`` are the other sentences of the explorer's menu; each is translated
    greedily by ``model`` (:func:`cross_attention`) when this runs. In JupyterLab a text box also takes new
    sentences: setting the widget's ``sentence`` to one the menu lacks translates it and adds it to ``data``; a
    sentence that cannot be translated (one of spaces only) leaves the menu and ``sentence`` as they were and sets
    ``data["error"]`` (the sentence, the message and a count), which the page shows.

    Returns:
        In Jupyter, a live widget (``js/cross_attention.js``; its traitlets ``sentence``, ``block``, ``head`` and
        ``step`` are the controls, counted from 1). During the book build (:func:`qkv.widgets.static_mode`), the
        same explorer for the page, after the static :func:`cross_attention_grid` of ``sentence`` that it replaces;
        without anywidget, that figure alone (:mod:`qkv.widgets._live`).
    """
    if isinstance(more, str) or not all(isinstance(s, str) for s in more):
        raise TypeError(f'more is a tuple of sentences, such as ("go .", "i lost ."), got {more!r}')
    if not isinstance(sentence, str):
        raise TypeError(f'sentence must be one string, such as "i\'m home .", got {type(sentence).__name__}')
    sentences = list(dict.fromkeys(_sentence_key(s) for s in (sentence, *more)))
    attentions = {s: cross_attention(model, data, s) for s in sentences}
    first = attentions[sentences[0]]
    settings = {"sentence": sentences[0], "block": first.num_blocks, "head": 1, "step": 1}
    if not static_mode():
        settings["typing"] = True  # a kernel is there to translate what the reader types
    panel = live.explorer(
        "cross_attention",
        data=lambda: cross_attention_data(data, attentions),
        settings=settings,
        static=lambda: cross_attention_grid(first),
        label="Encoder-decoder attention explorer: choose a sentence, a block, a head and an emitted French token",
    )
    if not hasattr(panel, "observe"):  # the book's explorer or the static figure: nothing to translate later
        return panel

    def add_sentence(change):
        """Translate a sentence the page asks for (the text box) and add it to the data, or say why not."""
        typed = change["new"]
        known = {entry["sentence"] for entry in panel.data["sentences"]}
        key = _sentence_key(typed)
        if typed in known:
            return
        if key in known:  # the same words, other spaces
            panel.sentence = key
            return
        try:
            attn = cross_attention(model, data, key)
            entry = _entry(data, key, attn)
            if (attn.num_blocks, attn.num_heads) != (panel.data["blocks"], panel.data["heads"]):
                raise ValueError("the model changed since the explorer was made; run its cell again")
        except (TypeError, ValueError, KeyError, IndexError, RuntimeError) as err:
            count = panel.data.get("error", {}).get("count", 0) + 1  # a new dict each time, so that it syncs
            error = {"sentence": typed, "message": f"could not translate {typed!r}: {err}", "count": count}
            panel.data = {**panel.data, "error": error}
            panel.sentence = change["old"]
            return
        kept = {k: v for k, v in panel.data.items() if k != "error"}
        panel.data = {**kept, "sentences": [*panel.data["sentences"], entry]}  # a new dict, so that it syncs
        if key != typed:
            panel.sentence = key

    panel.observe(add_sentence, names="sentence")
    return panel
