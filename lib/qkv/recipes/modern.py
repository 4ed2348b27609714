"""How the modern-decoder lab's two language models are trained: 11.9's character GPT and a Llama-style decoder of
the same size, for the same steps, trained once, then loaded (the course's machinery beside
:mod:`qkv.modern_decoder`).

:func:`train_pair` trains (or loads) both for :data:`qkv.recipes.lm.GPT_EPOCHS` epochs of 11.9's windows of *The
Time Machine*, with one seed each of :data:`SEEDS`; :func:`warm` trains them all (the lab's ``trains:``).
"""

from __future__ import annotations

from qkv.lm import CharLMData, perplexity
from qkv.modern_decoder import ModernConfig, ModernDecoderLM
from qkv.pretraining import DecoderOnlyLM, GPTConfig
from qkv.recipes.lm import GPT_CONFIG, GPT_EPOCHS

__all__ = ["MODERN_CONFIG", "SEEDS", "train_pair", "warm"]

#: The qkv modules whose code, besides the models' own, determines these weights (the key's sources).
MODULES = ("qkv.lm", "qkv.modern_decoder", "qkv.recipes.modern")

#: The modern decoder: 11.9's width, heads, depth, context and learning rate; 2 key/value heads for the 4 query
#: heads; SwiGLU widened from 176 (8/3 of 64, rounded up to 16) to 204 so that the two models' parameter counts
#: agree within 0.5% (the grouped keys and values and the missing position table save about 10,000).
MODERN_CONFIG = dict(
    num_hiddens=64, num_heads=4, num_kv_heads=2, num_blks=2, ffn_num_hiddens=204, max_len=64, lr=GPT_CONFIG["lr"]
)
#: Three seeds: the difference between the two decoders is read against the spread between seeds.
SEEDS = (0, 1, 2)


def _trainer(seed: int, progress):
    from qkv.training import Trainer

    return Trainer(GPT_EPOCHS, gradient_clip_val=1.0, device="cpu", seed=seed, progress=progress)


def train_pair(data=None, *, seed: int = 0, progress: bool | None = None, log=print) -> dict:
    """11.9's GPT and the modern decoder, each trained (or loaded) with ``seed``; returns a dict keyed ``"gpt"`` and
    ``"modern"`` of ``{"fitted": Fitted, "perplexity": held-out perplexity}``, with ``"data"`` the
    :class:`CharLMData`."""
    from qkv.recipes.weights import fit_or_load

    data = CharLMData() if data is None else data
    V = len(data.vocab)
    gpt_cfg = GPTConfig(vocab_size=V, **GPT_CONFIG)
    modern_cfg = ModernConfig(vocab_size=V, **MODERN_CONFIG)
    out = {"data": data}
    for name, build, cfg in (
        ("gpt", lambda: DecoderOnlyLM(gpt_cfg), gpt_cfg),
        ("modern", lambda: ModernDecoderLM(modern_cfg), modern_cfg),
    ):
        fitted = fit_or_load(
            f"lab-{name}-seed{seed}", build, data, _trainer(seed, progress), config=cfg, modules=MODULES, log=log
        )
        out[name] = {"fitted": fitted, "perplexity": perplexity(fitted.model, data)}
    return out


def warm() -> None:
    """Train (or load) both decoders for every seed of :data:`SEEDS` (``make release``, the book's build)."""
    data = CharLMData()
    for seed in SEEDS:
        train_pair(data, seed=seed)
