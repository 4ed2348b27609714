# Shared by the hidden tests of 11.7; the assembler inlines it where a hidden test imports it (from _common import
# ...; autograder/assemble.py: hidden_tests), so every hidden block stays self-contained in its notebook cell. The
# references are PyTorch's own layers (nn.TransformerEncoderLayer / nn.TransformerDecoderLayer, post-norm, ReLU,
# dropout 0, batch_first) and closed forms, with weights drawn here and copied into both the answer and the
# reference: no student object is read back to build a reference.

import math as _math  # noqa: F401 (the hidden tests that follow use it)

import qkv.transformer as _qt

_T = checks.trusted
_f64 = _T.float64
_torch, _tnn = _qt.torch, _qt.nn  # torch and torch.nn, as qkv bound them at import


def _draw(gen, *shape, scale=0.4):
    return _T.randn(*shape, generator=gen, dtype=_f64) * scale


def _mha_weights(gen, prefix, N, bias):
    w = {f"{prefix}.W_{n}.weight": _draw(gen, N, N) for n in "qkvo"}
    if bias:
        w.update({f"{prefix}.W_{n}.bias": _draw(gen, N) for n in "qkvo"})
    return w


def _norm_weights(gen, prefix, N):
    return {f"{prefix}.ln.weight": 1 + _draw(gen, N, scale=0.3), f"{prefix}.ln.bias": _draw(gen, N, scale=0.3)}


def _ffn_weights(gen, prefix, N, F):
    return {
        f"{prefix}.dense1.weight": _draw(gen, F, N),
        f"{prefix}.dense1.bias": _draw(gen, F),
        f"{prefix}.dense2.weight": _draw(gen, N, F),
        f"{prefix}.dense2.bias": _draw(gen, N),
    }


_load = checks.load_exact  # (module, weights, what): copy drawn weights in, names and shapes checked


def _grad(t):
    """t's gradient after a backward pass, or zeros where none reached it (a graph cut), so that check_close says
    "wrong values" with the check's own hint instead of failing on a None."""
    return t.grad if t.grad is not None else _T.zeros(t.shape, dtype=t.dtype)


@_torch.no_grad()
def _torch_mha(theirs, weights, prefix, N):
    theirs.in_proj_weight.copy_(_T.cat([weights[f"{prefix}.W_{n}.weight"] for n in "qkv"]))  # (3N, N)
    theirs.out_proj.weight.copy_(weights[f"{prefix}.W_o.weight"])
    zero = _T.zeros(N, dtype=_f64)
    theirs.in_proj_bias.copy_(_T.cat([weights.get(f"{prefix}.W_{n}.bias", zero) for n in "qkv"]))  # (3N,)
    theirs.out_proj.bias.copy_(weights.get(f"{prefix}.W_o.bias", zero))


@_torch.no_grad()
def _torch_ffn_norms(layer, weights, ffn, norms):
    layer.linear1.weight.copy_(weights[f"{ffn}.dense1.weight"])
    layer.linear1.bias.copy_(weights[f"{ffn}.dense1.bias"])
    layer.linear2.weight.copy_(weights[f"{ffn}.dense2.weight"])
    layer.linear2.bias.copy_(weights[f"{ffn}.dense2.bias"])
    for prefix, norm in zip(norms, [layer.norm1, layer.norm2, getattr(layer, "norm3", None)]):
        norm.weight.copy_(weights[f"{prefix}.ln.weight"])
        norm.bias.copy_(weights[f"{prefix}.ln.bias"])


def _torch_encoder_layer(weights, N, H, F):
    layer = _tnn.TransformerEncoderLayer(
        N, H, F, dropout=0.0, activation="relu", batch_first=True, norm_first=False, dtype=_f64
    )
    _torch_mha(layer.self_attn, weights, "attention", N)
    _torch_ffn_norms(layer, weights, "ffn", ["addnorm1", "addnorm2"])
    return layer.train()  # dropout is 0; training mode keeps PyTorch off its fused inference path


def _torch_decoder_layer(weights, N, H, F, prefix=""):
    layer = _tnn.TransformerDecoderLayer(
        N, H, F, dropout=0.0, activation="relu", batch_first=True, norm_first=False, dtype=_f64
    )
    _torch_mha(layer.self_attn, weights, f"{prefix}attention1", N)
    _torch_mha(layer.multihead_attn, weights, f"{prefix}attention2", N)
    _torch_ffn_norms(layer, weights, f"{prefix}ffn", [f"{prefix}addnorm{k}" for k in (1, 2, 3)])
    return layer.train()


def _padding_mask(lens, H, Q, K):
    """True where a key is padding, per head: (B * H, Q, K), PyTorch's 3-D attn_mask (example b's heads at rows
    b * H ... b * H + H - 1). (Not key_padding_mask: PyTorch's check of it imports torch.fx's symbolic shapes, seconds
    per grading kernel.)"""
    pad = _T.arange(K)[None, :] >= lens[:, None]  # (1, K) >= (B, 1) -> (B, K)
    return pad[:, None, None, :].expand(len(lens), H, Q, K).reshape(len(lens) * H, Q, K)  # (B * H, Q, K)


def _causal_mask(T):
    """True above the diagonal: (T, T), PyTorch's attn_mask for a causal decoder."""
    return _T.arange(T)[None, :] > _T.arange(T)[:, None]  # (1, T) > (T, 1) -> (T, T)
