"""Interactive explorer of D2L 11.5, "Multi-Head Attention" (``book/multihead-attention.md``): what sharing
key/value heads saves, with a slider for the number of key/value heads G and one for the batch size.

:func:`kv_cache_explorer` returns the controls in Jupyter and the static :func:`kv_cache_grid` in the book (see
:mod:`qkv.widgets`). What it draws is computed by :func:`cache_curve`, from :func:`qkv.multihead.attention_costs`:
the key/value cache of a model against the context length, beside the memory its attention weights take.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt

from qkv._validate import positive_int
from qkv.multihead import attention_costs
from qkv.plotting import use_svg_display
from qkv.widgets import ipywidgets_or_none, static_figure

__all__ = ["LLAMA2_70B", "CONTEXTS", "cache_curve", "kv_cache_grid", "kv_cache_explorer"]

#: The attention of a model the size of Llama 2 70B (Touvron et al., 2023): num_hiddens, num_heads, num_layers.
LLAMA2_70B = {"num_hiddens": 8192, "num_heads": 64, "num_layers": 80}
#: The context lengths on the explorer's axis, 1,024 to 131,072 tokens.
CONTEXTS = tuple(2**k for k in range(10, 18))
GIB = 2**30


def cache_curve(
    num_kv_heads: int,
    contexts: Sequence[int] = CONTEXTS,
    batch_size: int = 1,
    bytes_per_number: int = 2,
    model: dict = LLAMA2_70B,
) -> tuple[list[float], float]:
    """The key/value cache, in GiB, at each context length, and the attention weights' memory, in GiB, of
    ``model`` with ``num_kv_heads`` key/value heads, ``batch_size`` sequences and ``bytes_per_number`` bytes for
    every number (cache and weights alike) (D2L 11.5, beyond D2L)."""
    num_kv_heads = positive_int(num_kv_heads, "num_kv_heads")
    batch_size = positive_int(batch_size, "batch_size")
    contexts = [positive_int(t, "each context length") for t in contexts]
    if not contexts:
        raise ValueError("give at least one context length")
    N, H, L = model["num_hiddens"], model["num_heads"], model["num_layers"]
    caches = [
        attention_costs(N, H, num_kv_heads, t, batch_size, L, bytes_per_number)[1] / GIB for t in contexts
    ]  # fmt: skip
    params = attention_costs(N, H, num_kv_heads, 1, 1, L, bytes_per_number)[0]
    return caches, params * bytes_per_number / GIB


def _divisors(n: int) -> list[int]:
    return [g for g in range(1, n + 1) if n % g == 0]


def _draw(ax, num_kv_heads: int, batch_size: int, model: dict, mark_others: bool = True) -> None:
    H = model["num_heads"]
    caches, weights = cache_curve(num_kv_heads, CONTEXTS, batch_size, model=model)
    if mark_others:
        for g, style in ((H, ":"), (1, "--")):
            if g != num_kv_heads:
                other, _ = cache_curve(g, CONTEXTS, batch_size, model=model)
                ax.plot(CONTEXTS, other, style, color="0.5", label=f"G = {g}" + (" (MHA)" if g == H else " (MQA)"))
    ax.plot(CONTEXTS, caches, "o-", color="C3", label=f"G = {num_kv_heads}: key/value cache")
    ax.axhline(weights, color="C0", label=f"G = {num_kv_heads}: attention weights")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("context length (tokens)")
    ax.set_ylabel("GiB (16-bit numbers)")
    ax.set_title(f"G = {num_kv_heads} of {H} heads, batch {batch_size}", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)


def kv_cache_grid(kv_heads: Sequence[int] = (64, 8, 1), batch_size: int = 1, model: dict = LLAMA2_70B):
    """One panel per number of key/value heads in ``kv_heads``: the cache against the context length and the
    attention weights' memory, for ``model`` (D2L 11.5, beyond D2L). Returns the ``Figure``."""
    kv_heads = [positive_int(g, "each number of key/value heads") for g in kv_heads]
    if not kv_heads:
        raise ValueError("give at least one number of key/value heads")
    use_svg_display()
    fig, axes = plt.subplots(1, len(kv_heads), figsize=(3.6 * len(kv_heads), 3.2), sharey=True, squeeze=False)
    for ax, g in zip(axes[0], kv_heads):
        _draw(ax, g, batch_size, model, mark_others=False)
    fig.tight_layout()
    return fig


def kv_cache_explorer(model: dict = LLAMA2_70B):
    """Explore grouped-query attention's savings: sliders for the number of key/value heads G (the divisors of the
    number of heads) and the batch size (D2L 11.5, beyond D2L).

    Returns:
        In Jupyter, an ``ipywidgets.interactive`` panel (its ``result`` is the latest figure). During the book
        build, or without ipywidgets, the static :func:`kv_cache_grid` for G = H, 8 and 1 instead.
    """
    H = model["num_heads"]
    widgets = ipywidgets_or_none()
    if widgets is None:
        return static_figure(kv_cache_grid(sorted({H, min(8, H), 1}, reverse=True), model=model))
    last = {"fig": None}

    def draw(num_kv_heads, batch_size):
        if last["fig"] is not None:
            plt.close(last["fig"])
        fig, ax = plt.subplots(figsize=(6, 3.6))
        _draw(ax, num_kv_heads, batch_size, model)
        fig.tight_layout()
        last["fig"] = fig
        return fig

    g = widgets.SelectionSlider(options=_divisors(H), value=H, description="G")
    batch = widgets.SelectionSlider(options=[1, 2, 4, 8, 16, 32, 64], value=1, description="batch")
    return widgets.interactive(draw, num_kv_heads=g, batch_size=batch)
