"""Interactive explorer of D2L 11.5, "Multi-Head Attention" (``book/multihead-attention.md``): what sharing
key/value heads saves, with sliders for the number of key/value heads G, the batch size and a context length.

:func:`kv_cache_explorer` is a live explorer (:mod:`qkv.widgets._live`): the module ``js/kv_cache.js`` draws it, in
JupyterLab and in the book, from :func:`kv_cache_data` (the model's sizes and the axis), and computes in the page, in
float64, what :func:`cache_curve` computes here from :func:`qkv.multihead.attention_costs`: the key/value cache of a
model against the context length, beside the memory its attention weights take. The static :func:`kv_cache_grid`
stays for print and readers without JavaScript.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt

from qkv._validate import positive_int
from qkv.multihead import attention_costs
from qkv.plotting import use_svg_display
from qkv.widgets import _live as live

__all__ = [
    "BATCH_SIZES",
    "CONTEXTS",
    "LLAMA2_70B",
    "cache_curve",
    "kv_cache_data",
    "kv_cache_explorer",
    "kv_cache_grid",
]

#: The attention of a model the size of Llama 2 70B (Touvron et al., 2023): num_hiddens, num_heads, num_layers.
LLAMA2_70B = {"num_hiddens": 8192, "num_heads": 64, "num_layers": 80}
#: The context lengths on the explorer's axis, 1,024 to 131,072 tokens.
CONTEXTS = tuple(2**k for k in range(10, 18))
#: The batch sizes of the explorer's slider, 1 to 64 sequences.
BATCH_SIZES = tuple(2**k for k in range(7))
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


def _draw(ax, num_kv_heads: int, batch_size: int, model: dict) -> None:
    """One panel of :func:`kv_cache_grid` (the live explorer adds multi-head and multi-query attention in grey)."""
    H = model["num_heads"]
    caches, weights = cache_curve(num_kv_heads, CONTEXTS, batch_size, model=model)
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
        _draw(ax, g, batch_size, model)
    fig.tight_layout()
    return fig


def _check_model(model) -> dict:
    """``model`` as a dict of three positive ints, its width splitting into its heads; a clear error if not."""
    keys = ("num_hiddens", "num_heads", "num_layers")
    if not isinstance(model, Mapping) or any(key not in model for key in keys):
        raise ValueError(f"a model is a dict with the keys {', '.join(keys)}, got {model!r}")
    sizes = {key: positive_int(model[key], f"model[{key!r}]") for key in keys}
    if sizes["num_hiddens"] % sizes["num_heads"]:
        raise ValueError(f"num_hiddens = {sizes['num_hiddens']} must split into num_heads = {sizes['num_heads']} heads")
    return sizes


def _increasing(values: Sequence[int], what: str) -> list[int]:
    values = [positive_int(v, f"each {what}") for v in values]
    if not values:
        raise ValueError(f"give at least one {what}")
    if any(a >= b for a, b in zip(values, values[1:])):
        raise ValueError(f"the {what}s must increase, got {values}")
    return values


def _middle_kv_heads(num_heads: int) -> int:
    """The static figure's middle panel: 8 key/value heads (Llama 2 70B's), or the largest divisor of H below it."""
    return max(g for g in _divisors(num_heads) if g <= 8)


def kv_cache_data(
    model: dict = LLAMA2_70B,
    contexts: Sequence[int] = CONTEXTS,
    batch_sizes: Sequence[int] = BATCH_SIZES,
    bytes_per_number: int = 2,
) -> dict:
    """What ``js/kv_cache.js`` draws from, as JSON values (D2L 11.5, beyond D2L): the sizes of ``model``, the numbers
    of key/value heads its slider offers (the divisors of ``num_heads``), the context lengths of the axis (increasing),
    the batch sizes of its slider (increasing) and the bytes of every number. The page computes the curves from them,
    as :func:`cache_curve` does."""
    sizes = _check_model(model)
    return {
        "model": sizes,
        "kv_heads": _divisors(sizes["num_heads"]),
        "contexts": _increasing(contexts, "context length"),
        "batch_sizes": _increasing(batch_sizes, "batch size"),
        "bytes_per_number": positive_int(bytes_per_number, "bytes_per_number"),
    }


def kv_cache_explorer(model: dict = LLAMA2_70B):
    """Explore grouped-query attention's savings: sliders for the number of key/value heads G (the divisors of the
    number of heads), the batch size (1 to 64) and the context length read off the chart (D2L 11.5, beyond D2L).

    Draws the cache of ``model`` against the context length, 16-bit numbers, for the chosen G (with multi-head and
    multi-query attention in grey) beside the memory of the attention weights, and rings the chosen context; a line
    of text says the cache there, how many times less than multi-head attention's it is, the weights' memory and the
    context length at which the cache reaches it.

    Returns:
        In Jupyter, a live widget (``js/kv_cache.js``; its traitlets ``num_kv_heads``, ``batch_size`` and ``context``
        are the sliders). During the book build (:func:`qkv.widgets.static_mode`), the same explorer for the page,
        after the static :func:`kv_cache_grid` for G = H, 8 and 1 that it replaces; without anywidget, that figure
        alone (:mod:`qkv.widgets._live`).
    """
    sizes = _check_model(model)
    H = sizes["num_heads"]
    return live.explorer(
        "kv_cache",
        data=lambda: kv_cache_data(sizes),
        settings={"num_kv_heads": H, "batch_size": 1, "context": 32_768},  # the context of the page's table
        static=lambda: kv_cache_grid(sorted({H, _middle_kv_heads(H), 1}, reverse=True), model=sizes),
        label="Key/value cache explorer: choose the number G of key/value heads, the batch size and a context length",
    )
