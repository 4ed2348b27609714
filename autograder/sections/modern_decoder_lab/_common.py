# Shared by the hidden tests of the modern-decoder lab; the assembler inlines it where a hidden test imports it (from
# _common import ...; autograder/assemble.py: hidden_tests), so every hidden block stays self-contained in its cell.
# The references are PyTorch's own pieces (torch.nn.RMSNorm, scaled_dot_product_attention with enable_gqa, rotary
# positions by complex multiplication) and closed forms, with weights drawn here and copied into the answer and the
# reference: no student object is read back to build a reference.

import qkv.modern_decoder as _md  # noqa: F401 (the hidden tests that follow use it)

_T = checks.trusted
_torch = _md.torch  # torch as qkv bound it at import, for what checks.trusted lacks
_f64 = _T.float64
_F = _md.F
_load = checks.load_exact  # (module, weights, what): copy drawn weights in, names and shapes checked


def _draw(gen, *shape, scale=0.4):
    return _T.randn(*shape, generator=gen, dtype=_f64) * scale


def _rope(x, offset, base):
    """Rotary positions by complex multiplication (Su et al.'s form): x (..., T, h) as positions offset ..."""
    T, h = x.shape[-2], x.shape[-1]
    theta = float(base) ** (-_T.arange(0, h, 2, dtype=_f64) / h)  # (h/2,)
    angles = _T.arange(offset, offset + T, dtype=_f64)[:, None] * theta  # (T, h/2)
    z = _torch.view_as_complex(x.to(_f64).reshape(*x.shape[:-1], h // 2, 2).contiguous())  # (..., T, h/2)
    return _torch.view_as_real(z * _torch.polar(_torch.ones_like(angles), angles)).flatten(-2)


def _rms(x, w, eps):
    norm = _torch.nn.RMSNorm(x.shape[-1], eps=eps, dtype=_f64)
    with _torch.no_grad():
        norm.weight.copy_(w)
    return norm(x)


def _block_weights(gen, N, H, G, F):
    h = N // H
    return {
        "attn_norm.weight": 1 + _draw(gen, N, scale=0.3),
        "W_q.weight": _draw(gen, H * h, N),
        "W_k.weight": _draw(gen, G * h, N),
        "W_v.weight": _draw(gen, G * h, N),
        "W_o.weight": _draw(gen, N, H * h),
        "ffn_norm.weight": 1 + _draw(gen, N, scale=0.3),
        "ffn.W_gate.weight": _draw(gen, F, N),
        "ffn.W_up.weight": _draw(gen, F, N),
        "ffn.W_down.weight": _draw(gen, N, F),
    }


def _reference_block(w, X, H, G, base, eps, past=None):
    """The block from PyTorch's pieces: X (B, T, N) after ``past`` = (keys, values) (B, G, P, h) or None.
    Returns (Y, keys, values) with the keys and values of all P + T tokens."""
    B, T, N = X.shape
    h = N // H
    P = 0 if past is None else past[0].shape[2]
    A = _rms(X, w["attn_norm.weight"], eps)
    q = _rope((A @ w["W_q.weight"].T).reshape(B, T, H, h).transpose(1, 2), P, base)
    k = _rope((A @ w["W_k.weight"].T).reshape(B, T, G, h).transpose(1, 2), P, base)
    v = (A @ w["W_v.weight"].T).reshape(B, T, G, h).transpose(1, 2)
    if past is not None:
        k, v = _T.cat((past[0], k), dim=2), _T.cat((past[1], v), dim=2)
    allowed = _T.arange(P + T)[None, :] <= _T.arange(P, P + T)[:, None]  # (T, P + T): causal, after the cache
    out = _F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, enable_gqa=True)  # (B, H, T, h)
    X = X + out.transpose(1, 2).reshape(B, T, H * h) @ w["W_o.weight"].T
    Z = _rms(X, w["ffn_norm.weight"], eps)
    gated = _F.silu(Z @ w["ffn.W_gate.weight"].T) * (Z @ w["ffn.W_up.weight"].T)
    return X + gated @ w["ffn.W_down.weight"].T, k, v
