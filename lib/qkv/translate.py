"""Training a translator, translating sentences with it and scoring them with BLEU (D2L 10.7.8, 11.4.3, 11.7.6).

D2L ends each translation section the same way: train the model on the
English-French pairs in one setting (batches of 128, 30 epochs, gradients
clipped to norm 1), build a batch from raw English sentences with the data's
vocabularies, decode greedily with ``predict_step``, cut each prediction at its
first ``<eos>``, print it beside the reference with its BLEU, and plot the
attention weights of one sentence. :func:`translate` and :func:`evaluate_bleu`
do the last steps for any model with D2L's ``predict_step`` (the Bahdanau and
the Transformer translators alike); :func:`qkv.recipes.translate.train_d2l`
trains one in D2L's setting.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from qkv._validate import positive_int
from qkv.bleu import bleu

__all__ = ["translate", "evaluate_bleu", "BleuRow"]

EOS = "<eos>"


class BleuRow(NamedTuple):
    """One evaluated sentence: source, reference, the model's translation and its BLEU (D2L 10.7.8)."""

    src: str
    reference: str
    prediction: str
    bleu: float


def _model_device(model) -> torch.device:
    try:
        return next(model.parameters()).device
    except (StopIteration, AttributeError):
        return torch.device("cpu")


def _check_sentences(sentences, name: str) -> list[str]:
    if isinstance(sentences, str):
        raise TypeError(f"{name} must be a list of sentences, not a single string; wrap it: [{sentences!r}]")
    sentences = list(sentences)
    if not sentences:
        raise ValueError(f"{name} is empty; give at least one sentence")
    for s in sentences:
        if not isinstance(s, str):
            raise TypeError(f"{name} must hold strings, got {s!r} of type {type(s).__name__}")
    return sentences


def _rows_of(weights, i: int, batch_size: int):
    """The part of an attention-weight structure that belongs to sentence ``i`` of the batch.

    Tensors are sliced along their first axis, which holds the batch, or the
    batch times the heads (example ``b``'s heads at rows ``b * H ... b * H + H - 1``,
    as :func:`qkv.multihead.transpose_qkv` lays them out); lists and tuples are
    walked through; anything else is returned as it is.
    """
    if isinstance(weights, torch.Tensor):
        if weights.dim() == 0 or weights.shape[0] % batch_size:
            return weights
        r = weights.shape[0] // batch_size
        return weights[i * r : (i + 1) * r]  # (B * r, ...) -> (r, ...)
    if isinstance(weights, (list, tuple)):
        return type(weights)(_rows_of(w, i, batch_size) for w in weights)
    return weights


def translate(model, data, sentences, device=None, num_steps=None):
    """Translate source sentences greedily; return ``[(translation, attention weights per step), ...]`` (D2L 11.4.3).

    Args:
        model: an encoder-decoder with D2L's ``predict_step(batch, device, num_steps, save_attention_weights)``.
        data: the data module, with ``build(src_sentences, tgt_sentences)`` and ``tgt_vocab``
            (e.g. :class:`qkv.data.MTFraEng`).
        sentences: the source sentences, as raw strings ("i'm home .").
        device: where to decode; default: the device of the model's parameters.
        num_steps: the most tokens to decode; default: ``data.num_steps``.

    For each sentence, the translation is its predicted tokens up to, not
    including, the first ``<eos>``, joined by spaces. Its attention weights are
    a list with one entry per decoding step up to and including the step that
    produced ``<eos>`` (all ``num_steps`` if none did); each entry is the
    decoder's ``attention_weights`` after that step, restricted to this
    sentence (for the Bahdanau decoder: ``[tensor (1, 1, T_src)]``).
    """
    sentences = _check_sentences(sentences, "sentences")
    if num_steps is None:
        num_steps = getattr(data, "num_steps", None)
        if num_steps is None:
            raise ValueError("data has no num_steps; pass num_steps, the most tokens to decode")
    num_steps = positive_int(num_steps, "num_steps")
    device = _model_device(model) if device is None else torch.device(device)
    # Only the <bos> column of the target is used by predict_step; the sources stand in for the targets.
    batch = data.build(sentences, sentences)
    preds, step_weights = model.predict_step(batch, device, num_steps, save_attention_weights=True)
    results = []
    for i, ids in enumerate(preds.tolist()):
        tokens = data.tgt_vocab.to_tokens(ids)
        n = tokens.index(EOS) if EOS in tokens else len(tokens)
        steps = step_weights[: n + 1]
        results.append((" ".join(tokens[:n]), [_rows_of(w, i, len(sentences)) for w in steps]))
    return results


def evaluate_bleu(model, data, pairs, k: int = 2, device=None, num_steps=None) -> list[BleuRow]:
    """Translate the source of each ``(src, reference)`` pair and score it with BLEU up to ``k``-grams (D2L 10.7.8).

    Returns one :class:`BleuRow` ``(src, reference, prediction, bleu)`` per pair, in order.
    """
    if isinstance(pairs, tuple) and len(pairs) == 2 and all(isinstance(p, str) for p in pairs):
        raise TypeError(f"pairs must be a list of (src, reference) pairs; wrap the single pair: [{pairs!r}]")
    pairs = list(pairs)
    for p in pairs:
        if not (isinstance(p, (tuple, list)) and len(p) == 2):
            raise ValueError(f"each pair must be (src, reference), got {p!r}")
    srcs = _check_sentences([p[0] for p in pairs], "the source sentences")
    refs = _check_sentences([p[1] for p in pairs], "the reference translations")
    translations = translate(model, data, srcs, device=device, num_steps=num_steps)
    return [BleuRow(s, r, pred, bleu(pred, r, k)) for s, r, (pred, _) in zip(srcs, refs, translations)]
