"""Tests of qkv.positional (D2L 11.6): sinusoidal, learned and rotary positional encodings."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from qkv.positional import (
    LearnedPositionalEncoding,
    PositionalEncoding,
    RotaryPositionalEmbedding,
    apply_rotary,
    rotary_angles,
    sinusoidal_table,
)

SETTINGS = settings(max_examples=40, deadline=None)


def reference_table(max_len: int, d: int) -> np.ndarray:
    """D2L's P[i, 2j] = sin(i / 10000^(2j/d)), P[i, 2j+1] = cos(i / 10000^(2j/d)), with plain loops."""
    P = np.zeros((max_len, d))
    for i in range(max_len):
        for col in range(d):
            j = col // 2
            angle = i / 10000 ** (2 * j / d)
            P[i, col] = math.sin(angle) if col % 2 == 0 else math.cos(angle)
    return P


def rotation_for_shift(delta: int, d: int) -> np.ndarray:
    """The (d, d) block-diagonal matrix of D2L 11.6.3 that maps row i of P to row i + delta, for any i."""
    M = np.zeros((d, d))
    for j in range(d // 2):
        w = 1 / 10000 ** (2 * j / d)
        c, s = math.cos(delta * w), math.sin(delta * w)
        M[2 * j : 2 * j + 2, 2 * j : 2 * j + 2] = [[c, s], [-s, c]]
    return M


def reference_rope(x: np.ndarray, position: int, base: float = 10000.0) -> np.ndarray:
    """Rotate the interleaved pairs of one vector x (h,) with an explicit (h, h) rotation matrix."""
    h = x.shape[0]
    R = np.zeros((h, h))
    for j in range(h // 2):
        angle = position * base ** (-2 * j / h)
        c, s = math.cos(angle), math.sin(angle)
        R[2 * j : 2 * j + 2, 2 * j : 2 * j + 2] = [[c, -s], [s, c]]
    return R @ x


# ----------------------------------------------------------------------------- sinusoidal


@pytest.mark.parametrize("d", [16, 7, 2, 1])
def test_table_matches_formula(d):
    expected = reference_table(60, d)
    np.testing.assert_allclose(sinusoidal_table(60, d).numpy(), expected, rtol=0, atol=1e-12)
    enc = PositionalEncoding(d, dropout=0.0, max_len=60)
    assert enc.P.shape == (1, 60, d)
    assert enc.P.dtype == torch.get_default_dtype()
    np.testing.assert_allclose(enc.P[0].double().numpy(), expected, rtol=0, atol=1e-6)


def test_p_is_a_non_persistent_buffer_that_follows_the_module():
    enc = PositionalEncoding(8, dropout=0.0, max_len=20)
    assert "P" in dict(enc.named_buffers())
    assert "P" not in enc.state_dict(), "P follows from the formula and should not be saved"
    assert list(enc.parameters()) == []
    assert enc.double().P.dtype == torch.float64


def test_forward_adds_the_first_T_rows():
    torch.manual_seed(0)
    X = torch.randn(3, 11, 10)
    enc = PositionalEncoding(10, dropout=0.3, max_len=50).eval()
    expected = X.numpy() + reference_table(11, 10)[None]
    np.testing.assert_allclose(enc(X).numpy(), expected, rtol=0, atol=1e-5)
    # float64 input keeps its dtype, and batch-free input (T, N) works too
    assert enc(X.double()).dtype == torch.float64
    np.testing.assert_allclose(enc(X[0]).numpy(), expected[0], rtol=0, atol=1e-5)


def test_offset_selects_later_rows():
    torch.manual_seed(0)
    X = torch.randn(2, 4, 6)
    for enc in (PositionalEncoding(6, max_len=20), LearnedPositionalEncoding(6, max_len=20, init_std=1.0)):
        enc.eval()
        torch.testing.assert_close(enc(X, offset=7), X + enc.P[:, 7:11])
        full = enc(torch.cat([torch.zeros(2, 7, 6), X], dim=1))  # (B, 11, N)
        torch.testing.assert_close(enc(X, offset=7), full[:, 7:])
        with pytest.raises(ValueError, match="max_len=21"):
            enc(X, offset=17)
        with pytest.raises(ValueError, match="offset"):
            enc(X, offset=-1)


@pytest.mark.parametrize("delta", [1, 2, 5, 17, 40])
def test_shift_is_a_fixed_rotation(delta):
    """D2L 11.6.3: for each delta one matrix M_delta, the same for every i, maps P[i] to P[i + delta]."""
    d, max_len = 12, 120
    M = rotation_for_shift(delta, d)
    P64 = sinusoidal_table(max_len, d).numpy()
    np.testing.assert_allclose(P64[delta:], P64[:-delta] @ M.T, rtol=0, atol=1e-10)
    P32 = PositionalEncoding(d, max_len=max_len).P[0].double().numpy()
    np.testing.assert_allclose(P32[delta:], P32[:-delta] @ M.T, rtol=0, atol=1e-5)
    np.testing.assert_allclose(M @ M.T, np.eye(d), atol=1e-12)  # a rotation: orthogonal


@pytest.mark.parametrize("d", [4, 16, 9])
def test_row_norms(d):
    P = sinusoidal_table(200, d).numpy()
    expected = np.full(200, (d // 2))
    if d % 2:  # the unpaired last column is a sine
        expected = expected + np.sin(np.arange(200) / 10000 ** ((d - 1) / d)) ** 2
    np.testing.assert_allclose((P**2).sum(axis=1), expected, rtol=1e-12)


def test_dropout_in_train_mode_only():
    torch.manual_seed(0)
    X = torch.randn(4, 30, 16)
    enc = PositionalEncoding(16, dropout=0.5, max_len=30)
    clean = X + enc.P[:, :30]
    enc.train()
    out = enc(X)
    dropped = out == 0
    assert 0.3 < dropped.float().mean() < 0.7
    torch.testing.assert_close(out[~dropped], 2 * clean[~dropped])  # survivors scaled by 1 / (1 - p)
    enc.eval()
    torch.testing.assert_close(enc(X), clean)


def test_sinusoidal_errors():
    enc = PositionalEncoding(8, max_len=10)
    with pytest.raises(ValueError, match="max_len=12"):
        enc(torch.zeros(2, 12, 8))
    with pytest.raises(ValueError, match=r"\(\.\.\., T, 8\)"):
        enc(torch.zeros(2, 5, 6))
    with pytest.raises(TypeError, match="floating"):
        enc(torch.zeros(2, 5, 8, dtype=torch.long))
    with pytest.raises(ValueError, match="num_hiddens"):
        PositionalEncoding(0)
    with pytest.raises(TypeError, match="max_len"):
        PositionalEncoding(8, 0.0, max_len=10.0)


# ----------------------------------------------------------------------------- learned


def test_learned_encoding_is_a_trainable_parameter():
    torch.manual_seed(0)
    enc = LearnedPositionalEncoding(32, dropout=0.0, max_len=1000)
    assert isinstance(enc.P, torch.nn.Parameter) and enc.P.requires_grad
    assert enc.P.shape == (1, 1000, 32)
    assert [name for name, _ in enc.named_parameters()] == ["P"]
    assert abs(enc.P.mean().item()) < 0.002
    assert 0.018 < enc.P.std().item() < 0.022, "documented initial std is 0.02"

    X = torch.randn(3, 7, 32)
    torch.testing.assert_close(enc(X), X + enc.P[:, :7])
    upstream = torch.randn(3, 7, 32)
    (enc(X) * upstream).sum().backward()
    torch.testing.assert_close(enc.P.grad[0, :7], upstream.sum(0))
    assert torch.all(enc.P.grad[0, 7:] == 0), "positions past T get no gradient"


def test_learned_encoding_init_std_and_errors():
    enc = LearnedPositionalEncoding(4, max_len=5, init_std=0.0)
    X = torch.randn(2, 5, 4)
    torch.testing.assert_close(enc(X), X)
    with pytest.raises(ValueError, match="max_len=6"):
        enc(torch.zeros(1, 6, 4))
    with pytest.raises(ValueError, match="init_std"):
        LearnedPositionalEncoding(4, init_std=-1.0)
    drop = LearnedPositionalEncoding(4, dropout=0.5, max_len=5).eval()
    torch.testing.assert_close(drop(X), X + drop.P)


# ----------------------------------------------------------------------------- rotary


def test_rope_matches_explicit_rotation_matrices():
    torch.manual_seed(0)
    h, T, base = 8, 9, 500.0
    rope = RotaryPositionalEmbedding(h, base=base, max_len=64)
    X = torch.randn(2, 3, T, h, dtype=torch.float64)  # (B, H, T, h)
    Y = rope(X).numpy()
    for b in range(2):
        for head in range(3):
            for t in range(T):
                expected = reference_rope(X[b, head, t].numpy(), t, base)
                np.testing.assert_allclose(Y[b, head, t], expected, rtol=0, atol=1e-6)


def test_rope_uses_d2l_frequencies_and_interleaved_pairs():
    """Rotating (1, 0) pairs at position m gives (cos, sin) of D2L's angles: the sines are P[m, 0::2]."""
    h = 10
    rope = RotaryPositionalEmbedding(h, max_len=30)
    ones = torch.zeros(30, h)
    ones[:, 0::2] = 1.0
    Y = rope(ones)
    P = torch.from_numpy(reference_table(30, h)).float()
    torch.testing.assert_close(Y[:, 1::2], P[:, 0::2], atol=1e-6, rtol=0)
    torch.testing.assert_close(Y[:, 0::2], P[:, 1::2], atol=1e-6, rtol=0)


@SETTINGS
@given(m=st.integers(0, 200), n=st.integers(0, 200), shift=st.integers(0, 200), seed=st.integers(0, 2**16))
def test_rope_score_depends_only_on_offset(m, n, shift, seed):
    g = torch.Generator().manual_seed(seed)
    h = 16
    rope = RotaryPositionalEmbedding(h, max_len=401)
    q, k = torch.randn(2, 1, h, generator=g, dtype=torch.float64)  # (1, h) each: one step
    score = (rope(q, offset=m) * rope(k, offset=n)).sum()
    shifted = (rope(q, offset=m + shift) * rope(k, offset=n + shift)).sum()
    assert shifted.item() == pytest.approx(score.item(), abs=1e-4)
    if n >= m:  # <R_m q, R_n k> = <q, R_(n-m) k>
        relative = (q * rope(k, offset=n - m)).sum()
        assert relative.item() == pytest.approx(score.item(), abs=1e-4)


@SETTINGS
@given(T=st.integers(1, 12), start=st.integers(0, 11), length=st.integers(1, 12), seed=st.integers(0, 2**16))
def test_rope_preserves_norms_and_offset_slices(T, start, length, seed):
    g = torch.Generator().manual_seed(seed)
    rope = RotaryPositionalEmbedding(6, max_len=24)
    X = torch.randn(2, T, 6, generator=g)
    Y = rope(X)
    torch.testing.assert_close(Y.norm(dim=-1), X.norm(dim=-1))
    torch.testing.assert_close(Y[:, 0], X[:, 0])  # position 0 is not rotated
    start, stop = min(start, T - 1), min(start + length, T)
    torch.testing.assert_close(rope(X[:, start:stop], offset=start), Y[:, start:stop])


def test_apply_rotary_with_own_tables_and_gradient():
    x = torch.tensor([[1.0, 0.0, 0.0, 2.0]], requires_grad=True)  # (T=1, h=4)
    cos = torch.tensor([[0.0, -1.0]])  # turns of 90 and 180 degrees
    sin = torch.tensor([[1.0, 0.0]])
    y = apply_rotary(x, cos, sin)
    torch.testing.assert_close(y, torch.tensor([[0.0, 1.0, 0.0, -2.0]]))
    y.sum().backward()
    torch.testing.assert_close(x.grad, torch.tensor([[1.0, -1.0, -1.0, -1.0]]))


def test_rope_errors():
    with pytest.raises(ValueError, match="even"):
        RotaryPositionalEmbedding(5)
    with pytest.raises(ValueError, match="base"):
        RotaryPositionalEmbedding(4, base=1.0)
    rope = RotaryPositionalEmbedding(4, max_len=8)
    with pytest.raises(ValueError, match="max_len=10"):
        rope(torch.zeros(1, 4, 4), offset=6)
    with pytest.raises(ValueError, match="offset"):
        rope(torch.zeros(1, 4, 4), offset=-1)
    with pytest.raises(ValueError, match=r"\(\.\.\., T, 4\)"):
        rope(torch.zeros(1, 4, 6))
    with pytest.raises(ValueError, match="even"):
        apply_rotary(torch.zeros(3, 5), torch.zeros(3, 2), torch.zeros(3, 2))
    assert "cos" not in rope.state_dict() and list(rope.parameters()) == []


# ----------------------------------------------------------------------------- the 11.6 answers agree with qkv


def test_the_sections_answers_agree_with_the_reference():
    """solutions/self_attention_and_positional_encoding.py writes out what qkv.positional computes: both must agree."""
    from autograder import assemble

    answers = assemble.solutions_module("self-attention-and-positional-encoding")
    ours = answers.PositionalEncoding(10, 0.0, max_len=70)
    assert "P" in dict(ours.named_buffers())
    torch.testing.assert_close(ours.P, PositionalEncoding(10, 0.0, max_len=70).P)
    assert ours.to("meta").P.device.type == "meta"
    P = sinusoidal_table(300, 10)
    for delta in (-11, 0, 4, 250):
        W = answers.shift_matrix(delta, 10)  # (d, d)
        lo, hi = max(0, -delta), min(300, 300 - delta)
        torch.testing.assert_close(P[lo:hi] @ W.T, P[lo + delta : hi + delta], atol=1e-9, rtol=0)
    x = torch.randn(2, 3, 40, 8, dtype=torch.float64)
    angles = rotary_angles(40, 8, base=500.0)  # (T, h/2), float64
    expected = apply_rotary(x, torch.cos(angles), torch.sin(angles))
    torch.testing.assert_close(answers.rotary(x, base=500.0), expected, atol=1e-12, rtol=0)
