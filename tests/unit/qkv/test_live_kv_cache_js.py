"""11.5's live key/value cache explorer computes in the page what ``qkv`` computes: ``js/kv_cache.js``'s functions,
run in Node on the data that ``qkv.widgets.multihead_attention.kv_cache_data`` makes, equal
``qkv.multihead.attention_costs`` and ``cache_curve`` within 1e-9 relative, for several models, contexts, batch
sizes and bytes per number; the aria-live line says the numbers that matter.

``tests/book/test_explorer_kv_cache.py`` reads the same results back from the drawing in Chromium.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

import pytest
import torch

from qkv.multihead import attention_costs
from qkv.widgets.multihead_attention import CONTEXTS, LLAMA2_70B, cache_curve, kv_cache_data
from tests.support.js_modules import call_module, node_or_skip

RTOL, ATOL = 1e-9, 1e-12

pytestmark = pytest.mark.usefixtures("_node")

#: A small model (GPT-2 small's attention: 768 features, 12 heads of 64, 12 layers) and a middle one (Llama 2 7B's).
SMALL = {"num_hiddens": 768, "num_heads": 12, "num_layers": 12}
MIDDLE = {"num_hiddens": 4096, "num_heads": 32, "num_layers": 32}


@pytest.fixture
def _node():
    node_or_skip()


def _close(js, reference, what: str):
    got = torch.tensor(js, dtype=torch.float64)
    want = torch.tensor(reference, dtype=torch.float64)
    torch.testing.assert_close(got, want, rtol=RTOL, atol=ATOL, msg=lambda m: f"{what}: {m}")


def _reach(model: dict, g: int, batch: int) -> int:
    """The fewest whole tokens at which qkv's cache of ``batch`` sequences is at least the attention weights' bytes."""
    N, H, L = model["num_hiddens"], model["num_heads"], model["num_layers"]
    params, per_token = attention_costs(N, H, g, 1, batch, L, 1)
    t = -(-params // per_token)
    assert attention_costs(N, H, g, t, batch, L, 2)[1] >= 2 * params > attention_costs(N, H, g, t - 1, batch, L, 2)[1]
    return t


def _gib(v: float) -> str:
    """GiB as the page writes them: toPrecision(3) (half away from zero on the exact value), grouped from 1,000."""
    if v >= 999.5:
        return f"{round(v):,}"
    exact = Decimal(v)
    step = Decimal(1).scaleb(exact.adjusted() - 2)
    return str(exact.quantize(step, rounding=ROUND_HALF_UP))  # 10.0, 22.5, 160, 0.0391


@pytest.mark.parametrize(
    "model, contexts, batches, bytes_per_number",
    [
        (LLAMA2_70B, CONTEXTS, (1, 2, 64), 2),
        (SMALL, (1, 7, 100, 1000, 2048), (1, 3, 16), 4),
        (MIDDLE, (512, 4096, 32_768, 100_000), (1, 8, 64), 1),
    ],
)
def test_cache_curve_and_attention_costs_are_qkvs(model, contexts, batches, bytes_per_number):
    data = kv_cache_data(model, contexts, batches, bytes_per_number)
    N, H, L = model["num_hiddens"], model["num_heads"], model["num_layers"]
    settings = [(g, b) for g in data["kv_heads"] for b in batches]
    calls = [("cacheCurve", [g, list(contexts), b, bytes_per_number, model]) for g, b in settings]
    calls += [("attentionCosts", [N, H, g, contexts[-1], b, L, bytes_per_number]) for g, b in settings]
    results = call_module("kv_cache", calls)
    curves, costs = results[: len(settings)], results[len(settings) :]
    for (g, b), (caches, weights), cost in zip(settings, curves, costs):
        what = f"N = {N}, H = {H}, G = {g}, batch {b}, {bytes_per_number} bytes"
        want_caches, want_weights = cache_curve(g, contexts, b, bytes_per_number, model)
        _close(caches, want_caches, f"{what}: the cache (GiB)")
        assert weights == pytest.approx(want_weights, rel=RTOL), f"{what}: the weights (GiB)"
        assert cost == list(attention_costs(N, H, g, contexts[-1], b, L, bytes_per_number)), what


@pytest.mark.parametrize(
    "model, contexts, settings",
    [
        (LLAMA2_70B, CONTEXTS, [(64, 1, 32_768), (8, 1, 32_768), (1, 1, 131_072), (8, 64, 1024), (2, 4, 8192)]),
        (SMALL, (16, 256, 4096), [(12, 1, 256), (3, 2, 16), (1, 64, 4096)]),
        (MIDDLE, (1000, 3000), [(32, 8, 3000), (4, 1, 1000)]),
    ],
)
def test_explore_is_qkvs_at_each_setting(model, contexts, settings):
    data = kv_cache_data(model, contexts)
    results = call_module("kv_cache", [("explore", [data, *setting]) for setting in settings])
    H = model["num_heads"]
    for (g, b, t), result in zip(settings, results):
        what = f"G = {g}, batch {b}, {t} tokens"
        caches, weights = cache_curve(g, contexts, b, model=model)
        assert (result["G"], result["batch"], result["context"]) == (g, b, t), what
        assert result["index"] == list(contexts).index(t)
        _close(result["caches"], caches, f"{what}: the cache")
        assert result["cache"] == pytest.approx(caches[list(contexts).index(t)], rel=RTOL), what
        assert result["weights"] == pytest.approx(weights, rel=RTOL), what
        _close(result["mha"], cache_curve(H, contexts, b, model=model)[0], f"{what}: multi-head")
        _close(result["mqa"], cache_curve(1, contexts, b, model=model)[0], f"{what}: multi-query")
        assert result["times"] == H / g and result["reach"] == _reach(model, g, b), what


def test_the_settings_make_a_difference_that_the_comparison_sees():
    """G, the batch and the bytes move the cache by factors, far beyond the tolerance: the comparisons can fail."""
    calls = [
        ("cacheCurve", [64, [32_768], 1, 2, LLAMA2_70B]),
        ("cacheCurve", [8, [32_768], 1, 2, LLAMA2_70B]),
        ("cacheCurve", [8, [32_768], 4, 2, LLAMA2_70B]),
        ("cacheCurve", [8, [32_768], 4, 1, LLAMA2_70B]),
    ]
    (mha, w64), (gqa, w8), (batch4, _), (bytes1, w8_bytes1) = call_module("kv_cache", calls)
    assert mha[0] == 8 * gqa[0] and batch4[0] == 4 * gqa[0] and bytes1[0] == 2 * gqa[0]
    assert mha[0] - gqa[0] > 60 and w64 - w8 > 10 and w8 - w8_bytes1 > 10  # GiB
    assert mha[0] == pytest.approx(80.0, rel=RTOL) and w8 == pytest.approx(22.5, rel=RTOL)


def test_summary_says_the_key_numbers():
    data = kv_cache_data()
    settings = [(8, 1, 32_768), (64, 1, 32_768), (1, 1, 131_072), (64, 64, 1024), (2, 4, 8192)]
    results = call_module("kv_cache", [("explore", [data, *setting]) for setting in settings])
    texts = call_module("kv_cache", [("summary", [result, data]) for result in results])
    assert texts[0] == (
        "G = 8, batch 1, 32,768 tokens: cache 10.0 GiB, 8 times less than multi-head; the attention weights take "
        "22.5 GiB; the cache reaches them at 73,728 tokens."
    )
    assert texts[1].startswith("G = 64, batch 1, 32,768 tokens: cache 80.0 GiB (multi-head attention); ")
    assert texts[2].endswith("64 times less than multi-head (multi-query); the attention weights take 20.3 GiB; "
                             "the cache reaches them at 532,480 tokens, beyond the chart.")  # fmt: skip
    assert texts[3].endswith("the cache reaches them at 256 tokens, before the chart begins.")
    for (g, b, t), text in zip(settings, texts):
        caches, weights = cache_curve(g, (t,), b)
        assert text.startswith(f"G = {g}, batch {b}, {t:,} tokens: cache {_gib(caches[0])} GiB"), text
        assert f"the attention weights take {_gib(weights)} GiB" in text, text
        assert f"reaches them at {_reach(LLAMA2_70B, g, b):,} tokens" in text, text
        if g not in (1, 64):
            assert f", {64 // g} times less than multi-head;" in text, text


def test_the_sliders_say_their_values():
    calls = [("spoken", ["num_kv_heads", g, 64]) for g in (8, 1, 64)]
    calls += [("spoken", ["batch_size", 1, 64]), ("spoken", ["batch_size", 16, 64]), ("spoken", ["context", 32768, 64])]
    assert call_module("kv_cache", calls) == [
        "G = 8 key/value heads (grouped-query)",
        "G = 1 key/value head (multi-query)",
        "G = 64 key/value heads (multi-head)",
        "batch of 1 sequence",
        "batch of 16 sequences",
        "32,768 tokens",
    ]


def test_explore_reads_a_setting_the_data_lack_as_the_nearest_they_have():
    data = kv_cache_data()
    results = call_module("kv_cache", [("explore", [data, 7, 3, 30_000]), ("explore", [data, 100, 1000, 1])])
    assert [(r["G"], r["batch"], r["context"]) for r in results] == [(8, 4, 32_768), (64, 64, 1024)]


def test_a_model_whose_heads_do_not_split_is_an_error_as_in_qkv():
    with pytest.raises(AssertionError, match="must split into num_heads = 64 heads, and those into num_kv_heads = 3"):
        call_module("kv_cache", [("attentionCosts", [8192, 64, 3, 1024])])


def test_the_chart_range_holds_every_setting():
    data = kv_cache_data()
    [(low, high)] = call_module("kv_cache", [("chartRange", [data])])
    assert low == cache_curve(1, CONTEXTS, 1)[0][0] and high == cache_curve(64, CONTEXTS, 64)[0][-1]
    labels = call_module("kv_cache", [("shortTokens", [t]) for t in (1024, 131_072, 1000)])
    assert labels == ["1K", "128K", "1,000"]
