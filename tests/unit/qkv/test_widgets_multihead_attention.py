"""Tests for qkv.widgets.multihead_attention (D2L 11.5): the key/value cache against the context length, and the
explorer of grouped-query attention's savings in Jupyter and in the book."""

import matplotlib

matplotlib.use("Agg")

import ipywidgets  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from qkv.widgets.multihead_attention import (  # noqa: E402
    CONTEXTS,
    LLAMA2_70B,
    cache_curve,
    kv_cache_explorer,
    kv_cache_grid,
)

pytestmark = pytest.mark.usefixtures("close_figures")


def test_cache_curve_by_hand():
    """Llama-2-70B-sized attention: 80 layers, keys and values of G heads of 128 numbers, 2 bytes each."""
    caches, weights = cache_curve(8, contexts=(1024, 4096), batch_size=3)
    per_token = 80 * 2 * 8 * 128 * 2  # bytes: layers, keys and values, G heads, head size, bytes per number
    assert caches == [3 * 1024 * per_token / 2**30, 3 * 4096 * per_token / 2**30]
    assert weights == 80 * (2 * 8192 * 8192 + 2 * 8192 * 8 * 128) * 2 / 2**30
    mha, _ = cache_curve(64, contexts=(1024,))
    mqa, _ = cache_curve(1, contexts=(1024,))
    assert mha[0] == 64 * mqa[0] == 8 * cache_curve(8, contexts=(1024,))[0][0]


def test_bad_settings_raise_clear_errors():
    with pytest.raises(ValueError, match="at least 1"):
        cache_curve(0)
    with pytest.raises(TypeError, match="integer"):
        cache_curve(8, batch_size=1.5)
    with pytest.raises(ValueError, match="at least one context"):
        cache_curve(8, contexts=())
    with pytest.raises(ValueError, match="num_kv_heads"):
        cache_curve(3)  # 64 heads do not split into 3 groups
    with pytest.raises(ValueError, match="at least one number"):
        kv_cache_grid(())


def test_explorer_is_an_interactive_widget_that_redraws(jupyter):
    panel = kv_cache_explorer()
    assert isinstance(panel, ipywidgets.interactive)
    g, batch = panel.children[0], panel.children[1]
    assert list(g.options) == [1, 2, 4, 8, 16, 32, 64] and g.value == 64
    for heads, size in [(8, 1), (1, 4), (64, 2)]:
        g.value, batch.value = heads, size
        (ax,) = panel.result.axes
        assert f"G = {heads} of 64 heads, batch {size}" == ax.get_title()
        caches, weights = cache_curve(heads, batch_size=size)
        mine = [line for line in ax.get_lines() if line.get_label().endswith("key/value cache")]
        assert list(mine[0].get_ydata()) == pytest.approx(caches)
        assert list(mine[0].get_xdata()) == list(CONTEXTS)
        flat = [line for line in ax.get_lines() if line.get_label().endswith("attention weights")]
        assert list(flat[0].get_ydata()) == pytest.approx([weights, weights])
        others = {line.get_label() for line in ax.get_lines()} - {mine[0].get_label(), flat[0].get_label()}
        assert others == {"G = 64 (MHA)", "G = 1 (MQA)"} - {f"G = {heads}" + (" (MHA)" if heads == 64 else " (MQA)")}


def test_explorer_draws_a_static_grid_in_the_book(book_build):
    fig = kv_cache_explorer()
    assert isinstance(fig, Figure) and not plt.fignum_exists(fig.number)
    assert [ax.get_title() for ax in fig.axes] == [f"G = {g} of 64 heads, batch 1" for g in (64, 8, 1)]
    for ax, g in zip(fig.axes, (64, 8, 1)):
        (cache,) = [line for line in ax.get_lines() if line.get_label().endswith("key/value cache")]
        assert list(cache.get_ydata()) == pytest.approx(cache_curve(g, model=LLAMA2_70B)[0])


def test_the_books_alt_text_of_the_explorer_holds():
    """'...the multi-head cache reaches it at 16,384 tokens, the grouped-query cache between 65,536 and 131,072
    tokens, and the multi-query cache not at all in this range' (1,024 to 131,072 tokens)."""
    from course import notebooks as nbs
    from course.section import section

    cells = nbs.read(section("multihead-attention").path).cells
    alt = " ".join(c.metadata.get("mystnb", {}).get("image", {}).get("alt", "") for c in cells)
    assert "reaches at 16,384 tokens, the grouped-query cache between 65,536 and 131,072 tokens" in alt
    assert CONTEXTS[0] == 1024 and CONTEXTS[-1] == 131_072 and "1,024 to 131,072 tokens" in alt
    at = dict(zip(CONTEXTS, cache_curve(64)[0]))
    assert at[16_384] == cache_curve(64)[1] and at[8192] < cache_curve(64)[1]
    gqa, gqa_weights = cache_curve(8)
    assert dict(zip(CONTEXTS, gqa))[65_536] < gqa_weights < dict(zip(CONTEXTS, gqa))[131_072]
    mqa, mqa_weights = cache_curve(1)
    assert max(mqa) < mqa_weights
