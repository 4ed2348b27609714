"""Tests of qkv.vit (D2L 11.8): patch embedding, ViT block, the whole ViT."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from qkv.vit import PatchEmbedding, ViT, ViTBlock, ViTConfig, ViTMLP


def small_vit(cls=ViT, **kw) -> ViT:
    args = dict(
        img_size=12,
        patch_size=4,
        num_hiddens=16,
        mlp_num_hiddens=32,
        num_heads=2,
        num_blks=2,
        emb_dropout=0.0,
        blk_dropout=0.0,
        in_channels=3,
    )
    args.update(kw)
    return cls(**args)


def patches_by_hand(X: torch.Tensor, ph: int, pw: int) -> torch.Tensor:
    """Cut (B, C, H, W) into row-major patches, each flattened in the conv weight's (C, ph, pw) order."""
    B, C, H, W = X.shape
    X = X.reshape(B, C, H // ph, ph, W // pw, pw)  # (B, C, gh, ph, gw, pw)
    X = X.permute(0, 2, 4, 1, 3, 5)  # (B, gh, gw, C, ph, pw)
    return X.reshape(B, (H // ph) * (W // pw), C * ph * pw)  # (B, P, C * ph * pw)


def permute_patches(X: torch.Tensor, p: int, perm: torch.Tensor) -> torch.Tensor:
    """Move the p x p patches of square images (B, C, S, S) around: patch perm[i] goes to place i."""
    B, C, S, _ = X.shape
    g = S // p
    tiles = X.reshape(B, C, g, p, g, p).permute(0, 2, 4, 1, 3, 5).reshape(B, g * g, C, p, p)  # (B, P, C, p, p)
    tiles = tiles[:, perm]
    return tiles.reshape(B, g, g, C, p, p).permute(0, 3, 1, 4, 2, 5).reshape(B, C, S, S)  # back to (B, C, S, S)


@settings(max_examples=15, deadline=None)
@given(
    h=st.integers(1, 3),
    w=st.integers(1, 3),
    ph=st.integers(1, 4),
    pw=st.integers(1, 4),
    C=st.integers(1, 3),
    B=st.integers(1, 2),
)
def test_patch_embedding_is_unfold_then_matmul(h, w, ph, pw, C, B):
    """Each patch feature is the conv's weight times the flattened patch plus the bias."""
    torch.manual_seed(0)
    N = 5
    emb = PatchEmbedding((h * ph, w * pw), (ph, pw), N, in_channels=C)
    X = torch.randn(B, C, h * ph, w * pw)
    W = emb.conv.weight.reshape(N, C * ph * pw)  # (N, C * ph * pw)
    expected = patches_by_hand(X, ph, pw) @ W.T + emb.conv.bias  # (B, P, C ph pw) @ (C ph pw, N) -> (B, P, N)
    got = emb(X)
    assert got.shape == (B, h * w, N)
    assert emb.num_patches == h * w
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


def test_patch_embedding_lazy_matches_d2l_shapes():
    """D2L's check: 96 x 96 images, 16 x 16 patches -> 36 patches of 512 features; channels inferred."""
    emb = PatchEmbedding()
    assert emb(torch.zeros(2, 3, 96, 96)).shape == (2, 36, 512)
    assert emb.conv.weight.shape == (512, 3, 16, 16)


def test_patch_embedding_errors():
    with pytest.raises(ValueError, match="multiple of the patch size"):
        PatchEmbedding(28, 5, 8)
    with pytest.raises(ValueError, match="positive"):
        PatchEmbedding(28, 0, 8)
    with pytest.raises(TypeError, match="img_size"):
        PatchEmbedding((28, 28, 1), 7, 8)
    emb = PatchEmbedding(28, 7, 8, in_channels=1)
    with pytest.raises(ValueError, match=r"built for images of size \(28, 28\)"):
        emb(torch.zeros(1, 1, 32, 32))
    with pytest.raises(ValueError, match="input channels"):
        emb(torch.zeros(1, 3, 28, 28))
    with pytest.raises(ValueError, match=r"\(B, C, height, width\)"):
        emb(torch.zeros(28, 28))


def test_vit_mlp_matches_its_definition():
    """dense1 -> exact GELU -> dense2, computed by hand; dropout is active in training only."""
    torch.manual_seed(0)
    mlp = ViTMLP(8, 3, dropout=0.5, in_features=4).eval()
    X = torch.randn(2, 5, 4)
    H = X @ mlp.dense1.weight.T + mlp.dense1.bias  # (B, T, 4) @ (4, 8) -> (B, T, 8)
    H = 0.5 * H * (1 + torch.erf(H / 2**0.5))
    expected = H @ mlp.dense2.weight.T + mlp.dense2.bias  # (B, T, 8) @ (8, 3) -> (B, T, 3)
    torch.testing.assert_close(mlp(X), expected)
    mlp.train()
    assert (mlp(torch.ones(64, 1, 4)) == 0).any(), "dropout should zero some outputs in training mode"


def torch_equivalent(blk: ViTBlock, num_hiddens: int, num_heads: int, mlp_num_hiddens: int) -> nn.Module:
    """A torch.nn.TransformerEncoderLayer (pre-norm, GELU) holding the weights of ``blk``."""
    ref = nn.TransformerEncoderLayer(
        num_hiddens, num_heads, mlp_num_hiddens, dropout=0.0, activation="gelu", batch_first=True, norm_first=True
    )
    att = blk.attention

    def bias_of(linear):
        return linear.bias if linear.bias is not None else torch.zeros(num_hiddens)

    with torch.no_grad():
        ref.self_attn.in_proj_weight.copy_(torch.cat([att.W_q.weight, att.W_k.weight, att.W_v.weight]))
        ref.self_attn.in_proj_bias.copy_(torch.cat([bias_of(att.W_q), bias_of(att.W_k), bias_of(att.W_v)]))
        ref.self_attn.out_proj.weight.copy_(att.W_o.weight)
        ref.self_attn.out_proj.bias.copy_(bias_of(att.W_o))
        for mine, theirs in [
            (blk.mlp.dense1, ref.linear1),
            (blk.mlp.dense2, ref.linear2),
            (blk.ln1, ref.norm1),
            (blk.ln2, ref.norm2),
        ]:
            theirs.weight.copy_(mine.weight)
            theirs.bias.copy_(mine.bias)
    return ref


@pytest.mark.parametrize("use_bias", [False, True])
def test_vit_block_matches_torch_encoder_layer(use_bias):
    """ViTBlock = TransformerEncoderLayer(norm_first=True, activation='gelu') with the same weights."""
    torch.manual_seed(0)
    N, H, F = 16, 4, 24
    blk = ViTBlock(N, N, F, H, dropout=0.0, use_bias=use_bias).eval()
    with torch.no_grad():  # make the LayerNorms non-trivial, so that a block that skips them fails
        for ln in (blk.ln1, blk.ln2):
            ln.weight.uniform_(0.5, 1.5)
            ln.bias.normal_()
    ref = torch_equivalent(blk, N, H, F).eval()
    X = torch.randn(3, 7, N)
    torch.testing.assert_close(blk(X), ref(X), atol=1e-5, rtol=1e-5)
    # With padding: compare the valid positions (PyTorch may zero the padded ones).
    valid_lens = torch.tensor([7, 4, 2])
    pad = torch.arange(7)[None, :] >= valid_lens[:, None]  # (B, T), True = padding
    got, want = blk(X, valid_lens), ref(X, src_key_padding_mask=pad)
    torch.testing.assert_close(got[~pad], want[~pad], atol=1e-5, rtol=1e-5)


def test_vit_forward_shape_and_d2l_config():
    """D2L 11.8's ViT on a batch of 96 x 96 images gives (B, 10) logits; its config has 36 + 1 positions."""
    torch.manual_seed(0)
    cfg = ViTConfig()
    assert (
        cfg.img_size,
        cfg.patch_size,
        cfg.num_hiddens,
        cfg.mlp_num_hiddens,
        cfg.num_heads,
        cfg.num_blks,
        cfg.emb_dropout,
        cfg.blk_dropout,
        cfg.lr,
    ) == (96, 16, 512, 2048, 8, 2, 0.1, 0.1, 0.1)
    model = ViT.from_config(ViTConfig(num_hiddens=32, mlp_num_hiddens=64, num_heads=4))
    assert model.pos_embedding.shape == (1, 37, 32)
    assert model(torch.randn(2, 1, 96, 96)).shape == (2, 10)
    small = ViT.from_config(ViTConfig.fashion_mnist_small())
    assert small(torch.randn(3, 1, 28, 28)).shape == (3, 10)
    assert small.pos_embedding.shape[1] == small.patch_embedding.num_patches + 1


def test_cls_token_is_first_and_head_reads_it():
    """Block 1 gets [<cls>; patches] + positions; the head reads position 0 of the last block's output."""
    torch.manual_seed(0)
    model = small_vit().eval()
    with torch.no_grad():
        model.cls_token.normal_()
    seen = {}
    model.blks[0].register_forward_pre_hook(lambda m, args: seen.__setitem__("first_in", args[0]))
    model.blks[-1].register_forward_hook(lambda m, args, out: seen.__setitem__("last_out", out))
    model.head.register_forward_pre_hook(lambda m, args: seen.__setitem__("head_in", args[0]))
    X = torch.randn(2, 3, 12, 12)
    model(X)
    pos = model.pos_embedding[0]  # (P + 1, N)
    torch.testing.assert_close(seen["first_in"][:, 0], (model.cls_token[0, 0] + pos[0]).expand(2, -1))
    torch.testing.assert_close(seen["first_in"][:, 1:], model.patch_embedding(X) + pos[1:])
    torch.testing.assert_close(seen["head_in"], seen["last_out"][:, 0])


def test_embed_is_tokens_plus_positions_then_the_embedding_dropout():
    """ViT.embed (D2L 11.8.4): in eval mode exactly [<cls>; patch features] + positions; in training mode
    ``emb_dropout`` zeroes about that share of the entries and scales the others by 1 / (1 - p)."""
    torch.manual_seed(0)
    model = small_vit(emb_dropout=0.5)
    with torch.no_grad():
        model.cls_token.normal_()
    X = torch.randn(4, 3, 12, 12)
    with torch.no_grad():
        tokens = torch.cat((model.cls_token.expand(4, -1, -1), model.patch_embedding(X)), dim=1)  # (B, P + 1, N)
        expected = tokens + model.pos_embedding  # (B, P + 1, N) + (1, P + 1, N)
        assert torch.equal(model.eval().embed(X), expected)
        out = model.train().embed(X)  # (B, P + 1, N)
    dropped = out == 0
    assert out.shape == expected.shape == (4, 10, 16)
    assert 0.35 < dropped.float().mean() < 0.65, f"emb_dropout=0.5 zeroed {dropped.float().mean():.2f} of the entries"
    torch.testing.assert_close(out[~dropped], 2 * expected[~dropped])
    torch.manual_seed(0)
    still = small_vit(emb_dropout=0.0).train()
    with torch.no_grad():
        assert (still.embed(X) != 0).all(), "emb_dropout=0 drops nothing"


def test_patch_order_matters_only_through_position_embeddings():
    """With zero position embeddings the ViT sees a set of patches: permuting them leaves the logits unchanged."""
    torch.manual_seed(0)
    model = small_vit().eval()
    X = torch.randn(2, 3, 12, 12)
    perm = torch.randperm(9)
    while torch.equal(perm, torch.arange(9)):
        perm = torch.randperm(9)
    Xp = permute_patches(X, 4, perm)
    torch.testing.assert_close(model.patch_embedding(Xp), model.patch_embedding(X)[:, perm])  # the helper is right
    assert not torch.allclose(model(Xp), model(X), atol=1e-4), "position embeddings should make order matter"
    with torch.no_grad():
        model.pos_embedding.zero_()
    torch.testing.assert_close(model(Xp), model(X), atol=1e-5, rtol=1e-5)


def test_gradients_reach_every_parameter():
    torch.manual_seed(0)
    model = small_vit(use_bias=True)
    X, Y = torch.randn(4, 3, 12, 12), torch.tensor([0, 1, 2, 3])
    model.loss(model(X), Y).backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, f"no gradient reached {name}"


def test_loss_accuracy_and_optimizer():
    """loss is the mean cross-entropy; the optimizer is plain SGD with the model's lr (D2L)."""
    torch.manual_seed(0)
    model = small_vit(lr=0.05)
    Y_hat, Y = torch.randn(5, 10), torch.tensor([1, 2, 3, 4, 5])
    expected = -(Y_hat.log_softmax(-1)[torch.arange(5), Y]).mean()
    torch.testing.assert_close(model.loss(Y_hat, Y), expected)
    Y_hat = torch.zeros(4, 10)
    Y_hat[torch.arange(4), torch.tensor([1, 2, 0, 0])] = 1.0
    assert model.accuracy(Y_hat, torch.tensor([1, 2, 3, 4])).item() == 0.5
    opt = model.configure_optimizers()
    assert isinstance(opt, torch.optim.SGD)
    assert opt.param_groups[0]["lr"] == 0.05 and opt.param_groups[0]["momentum"] == 0
    assert sum(p.numel() for g in opt.param_groups for p in g["params"]) == sum(p.numel() for p in model.parameters())


def test_a_few_sgd_steps_fit_a_tiny_batch():
    """The whole model trains: SGD drives the loss on one fixed batch well down."""
    torch.manual_seed(0)
    model = small_vit(lr=0.1)
    opt = model.configure_optimizers()
    X, Y = torch.randn(8, 3, 12, 12), torch.arange(8)
    first = model.loss(model(X), Y).item()
    for _ in range(60):
        loss = model.loss(model(X), Y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.25 * first


def test_vit_errors():
    with pytest.raises(ValueError, match="multiple of the patch size"):
        small_vit(img_size=13)
    with pytest.raises(ValueError, match="divisible by num_heads"):
        small_vit(num_heads=3)
    with pytest.raises(ValueError, match="num_blks"):
        small_vit(num_blks=0)
    model = small_vit()
    with pytest.raises(ValueError, match="built for images of size"):
        model(torch.randn(1, 3, 16, 16))


def test_patch_embedding_equals_its_convolution_with_gradients():
    """The matrix-product form computes what the convolution does, and the weights get the same gradients."""
    torch.manual_seed(1)
    emb = PatchEmbedding((6, 9), (2, 3), 4, in_channels=2).double()
    X = torch.randn(3, 2, 6, 9, dtype=torch.float64)
    got = emb(X)
    want = emb.conv(X).flatten(2).transpose(1, 2)  # (B, N, 3, 3) -> (B, P, N)
    torch.testing.assert_close(got, want)
    g1 = torch.autograd.grad(got.square().sum(), (emb.conv.weight, emb.conv.bias))
    g2 = torch.autograd.grad(emb.conv(X).flatten(2).transpose(1, 2).square().sum(), (emb.conv.weight, emb.conv.bias))
    for a, b in zip(g1, g2):
        torch.testing.assert_close(a, b)
