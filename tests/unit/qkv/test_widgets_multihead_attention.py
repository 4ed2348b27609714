"""Tests for qkv.widgets.multihead_attention (D2L 11.5): the key/value cache against the context length, and the
explorer of grouped-query attention's savings in Jupyter and in the book."""

import matplotlib

matplotlib.use("Agg")

import anywidget  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from qkv.widgets import _live as live  # noqa: E402
from qkv.widgets.multihead_attention import (  # noqa: E402
    BATCH_SIZES,
    CONTEXTS,
    LLAMA2_70B,
    cache_curve,
    kv_cache_data,
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


def test_explorer_data_are_the_models_sizes_and_the_axis():
    data = kv_cache_data()
    assert data == {
        "model": LLAMA2_70B,
        "kv_heads": [1, 2, 4, 8, 16, 32, 64],
        "contexts": list(CONTEXTS),
        "batch_sizes": [1, 2, 4, 8, 16, 32, 64],
        "bytes_per_number": 2,
    }
    assert list(BATCH_SIZES) == data["batch_sizes"]
    small = kv_cache_data({"num_hiddens": 768, "num_heads": 12, "num_layers": 12}, (16, 256), (1, 3), 4)
    assert small["kv_heads"] == [1, 2, 3, 4, 6, 12] and small["contexts"] == [16, 256]
    assert small["batch_sizes"] == [1, 3] and small["bytes_per_number"] == 4


@pytest.mark.parametrize(
    "args, error, message",
    [
        (({"num_hiddens": 100, "num_heads": 64, "num_layers": 80},), ValueError, "must split into num_heads = 64"),
        (({"num_hiddens": 8192, "num_heads": 64},), ValueError, "num_layers"),
        (({"num_hiddens": 8192, "num_heads": 0, "num_layers": 80},), ValueError, "model\\['num_heads'\\]"),
        ((LLAMA2_70B, ()), ValueError, "at least one context length"),
        ((LLAMA2_70B, (4096, 1024)), ValueError, "context lengths must increase"),
        ((LLAMA2_70B, CONTEXTS, (1, 2.5)), TypeError, "each batch size"),
        ((LLAMA2_70B, CONTEXTS, (1, 2), 0), ValueError, "bytes_per_number"),
    ],
)
def test_bad_explorer_data_raise_clear_errors(args, error, message):
    with pytest.raises(error, match=message):
        kv_cache_data(*args)


def test_explorer_is_a_live_widget(jupyter):
    panel = kv_cache_explorer()
    assert isinstance(panel, anywidget.AnyWidget)
    assert panel._esm == live.module_text("kv_cache")
    assert panel.data == kv_cache_data()
    assert (panel.num_kv_heads, panel.batch_size, panel.context) == (64, 1, 32_768)
    panel.num_kv_heads, panel.batch_size, panel.context = 8, 4, 131_072  # what the sliders set
    assert panel.get_state(["num_kv_heads", "batch_size", "context"]) == {
        "num_kv_heads": 8,
        "batch_size": 4,
        "context": 131_072,
    }
    small = kv_cache_explorer({"num_hiddens": 768, "num_heads": 12, "num_layers": 12})
    assert small.num_kv_heads == 12 and small.data["kv_heads"] == [1, 2, 3, 4, 6, 12]


def test_a_bad_model_is_a_clear_error_before_anything_is_drawn(jupyter):
    with pytest.raises(ValueError, match="must split into num_heads = 7"):
        kv_cache_explorer({"num_hiddens": 64, "num_heads": 7, "num_layers": 2})


def test_explorer_draws_a_static_grid_in_the_book(book_build):
    explorer = kv_cache_explorer()
    assert isinstance(explorer, live.BookExplorer) and explorer.name == "kv_cache"
    assert explorer.settings == {"num_kv_heads": 64, "batch_size": 1, "context": 32_768}
    assert explorer.data == kv_cache_data()
    fig = explorer.figure
    assert isinstance(fig, Figure) and not plt.fignum_exists(fig.number)
    assert [ax.get_title() for ax in fig.axes] == [f"G = {g} of 64 heads, batch 1" for g in (64, 8, 1)]
    for ax, g in zip(fig.axes, (64, 8, 1)):
        (cache,) = [line for line in ax.get_lines() if line.get_label().endswith("key/value cache")]
        assert list(cache.get_ydata()) == pytest.approx(cache_curve(g, model=LLAMA2_70B)[0])
        assert list(cache.get_xdata()) == list(CONTEXTS)
        (flat,) = [line for line in ax.get_lines() if line.get_label().endswith("attention weights")]
        assert list(flat.get_ydata()) == pytest.approx([cache_curve(g)[1]] * 2)


def test_the_static_grid_of_a_model_without_8_heads_to_share_uses_the_largest_fewer(book_build):
    """12 heads: the middle panel is G = 6, the largest divisor of 12 up to Llama 2 70B's 8."""
    fig = kv_cache_explorer({"num_hiddens": 768, "num_heads": 12, "num_layers": 12}).figure
    assert [ax.get_title() for ax in fig.axes] == [f"G = {g} of 12 heads, batch 1" for g in (12, 6, 1)]


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


def test_the_books_words_on_the_batch_hold():
    """'...with 8 sequences even the grouped-query cache reaches the weights at 9,216 tokens' (the explorer's text)."""
    from course import notebooks as nbs
    from course.section import section

    cells = nbs.read(section("multihead-attention").path).cells
    text = " ".join(" ".join(c.source.split()) for c in cells if c.cell_type == "markdown")
    assert "with 8 sequences even the grouped-query cache reaches the weights at 9,216 tokens" in text
    caches, weights = cache_curve(8, contexts=(9215, 9216), batch_size=8)
    assert caches[0] < weights == caches[1]
