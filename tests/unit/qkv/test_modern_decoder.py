"""Tests of qkv.modern_decoder (the modern-decoder lab, after D2L 11.9): each part against an independent reference.

RMSNorm against ``torch.nn.RMSNorm`` with copied weights; SwiGLU against its formula; the block against a
reimplementation from PyTorch's own pieces (``torch.nn.RMSNorm``, rotary positions by complex multiplication,
``scaled_dot_product_attention(..., enable_gqa=True, is_causal=True)``) with copied weights; the cache against the
full recomputation; nucleus sampling against a brute-force search over the sets of tokens.
"""

from __future__ import annotations

import itertools

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from qkv.lm import count_parameters
from qkv.modern_decoder import (
    LayerCache,
    ModernConfig,
    ModernDecoderBlock,
    ModernDecoderLM,
    RMSNorm,
    SwiGLU,
    swiglu_hiddens,
    top_p_distribution,
)
from qkv.pretraining import DecoderOnlyLM, GPTConfig

torch.set_default_dtype(torch.float32)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 4), st.integers(1, 33), st.sampled_from([torch.float32, torch.float64]), st.integers(0, 10**6))
def test_rmsnorm_equals_torchs_with_copied_weights(batch, width, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(batch, 3, width, generator=g, dtype=dtype) * 3
    ours, theirs = RMSNorm(width, eps=1e-5).to(dtype), torch.nn.RMSNorm(width, eps=1e-5, dtype=dtype)
    with torch.no_grad():
        ours.weight.copy_(torch.randn(width, generator=g, dtype=dtype))
        theirs.weight.copy_(ours.weight)
    torch.testing.assert_close(ours(X), theirs(X))


def test_rmsnorm_is_scale_free_and_keeps_a_half_input_half():
    X = torch.randn(4, 16)
    norm = RMSNorm(16)
    torch.testing.assert_close(norm(5 * X), norm(X), atol=1e-5, rtol=1e-5)  # no mean, no shift: only the scale
    assert norm(X).pow(2).mean(-1).sub(1).abs().max() < 1e-4  # unit root mean square with the initial scale
    half = norm(X.to(torch.bfloat16))
    assert half.dtype == torch.bfloat16
    torch.testing.assert_close(half.float(), norm(X), atol=2e-2, rtol=2e-2)
    with pytest.raises(ValueError, match="last axis is 8"):
        norm(torch.randn(2, 8))
    with pytest.raises(ValueError, match="eps must be a positive number"):
        RMSNorm(4, eps=0)


@given(st.integers(1, 2000), st.sampled_from([1, 8, 16, 64, 256]))
def test_swiglu_width_is_eight_thirds_rounded_up_to_the_multiple(width, multiple):
    F_ = swiglu_hiddens(width, multiple)
    assert F_ % multiple == 0 and 8 * width <= 3 * F_ < 8 * width + 3 * multiple
    assert swiglu_hiddens(64) == 176


def test_swiglu_is_its_formula_and_has_the_parameters_of_a_4x_mlp():
    torch.manual_seed(0)
    ffn, X = SwiGLU(24), torch.randn(2, 5, 24)
    expected = (F.silu(X @ ffn.W_gate.weight.T) * (X @ ffn.W_up.weight.T)) @ ffn.W_down.weight.T
    torch.testing.assert_close(ffn(X), expected)
    assert count_parameters(ffn) == 3 * 24 * swiglu_hiddens(24) and all(m.bias is None for m in ffn.children())
    assert abs(count_parameters(SwiGLU(96, 256)) - 2 * 96 * 4 * 96) / (2 * 96 * 4 * 96) < 0.01


def _rope_complex(x: torch.Tensor, offset: int, base: float = 10000.0) -> torch.Tensor:
    """Rotary positions by complex multiplication (Su et al.'s form), independent of qkv.positional."""
    T, h = x.shape[-2], x.shape[-1]
    theta = base ** (-torch.arange(0, h, 2, dtype=torch.float64) / h)  # (h/2,)
    angles = torch.arange(offset, offset + T, dtype=torch.float64)[:, None] * theta  # (T, h/2)
    z = torch.view_as_complex(x.double().reshape(*x.shape[:-1], h // 2, 2).contiguous())  # (..., T, h/2)
    return torch.view_as_real(z * torch.polar(torch.ones_like(angles), angles)).flatten(-2).to(x.dtype)


def _reference_block(blk: ModernDecoderBlock, X: torch.Tensor) -> torch.Tensor:
    """The block rebuilt from PyTorch's pieces with its weights copied."""
    B, T, N = X.shape
    H, G, h = blk.num_heads, blk.num_kv_heads, blk.head_dim
    norm1, norm2 = (torch.nn.RMSNorm(N, eps=1e-6, dtype=X.dtype) for _ in range(2))
    with torch.no_grad():
        norm1.weight.copy_(blk.attn_norm.weight)
        norm2.weight.copy_(blk.ffn_norm.weight)
    A = norm1(X)
    q = _rope_complex((A @ blk.W_q.weight.T).reshape(B, T, H, h).transpose(1, 2), 0)
    k = _rope_complex((A @ blk.W_k.weight.T).reshape(B, T, G, h).transpose(1, 2), 0)
    v = (A @ blk.W_v.weight.T).reshape(B, T, G, h).transpose(1, 2)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)  # (B, H, T, h)
    X = X + out.transpose(1, 2).reshape(B, T, N) @ blk.W_o.weight.T
    Y = norm2(X)
    return X + (F.silu(Y @ blk.ffn.W_gate.weight.T) * (Y @ blk.ffn.W_up.weight.T)) @ blk.ffn.W_down.weight.T


@pytest.mark.parametrize("heads, kv_heads", [(4, 4), (4, 2), (6, 1)])
def test_block_equals_pytorchs_pieces_with_copied_weights(heads, kv_heads):
    torch.manual_seed(heads + kv_heads)
    blk = ModernDecoderBlock(24, heads, kv_heads, max_len=32).double()
    with torch.no_grad():
        blk.attn_norm.weight.uniform_(0.5, 1.5)
        blk.ffn_norm.weight.uniform_(0.5, 1.5)
    X = torch.randn(3, 9, 24, dtype=torch.float64)
    Y, cache = blk(X)
    torch.testing.assert_close(Y, _reference_block(blk, X))
    assert cache.keys.shape == cache.values.shape == (3, kv_heads, 9, 24 // heads)
    assert all(m.bias is None for m in (blk.W_q, blk.W_k, blk.W_v, blk.W_o))


def test_block_is_causal_and_the_cache_gives_the_full_outputs_token_by_token():
    torch.manual_seed(1)
    blk = ModernDecoderBlock(16, 4, 2, max_len=20).double()
    X = torch.randn(2, 12, 16, dtype=torch.float64)
    full, _ = blk(X)
    changed = X.clone()
    changed[:, 7:] += 1.0
    torch.testing.assert_close(blk(changed)[0][:, :7], full[:, :7])  # the future never reaches the past
    out, cache = blk(X[:, :5])
    pieces = [out]
    for t in range(5, 12):
        before = cache.keys.clone()
        step, new = blk(X[:, t : t + 1], cache)
        assert torch.equal(cache.keys, before), "the old cache was changed in place"
        assert isinstance(new, LayerCache) and new.keys.shape[2] == t + 1
        pieces.append(step)
        cache = new
    torch.testing.assert_close(torch.cat(pieces, dim=1), full)


def test_block_rejects_heads_that_do_not_split():
    with pytest.raises(ValueError, match="multiple of num_kv_heads"):
        ModernDecoderBlock(24, 4, 3)
    with pytest.raises(ValueError, match="divisible by num_heads"):
        ModernDecoderBlock(30, 4, 2)


def _lm(**fields) -> ModernDecoderLM:
    torch.manual_seed(0)
    return ModernDecoderLM(ModernConfig(**{"vocab_size": 11, "num_hiddens": 16, "max_len": 12, **fields}))


def test_lm_has_the_interface_of_11_9s_gpt_and_ties_its_head():
    lm = _lm()
    X = torch.randint(0, 11, (3, 12))
    logits = lm(X)
    assert logits.shape == (3, 12, 11)
    assert lm.head.weight is lm.token_embedding.weight
    loss = lm.loss(logits, X)
    torch.testing.assert_close(loss, F.cross_entropy(logits.reshape(-1, 11), X.reshape(-1)))
    assert not hasattr(lm, "pos_embedding"), "positions enter through the rotary queries and keys"
    with pytest.raises(ValueError, match="max_len = 12"):
        lm(torch.zeros(1, 13, dtype=torch.long))
    with pytest.raises(ValueError, match="token ids must lie in"):
        lm(torch.full((1, 3), 11))
    with pytest.raises(TypeError, match="takes a ModernConfig"):
        ModernDecoderLM(GPTConfig(vocab_size=11))


def test_lm_decoding_with_caches_equals_the_full_forward():
    lm = _lm().double()
    X = torch.randint(0, 11, (2, 12))
    logits, caches = lm.decode(X[:, :6])
    steps = [logits]
    for t in range(6, 12):
        logits, caches = lm.decode(X[:, t : t + 1], caches)
        steps.append(logits)
    torch.testing.assert_close(torch.cat(steps, dim=1), lm(X))
    with pytest.raises(ValueError, match="12 cached"):
        lm.decode(X[:, :1], caches)


def test_greedy_generation_with_the_cache_equals_recomputing_the_window_every_step():
    lm = _lm(num_blks=1).double()
    prompt = torch.tensor([3, 1, 4])
    out = lm.generate(prompt, 20, greedy=True)  # past max_len = 12: the window slides
    ids = prompt[None]
    for _ in range(20):
        ids = torch.cat((ids, lm(ids[:, -12:])[:, -1].argmax(-1, keepdim=True)), dim=1)
    assert torch.equal(out, ids[0])


def test_sampling_with_a_seed_repeats_and_top_p_and_top_k_restrict_the_tokens():
    lm = _lm()
    draw = lambda **kw: lm.generate(torch.tensor([1, 2]), 30, generator=torch.Generator().manual_seed(7), **kw)  # noqa: E731
    assert torch.equal(draw(top_p=0.5), draw(top_p=0.5))
    greedy = lm.generate(torch.tensor([1, 2]), 30, greedy=True)
    assert torch.equal(draw(top_k=1), greedy) and torch.equal(draw(top_p=1e-9), greedy)  # one token left: the argmax
    assert not torch.equal(draw(top_p=1.0), greedy)
    with pytest.raises(ValueError, match="top_p must be a number in"):
        lm.generate(torch.tensor([1]), 3, top_p=1.5)


def _brute_force_nucleus(probs: list[float], p: float) -> set[int]:
    """The smallest set of tokens whose total reaches p, by trying every set from the smallest; ties kept."""
    n = len(probs)
    for size in range(1, n + 1):
        best = max(itertools.combinations(range(n), size), key=lambda s: sum(probs[i] for i in s))
        if sum(probs[i] for i in best) >= p - 1e-12:
            least = min(probs[i] for i in best)
            return {i for i in range(n) if probs[i] >= least}
    return set(range(n))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(-3, 3), min_size=1, max_size=7),
    st.floats(0.01, 1.0),
)
def test_top_p_keeps_the_smallest_nucleus_with_ties_and_renormalises(levels, p):
    logits = torch.tensor(levels, dtype=torch.float64) * 0.7  # few distinct values: ties are common
    out = top_p_distribution(logits, p)
    probs = torch.softmax(logits, -1).tolist()
    kept = {i for i, q in enumerate(out.tolist()) if q > 0}
    assert kept == _brute_force_nucleus(probs, p)
    torch.testing.assert_close(out.sum(), torch.tensor(1.0, dtype=torch.float64))
    total = sum(probs[i] for i in kept)
    torch.testing.assert_close(out[list(kept)], torch.tensor([probs[i] / total for i in sorted(kept)], dtype=out.dtype))


def test_top_p_edges():
    logits = torch.tensor([[2.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
    assert torch.equal(top_p_distribution(logits, 1.0) > 0, torch.ones(2, 3, dtype=torch.bool))
    assert top_p_distribution(logits, 1e-9)[0].tolist() == [1.0, 0.0, 0.0]  # the most likely token, always
    torch.testing.assert_close(top_p_distribution(logits, 0.1)[1], torch.full((3,), 1 / 3))  # a three-way tie
    torch.testing.assert_close(top_p_distribution(logits, 0.9, temperature=0.5), top_p_distribution(2 * logits, 0.9))
    for bad in (0, 1.01, -0.5, True):
        with pytest.raises(ValueError, match="top_p must be a number in"):
            top_p_distribution(logits, bad)


def test_the_labs_two_decoders_have_the_same_parameter_count_within_half_a_percent():
    """The lab's comparison: 11.9's GPT and the modern decoder with SwiGLU widened to 204 (see the page)."""
    gpt = DecoderOnlyLM(
        GPTConfig(vocab_size=28, num_hiddens=64, num_heads=4, num_blks=2, ffn_num_hiddens=256, max_len=64)
    )
    modern = ModernDecoderLM(ModernConfig(vocab_size=28, num_kv_heads=2, ffn_num_hiddens=204, max_len=64))
    assert abs(count_parameters(modern) / count_parameters(gpt) - 1) < 0.005
