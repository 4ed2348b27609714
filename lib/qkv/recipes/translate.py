"""Training a translator in D2L's setting, once, then loading it (D2L 11.4.3, 11.7.6; the course's machinery).

D2L trains both of its translators the same way: the English-French pairs in batches of 128, 30 epochs, gradients
clipped to norm 1. :func:`train_d2l` does that for any configuration with a ``build`` method
(:class:`qkv.bahdanau.BahdanauConfig`, :class:`qkv.transformer.TransformerConfig`, or one of a student's own), and
caches the weights (:mod:`qkv.recipes.weights`); :func:`train_bahdanau` and :func:`train_transformer` are the two
pages' models. Translating and scoring are :mod:`qkv.translate`'s.
"""

from __future__ import annotations

__all__ = ["train_d2l", "train_bahdanau", "train_transformer", "D2L_BATCH_SIZE", "D2L_EPOCHS", "D2L_CLIP"]

#: D2L's training setting for its translators (D2L 11.4.3, 11.7.6): batches of 128, 30 epochs, gradient clip 1.
D2L_BATCH_SIZE, D2L_EPOCHS, D2L_CLIP = 128, 30, 1.0


def train_d2l(
    name: str,
    config,
    data=None,
    *,
    seed: int = 0,
    epochs: int = D2L_EPOCHS,
    device="cpu",
    progress: bool | None = None,
    log=print,
):
    """A translator trained in D2L's setting, or loaded if it was trained before (D2L 11.4.3, 11.7.6).

    ``config`` holds the model's hyper-parameters and builds it: ``config.build(src_vocab_size, tgt_vocab_size,
    tgt_pad)`` (:class:`qkv.bahdanau.BahdanauConfig`, :class:`qkv.transformer.TransformerConfig`); ``name``
    names its cached weights ("bahdanau"). ``data`` defaults to ``MTFraEng(128)`` (found as
    :func:`qkv.data.locate` finds files). The model is built after ``torch.manual_seed(seed)`` and trained by a
    :class:`qkv.training.Trainer` with ``epochs`` epochs, gradient clipping at 1 and the seed; the weights are
    cached by :func:`qkv.recipes.weights.fit_or_load`. Returns ``(fitted, data)``: the
    :class:`~qkv.recipes.weights.Fitted` (``.model``, ``.history``, ``.seconds``, ``.trained``) and the data module.
    """
    from qkv.data import MTFraEng
    from qkv.recipes.weights import fit_or_load
    from qkv.training import Trainer

    data = MTFraEng(D2L_BATCH_SIZE) if data is None else data
    trainer = Trainer(epochs, gradient_clip_val=D2L_CLIP, device=device, seed=seed, progress=progress)

    def build():
        return config.build(len(data.src_vocab), len(data.tgt_vocab), tgt_pad=data.tgt_vocab["<pad>"])

    return fit_or_load(name, build, data, trainer, config=config, log=log), data


def train_bahdanau(**kwargs):
    """D2L's Bahdanau translator, ``train_d2l("bahdanau", BahdanauConfig(), **kwargs)`` (D2L 11.4.3)."""
    from qkv.bahdanau import BahdanauConfig

    return train_d2l("bahdanau", BahdanauConfig(), **kwargs)


def train_transformer(**kwargs):
    """D2L's Transformer translator, ``train_d2l("transformer", TransformerConfig(), **kwargs)`` (D2L 11.7.6)."""
    from qkv.transformer import TransformerConfig

    return train_d2l("transformer", TransformerConfig(), **kwargs)
