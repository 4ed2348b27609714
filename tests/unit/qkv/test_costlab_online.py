"""Tests of qkv.costlab.online (D2L 11.6.2, the attention-cost lab): attention block by block with an online softmax
equals masked attention computed with plain loops, for any block size, and its memory grows linearly in n."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from qkv import timing
from qkv.attention import masked_softmax
from qkv.costlab.online import LiveTensorBytes, online_attention


def loop_attention(q, k, v, lens):
    """Masked scaled dot-product attention by explicit loops over Python floats; lens[b][i] keys for query i of b."""
    out = []
    for b in range(len(q)):
        rows = []
        for i, qi in enumerate(q[b]):
            s = [sum(x * y for x, y in zip(qi, kj)) / math.sqrt(len(qi)) for kj in k[b][: lens[b][i]]]
            top = max(s)
            e = [math.exp(x - top) for x in s]
            rows.append([sum(e[j] * v[b][j][c] for j in range(len(e))) / sum(e) for c in range(len(v[b][0]))])
        out.append(rows)
    return torch.tensor(out, dtype=torch.float64)


@settings(max_examples=40, deadline=None)
@given(
    B=st.integers(1, 2),
    Q=st.integers(1, 6),
    K=st.integers(1, 13),
    d=st.integers(1, 5),
    v=st.integers(1, 4),
    block=st.integers(1, 16),
    per_query=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_equals_masked_attention_by_loops_for_any_block_size(B, Q, K, d, v, block, per_query, seed):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, Q, d, generator=g, dtype=torch.float64)
    k = torch.randn(B, K, d, generator=g, dtype=torch.float64)
    vals = torch.randn(B, K, v, generator=g, dtype=torch.float64)
    lens = torch.randint(1, K + 1, (B, Q) if per_query else (B,), generator=g)
    full_lens = lens.tolist() if per_query else [[n] * Q for n in lens.tolist()]
    got = online_attention(q, k, vals, lens, block_size=block)
    torch.testing.assert_close(
        got, loop_attention(q.tolist(), k.tolist(), vals.tolist(), full_lens), atol=1e-12, rtol=0
    )
    no_mask = online_attention(q, k, vals, None, block_size=block)
    torch.testing.assert_close(no_mask, loop_attention(q.tolist(), k.tolist(), vals.tolist(), [[K] * Q] * B))


def test_large_scores_do_not_overflow():
    """Scores of several thousand: exp without the running maximum overflows to inf; the online softmax does not."""
    q = torch.tensor([[[60.0, 0.0], [0.0, -70.0]]], dtype=torch.float64)  # (1, 2, 2)
    k = torch.tensor([[[1.0, 1.0], [90.0, 2.0], [100.0, 0.5], [-3.0, 100.0]]], dtype=torch.float64)  # (1, 4, 2)
    v = torch.arange(8, dtype=torch.float64).reshape(1, 4, 2)  # (1, 4, 2)
    expected = masked_softmax(q @ k.transpose(1, 2) / math.sqrt(2), None) @ v  # (1, 2, 2)
    for block in (1, 3, 4):
        got = online_attention(q, k, v, block_size=block)
        assert torch.isfinite(got).all()
        torch.testing.assert_close(got, expected, atol=1e-12, rtol=0)


def test_float32_meta_and_dtype():
    q = torch.randn(2, 5, 4)
    out = online_attention(q, q, torch.randn(2, 5, 3), torch.tensor([2, 5]), block_size=2)
    assert out.dtype == torch.float32 and out.shape == (2, 5, 3)
    m = torch.empty(2, 5, 4, device="meta")
    out = online_attention(m, m, torch.empty(2, 5, 3, device="meta"), torch.tensor([2, 5], device="meta"), 2)
    assert out.device.type == "meta" and out.shape == (2, 5, 3)


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, None])
def test_bad_block_size_says_what_to_pass(bad):
    x = torch.randn(1, 3, 2)
    with pytest.raises(ValueError, match="block_size must be a positive int"):
        online_attention(x, x, x, block_size=bad)


def test_bad_shapes_name_the_expected_layout():
    with pytest.raises(ValueError, match=r"queries \(B, Q, d\)"):
        online_attention(torch.randn(3, 2), torch.randn(1, 3, 2), torch.randn(1, 3, 2))


def _peak(fn, n, d=8, block=16):
    x = torch.randn(1, n, d, dtype=torch.float64)  # (B, T, d)
    with LiveTensorBytes(x) as probe:
        fn(x, x, x, block)
    return probe.peak


def test_memory_grows_linearly_for_online_and_quadratically_when_materialised():
    ns = [64, 128, 256, 512]

    def materialised(q, k, v, block):
        return masked_softmax(q @ k.transpose(1, 2) / math.sqrt(q.shape[-1]), None) @ v  # (B, T, T) @ (B, T, d)

    def online(q, k, v, block):
        return online_attention(q, k, v, block_size=block)

    _, k_online = timing.fit_power_law(ns, [_peak(online, n) for n in ns])
    _, k_full = timing.fit_power_law(ns, [_peak(materialised, n) for n in ns])
    assert 0.9 < k_online < 1.1
    assert 1.9 < k_full < 2.1
    # at n = 512 the materialised (n, n) float64 scores alone take 2 MiB; the online blocks a few hundred KiB
    assert _peak(materialised, 512) >= 512 * 512 * 8 > 4 * _peak(online, 512)


def test_probe_counts_live_tensors_only_and_not_the_inputs():
    x = torch.randn(1000, dtype=torch.float64)
    with LiveTensorBytes(x) as probe:
        y = x * 2  # 8000 bytes, alive
        z = y[:10] + 1  # 80 more; y[:10] is a view of y, not new memory
        del y
        w = torch.zeros(500, dtype=torch.float64)  # y freed first: 80 + 4000
        x.add_(1)  # in place on an input: not counted
    assert probe.peak == 8000 + 80
    assert z.shape == (10,) and w.shape == (500,)


def test_probe_keeps_a_storage_while_any_of_its_views_lives():
    """A storage counts while any tensor on it lives: one view dying does not free it (a = ones(1000); v = a[:10];
    del v: a still holds its 8,000 bytes, as it does when a dies and v lives), and it counts once, not per view."""
    with LiveTensorBytes() as probe:
        a = torch.ones(1000, dtype=torch.float64)
        v = a[:10]
        w = a[500:]  # a second view: still one storage
        del v
        b = torch.zeros(500, dtype=torch.float64)  # one more operation, with a alive
    size_a, size_b = a.untyped_storage().nbytes(), b.untyped_storage().nbytes()
    assert (size_a, size_b) == (8000, 4000) and w.shape == (500,)
    assert probe.peak == size_a + size_b, f"peak {probe.peak}: a ({size_a} bytes) must count while a lives"

    with LiveTensorBytes() as probe:
        a = torch.ones(1000, dtype=torch.float64)
        v = a[:10]
        del a
        b = torch.zeros(500, dtype=torch.float64)  # the view alone holds all of a's storage
    assert probe.peak == v.untyped_storage().nbytes() + b.untyped_storage().nbytes() == 12000

    with LiveTensorBytes() as probe:
        a = torch.ones(1000, dtype=torch.float64)
        v = a[:10]
        del a, v
        b = torch.zeros(500, dtype=torch.float64)  # every tensor on a's storage is gone: it no longer counts
    assert probe.peak == 8000


def test_probe_sees_meta_tensors_without_allocating():
    x = torch.empty(10, 10, device="meta")
    with LiveTensorBytes(x) as probe:
        y = x @ x  # (10, 10) float32: 400 bytes
    assert y.device.type == "meta" and probe.peak == 400


def test_probe_accepts_a_tensor_returned_twice():
    """Dropout in evaluation mode returns its input itself: recording a tensor a second time must not compare it."""
    x = torch.randn(3, 4)
    with LiveTensorBytes(x) as probe:
        y = x * 2  # 48 bytes
        z = torch.nn.functional.dropout(y, 0.5, training=False)  # y itself
    assert z is y and probe.peak == 48
