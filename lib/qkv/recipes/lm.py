"""How section 11.9's language models are trained: our sizes and budgets for a CPU, trained once, then loaded (D2L
11.9; the course's machinery beside :mod:`qkv.lm`).

:func:`train_gpt` (the section's character GPT), :func:`train_gru` (a GRU with about the GPT's parameter count,
trained for about the same CPU seconds) and :func:`scaling_study` (five GPT sizes, one training budget in tokens)
train through :func:`qkv.recipes.weights.fit_or_load`, so every later run loads the weights; :func:`warm` trains them
all (the page's ``trains:``).
"""

from __future__ import annotations

import math

from qkv.lm import GRULM, CharLMData, GRUConfig, count_parameters, gru_hiddens_for, perplexity
from qkv.pretraining import DecoderOnlyLM, GPTConfig

__all__ = [
    "GPT_CONFIG",
    "GPT_EPOCHS",
    "GRU_EPOCHS",
    "SCALING_SIZES",
    "SCALING_EPOCHS",
    "scaling_config",
    "train_gpt",
    "train_gru",
    "scaling_study",
    "warm",
]

#: The qkv modules whose code, besides the models' own, determines these weights (the key's sources).
MODULES = ("qkv.lm", "qkv.recipes.lm")


#: The section's GPT: 64 hidden units, 4 heads, 2 blocks, context 64 (our choice, sized for a CPU).
GPT_CONFIG = dict(num_hiddens=64, num_heads=4, num_blks=2, ffn_num_hiddens=256, dropout=0.0, max_len=64, lr=3e-3)
GPT_EPOCHS = 4
#: Chosen so that the GRU's training takes about the GPT's CPU seconds (benchmarks/lm.py measures both).
GRU_EPOCHS = 4
#: The scaling study's sizes (num_hiddens, num_blks), each trained for SCALING_EPOCHS on the same windows.
SCALING_SIZES = ((8, 1), (16, 1), (24, 1), (32, 2), (48, 2))
SCALING_EPOCHS = 2


def _data(data):
    return CharLMData() if data is None else data


def _trainer(epochs, seed, progress):
    from qkv.training import Trainer

    return Trainer(epochs, gradient_clip_val=1.0, device="cpu", seed=seed, progress=progress)


def _gpt(data, config: dict, epochs: int, name: str, seed: int, progress: bool | None, log):
    from qkv.recipes.weights import fit_or_load

    cfg = GPTConfig(vocab_size=len(data.vocab), **config)
    return fit_or_load(
        name,
        lambda: DecoderOnlyLM(cfg),
        data,
        _trainer(epochs, seed, progress),
        config=cfg,
        modules=MODULES,
        log=log,
    )


def train_gpt(data=None, *, seed: int = 0, progress: bool | None = None, log=print):
    """The section's character GPT (:data:`GPT_CONFIG`, :data:`GPT_EPOCHS`), trained or loaded (D2L 11.9.3).

    Returns ``(fitted, data)``: the :class:`qkv.recipes.weights.Fitted` and the :class:`CharLMData`.
    """
    data = _data(data)
    return _gpt(data, GPT_CONFIG, GPT_EPOCHS, "char-gpt", seed, progress, log), data


def train_gru(data=None, *, seed: int = 0, progress: bool | None = None, log=print):
    """A :class:`GRULM` with about the GPT's parameter count, trained for :data:`GRU_EPOCHS`, or loaded."""
    from qkv.recipes.weights import fit_or_load

    data = _data(data)
    V = len(data.vocab)
    target = count_parameters(DecoderOnlyLM(GPTConfig(vocab_size=V, **GPT_CONFIG)))
    cfg = GRUConfig(vocab_size=V, num_hiddens=gru_hiddens_for(target, V))
    trainer = _trainer(GRU_EPOCHS, seed, progress)
    fitted = fit_or_load("char-gru", lambda: GRULM(cfg), data, trainer, config=cfg, modules=MODULES, log=log)
    return fitted, data


def scaling_config(num_hiddens: int, num_blks: int) -> dict:
    """The scaling study's GPT of width ``num_hiddens`` and depth ``num_blks`` (heads of 8 units, FFN 4N)."""
    return dict(
        num_hiddens=num_hiddens,
        num_heads=max(1, num_hiddens // 8),
        num_blks=num_blks,
        ffn_num_hiddens=4 * num_hiddens,
        dropout=0.0,
        max_len=64,
        lr=3e-3,
    )


def scaling_study(data=None, *, sizes=SCALING_SIZES, seed: int = 0, progress: bool | None = None, log=print):
    """Train (or load) one GPT per size in ``sizes`` for :data:`SCALING_EPOCHS`; returns a list of dicts with
    ``num_hiddens``, ``num_blks``, ``params`` (non-embedding), ``val_loss`` (held-out nats per character) and
    ``seconds`` (the training's wall time), smallest first."""
    data = _data(data)
    rows = []
    for N, L in sizes:
        fitted = _gpt(data, scaling_config(N, L), SCALING_EPOCHS, f"char-gpt-{N}x{L}", seed, progress, log)
        rows.append(
            dict(
                num_hiddens=N,
                num_blks=L,
                params=count_parameters(fitted.model, non_embedding=True),
                val_loss=math.log(perplexity(fitted.model, data)),
                seconds=fitted.seconds,
            )
        )
    return rows


def warm() -> None:
    """Train (or load) every model the section shows: the GPT, the GRU and the scaling study (``make release``)."""
    data = CharLMData()
    train_gpt(data)
    train_gru(data)
    scaling_study(data)
