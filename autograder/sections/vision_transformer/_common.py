# Shared by the hidden tests of 11.8; the assembler puts it in front of each of them (autograder/assemble.py:
# hidden_tests), so every hidden block stays self-contained in its notebook cell. The references are closed forms,
# an explicit reshape of the image into patches in float64, and PyTorch's own nn.TransformerEncoderLayer (pre-norm,
# GELU, dropout 0, batch_first) with weights drawn here and copied into both the answer and the reference: no
# student object is read back to build a reference.

import qkv.vit as _qv

_T = checks.trusted
_f64 = _T.float64
_torch, _tnn, _tF = _qv.torch, _qv.nn, _qv.F  # torch, torch.nn and its functional, as qkv bound them at import


def _draw(gen, *shape, scale=0.4):
    return _T.randn(*shape, generator=gen, dtype=_f64) * scale


_load = checks.load_exact  # (module, weights, what): copy drawn weights in, names and shapes checked


def _patches(X, ph, pw):
    """(B, C, H, W) -> (B, P, C * ph * pw): the patches in row-major order, each flattened as (C, ph, pw)."""
    B, C, H, W = X.shape
    X = X.reshape(B, C, H // ph, ph, W // pw, pw)  # (B, C, gh, ph, gw, pw)
    X = X.permute(0, 2, 4, 1, 3, 5)  # (B, gh, gw, C, ph, pw)
    return X.reshape(B, (H // ph) * (W // pw), C * ph * pw)  # (B, P, C * ph * pw)


def _block_weights(gen, prefix, N, M, bias=False):
    """A ViT block's weights, drawn; with ``bias``, the four projections' biases too (drawn last, so that the other
    weights are those drawn without them)."""
    w = {f"{prefix}ln1.weight": 1 + _draw(gen, N, scale=0.3), f"{prefix}ln1.bias": _draw(gen, N, scale=0.3)}
    w.update({f"{prefix}attention.W_{n}.weight": _draw(gen, N, N) for n in "qkvo"})
    w.update({f"{prefix}ln2.weight": 1 + _draw(gen, N, scale=0.3), f"{prefix}ln2.bias": _draw(gen, N, scale=0.3)})
    w.update(
        {
            f"{prefix}mlp.dense1.weight": _draw(gen, M, N),
            f"{prefix}mlp.dense1.bias": _draw(gen, M),
            f"{prefix}mlp.dense2.weight": _draw(gen, N, M),
            f"{prefix}mlp.dense2.bias": _draw(gen, N),
        }
    )
    if bias:
        w.update({f"{prefix}attention.W_{n}.bias": _draw(gen, N) for n in "qkvo"})
    return w


@_torch.no_grad()
def _torch_block(weights, prefix, N, H, M):
    """PyTorch's pre-norm encoder layer (GELU, no dropout) holding the ViT block's weights ``prefix...``."""
    layer = _tnn.TransformerEncoderLayer(
        N, H, M, dropout=0.0, activation="gelu", batch_first=True, norm_first=True, dtype=_f64
    ).eval()
    layer.self_attn.in_proj_weight.copy_(_T.cat([weights[f"{prefix}attention.W_{n}.weight"] for n in "qkv"]))
    layer.self_attn.out_proj.weight.copy_(weights[f"{prefix}attention.W_o.weight"])
    if f"{prefix}attention.W_q.bias" in weights:  # a block built with use_bias=True
        layer.self_attn.in_proj_bias.copy_(_T.cat([weights[f"{prefix}attention.W_{n}.bias"] for n in "qkv"]))
        layer.self_attn.out_proj.bias.copy_(weights[f"{prefix}attention.W_o.bias"])
    else:
        layer.self_attn.in_proj_bias.zero_()
        layer.self_attn.out_proj.bias.zero_()
    for ours, theirs in (("ln1", "norm1"), ("ln2", "norm2"), ("mlp.dense1", "linear1"), ("mlp.dense2", "linear2")):
        getattr(layer, theirs).weight.copy_(weights[f"{prefix}{ours}.weight"])
        getattr(layer, theirs).bias.copy_(weights[f"{prefix}{ours}.bias"])
    return layer


def _block_by_hand(weights, prefix, X, H, p):
    """A ViT block in training mode, written out in float64 (pre-norm, H heads, GELU), with dropout ``p`` on the
    attention weights and after each layer of the MLP: the masks are drawn from the global generator in the order the
    block's modules draw them (the attention's, then the MLP's two), so that after the same seed the answer's block
    must give exactly this. (B, T, N) -> (B, T, N)."""
    B, T, N = X.shape
    h = N // H

    def linear(Z, name):  # (..., in) @ (in, out) (+ bias)
        Z = Z @ weights[f"{prefix}{name}.weight"].T
        bias = weights.get(f"{prefix}{name}.bias")
        return Z if bias is None else Z + bias

    def heads(Z):  # (B, T, N) -> (B * H, T, h)
        return Z.reshape(B, T, H, h).permute(0, 2, 1, 3).reshape(B * H, T, h)

    def drop(Z):
        return Z * _tF.dropout(_torch.ones_like(Z), p, True)

    Y = _tF.layer_norm(X, (N,), weights[f"{prefix}ln1.weight"], weights[f"{prefix}ln1.bias"])  # (B, T, N)
    q, k, v = (heads(linear(Y, f"attention.W_{n}")) for n in "qkv")  # each (B * H, T, h)
    A = drop(_T.softmax(q @ k.transpose(1, 2) / h**0.5, dim=-1))  # (B H, T, h) @ (B H, h, T) -> (B H, T, T)
    O = (A @ v).reshape(B, H, T, h).permute(0, 2, 1, 3).reshape(B, T, N)  # (B H, T, h) -> (B, T, N)
    X = X + linear(O, "attention.W_o")  # (B, T, N)
    Y = _tF.layer_norm(X, (N,), weights[f"{prefix}ln2.weight"], weights[f"{prefix}ln2.bias"])  # (B, T, N)
    Z = drop(_tF.gelu(linear(Y, "mlp.dense1")))  # (B, T, M)
    return X + drop(linear(Z, "mlp.dense2"))  # (B, T, N)


def _vit_weights(gen, C, p, P, N, M, blocks, classes, bias=False):
    w = {
        "cls_token": _draw(gen, 1, 1, N, scale=1.0),
        "pos_embedding": _draw(gen, 1, P + 1, N, scale=1.0),
        "patch_embedding.conv.weight": _draw(gen, N, C, p, p),
        "patch_embedding.conv.bias": _draw(gen, N),
    }
    for i in range(blocks):
        w.update(_block_weights(gen, f"blks.{i}.", N, M, bias))
    w.update(
        {
            "head.0.weight": 1 + _draw(gen, N, scale=0.3),
            "head.0.bias": _draw(gen, N, scale=0.3),
            "head.1.weight": _draw(gen, classes, N),
            "head.1.bias": _draw(gen, classes),
        }
    )
    return w


@_torch.no_grad()
def _vit_tokens(weights, X, p, N, H, M, blocks, cls=True):
    """The encoder's output tokens of a ViT holding ``weights``: (B, P + 1, N) with <cls> first, or (B, P, N)
    with no <cls> and the patches' own positions (rows 1.. of the positional embedding)."""
    W = weights["patch_embedding.conv.weight"]  # (N, C, p, p)
    Z = _patches(X, p, p) @ W.reshape(N, -1).T + weights["patch_embedding.conv.bias"]  # (B, P, C p p) @ (C p p, N)
    pos = weights["pos_embedding"]  # (1, P + 1, N)
    if cls:
        Z = _T.cat((weights["cls_token"].expand(X.shape[0], 1, N), Z), dim=1) + pos  # (B, P + 1, N)
    else:
        Z = Z + pos[:, 1:]  # (B, P, N)
    for i in range(blocks):
        Z = _torch_block(weights, f"blks.{i}.", N, H, M)(Z)  # (B, T, N)
    return Z


def _head(weights, Z):
    """LayerNorm then Linear on (B, N) -> (B, classes)."""
    Z = _tF.layer_norm(Z, Z.shape[-1:], weights["head.0.weight"], weights["head.0.bias"])  # (B, N)
    return Z @ weights["head.1.weight"].T + weights["head.1.bias"]  # (B, N) @ (N, classes)


def _raises(fn):
    """The name of the exception ``fn()`` raises, or "no error"."""
    try:
        fn()
    except Exception as err:  # noqa: BLE001
        return type(err).__name__
    return "no error"
