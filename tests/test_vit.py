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


# ---------------------------------------------------------------------------
# The CPU recipe: augmentation, schedule, weight decay groups, trainer, cache.
# ---------------------------------------------------------------------------

from qkv.vit import (  # noqa: E402
    CNN_RECIPE,
    CPU_RECIPE,
    RecipeTrainer,
    SmallCNN,
    ViTRecipe,
    _decay_groups,
    augment,
    sincos_positions_2d,
    train_fashion_mnist,
    warmup_cosine,
)


@settings(max_examples=20, deadline=None)
@given(gh=st.integers(1, 5), gw=st.integers(1, 5), q=st.integers(1, 4))
def test_sincos_positions_2d_closed_form(gh, gw, q):
    """Row i * gw + j is [sin(i w_k), cos(i w_k), sin(j w_k), cos(j w_k)], w_k = 10000^(-k/q), by a float64 loop."""
    import math

    N = 4 * q
    got = sincos_positions_2d(gh, gw, N)
    assert got.shape == (gh * gw, N)
    want = torch.empty(gh * gw, N, dtype=torch.float64)
    for i in range(gh):
        for j in range(gw):
            for k in range(q):
                w = 10000.0 ** (-k / q)
                want[i * gw + j, k], want[i * gw + j, q + k] = math.sin(i * w), math.cos(i * w)
                want[i * gw + j, 2 * q + k], want[i * gw + j, 3 * q + k] = math.sin(j * w), math.cos(j * w)
    torch.testing.assert_close(got.double(), want, atol=1e-6, rtol=0)
    with pytest.raises(ValueError, match="divisible by 4"):
        sincos_positions_2d(gh, gw, N + 2)


def test_recipe_starts_the_learned_positions_at_sincos_or_small_normal():
    """pos_init="sincos": <cls> row 0, the patches' rows the 2-D encoding of their grid, still a learned parameter;
    "normal": small random rows (std 0.02), as before."""
    r = ViTRecipe(img_size=12, patch_size=4, num_hiddens=8, mlp_num_hiddens=8, num_heads=2, num_blks=1)
    model = r.build()
    assert model.pos_embedding.requires_grad
    torch.testing.assert_close(model.pos_embedding[0, 0], torch.zeros(8))
    torch.testing.assert_close(model.pos_embedding[0, 1:], sincos_positions_2d(3, 3, 8))
    torch.manual_seed(0)
    rand = ViTRecipe(**{**r.__dict__, "pos_init": "normal"}).build().pos_embedding.detach()
    assert 0.01 < float(rand.std()) < 0.04  # std 0.02 (9 x 8 draws)


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


def test_augment_is_a_shift_and_maybe_a_mirror_of_each_image():
    """Every output image equals the input shifted by some (dy, dx) in [-s, s] (zeros fill in), mirrored or not;
    shift 0 and flip 0 leave the batch alone; flip 1 mirrors every image."""
    g = torch.Generator().manual_seed(0)
    X = torch.rand(16, 2, 6, 5, generator=g) + 0.1  # no zeros, so the filled-in border shows
    s = 2
    Y = augment(X, s, 0.5, generator=g)
    assert Y.shape == X.shape
    Xp = nn.functional.pad(X, (s, s, s, s))  # (B, C, 6 + 2s, 5 + 2s)
    mirrored = 0
    for b in range(16):
        matches = [
            (dy, dx, m)
            for dy in range(2 * s + 1)
            for dx in range(2 * s + 1)
            for m in (False, True)
            if torch.equal(Y[b], (lambda c: c.flip(-1) if m else c)(Xp[b, :, dy : dy + 6, dx : dx + 5]))
        ]
        assert matches, f"image {b} is no shift of the input"
        mirrored += matches[0][2]
    assert 0 < mirrored < 16  # flip 0.5: some of each (seeded)
    assert torch.equal(augment(X, 0, 0.0), X)
    assert torch.equal(augment(X, 0, 1.0), X.flip(-1))


def test_warmup_cosine_closed_form():
    total, warm = 100, 0.1  # 10 warm-up steps
    f = [warmup_cosine(s, total, warm) for s in range(total + 1)]
    assert f[:10] == pytest.approx([(s + 1) / 10 for s in range(10)])
    assert f[10] == pytest.approx(1.0)
    assert f[55] == pytest.approx(0.5)  # half way through the 90 decay steps
    assert f[100] == pytest.approx(0.0, abs=1e-12)
    assert all(a >= b for a, b in zip(f[10:], f[11:]))


def test_weight_decay_spares_biases_norms_cls_and_positions():
    model = ViTRecipe(img_size=8, patch_size=4, num_hiddens=8, mlp_num_hiddens=8, num_heads=2, num_blks=1).build()
    decay, keep = _decay_groups(model, 0.05)
    names = {id(p): n for n, p in model.named_parameters()}
    assert {names[id(p)] for p in keep["params"]} >= {"cls_token", "pos_embedding", "head.0.weight", "head.1.bias"}
    assert all(p.dim() >= 2 for p in decay["params"])
    assert {names[id(p)] for p in decay["params"]} >= {"patch_embedding.conv.weight", "head.1.weight"}
    assert len(decay["params"]) + len(keep["params"]) == len(list(model.parameters()))


def test_recipe_checks_its_fields():
    with pytest.raises(ValueError, match="model"):
        ViTRecipe(model="mlp")
    with pytest.raises(ValueError, match="warmup"):
        ViTRecipe(warmup=1.0)
    with pytest.raises(ValueError, match="flip"):
        ViTRecipe(flip=2.0)
    with pytest.raises(ValueError, match="pos_init"):
        ViTRecipe(pos_init="zeros")
    with pytest.raises(ValueError, match="divisible by 4"):
        ViTRecipe(num_hiddens=30)
    ViTRecipe(num_hiddens=30, pos_init="normal")  # the old start needs no particular width
    assert isinstance(CNN_RECIPE.build(), SmallCNN)
    assert CPU_RECIPE.vit_config().img_size == CPU_RECIPE.img_size


class _Blobs:
    """Two classes of 8 x 8 images: bright top half or bright bottom half, plus noise (a task a ViT learns fast)."""

    def __init__(self, n=128, batch_size=16):
        g = torch.Generator().manual_seed(3)
        self.y = torch.randint(0, 2, (n,), generator=g)
        X = 0.3 * torch.rand(n, 1, 8, 8, generator=g)
        X[self.y == 0, :, :4] += 1.0
        X[self.y == 1, :, 4:] += 1.0
        self.X, self.batch_size = X, batch_size

    def train_dataloader(self):
        return [
            (self.X[i : i + self.batch_size], self.y[i : i + self.batch_size])
            for i in range(0, len(self.y), self.batch_size)
        ]

    def val_dataloader(self):
        return self.train_dataloader()


def test_recipe_trainer_learns_records_accuracy_and_cpu_time_and_ends_at_lr_zero():
    recipe = ViTRecipe(
        img_size=8, patch_size=4, num_hiddens=16, mlp_num_hiddens=16, num_heads=2, num_blks=1, epochs=8, lr=1e-2
    )
    torch.manual_seed(0)
    model = recipe.build()
    trainer = RecipeTrainer(recipe, seed=0)
    h = trainer.fit(model, _Blobs())
    assert len(h["val_acc"]) == len(h["cpu_seconds"]) == len(h["train_seconds"]) == 8
    assert all(0 < a < b <= c for a, b, c in zip(h["train_seconds"], h["train_seconds"][1:], h["seconds"][1:]))
    assert isinstance(trainer.optim, torch.optim.AdamW) and trainer.optim.defaults["fused"]
    assert h["train_loss"][-1] < 0.5 * h["train_loss"][0]
    assert h["val_acc"][-1] == 1.0
    assert all(a < b for a, b in zip(h["cpu_seconds"], h["cpu_seconds"][1:]))
    assert trainer.optim.param_groups[0]["lr"] == pytest.approx(0.0, abs=1e-12)


@settings(max_examples=15, deadline=None)
@given(num_blks=st.integers(1, 3), batch=st.integers(1, 4), seed=st.integers(0, 2**16))
def test_forward_cls_only_gives_the_logits_and_gradients_of_forward(num_blks, batch, seed):
    """Skipping the last block's patch positions changes nothing the head reads: logits and every parameter's
    gradient agree with forward() in float64 (a query, projection or MLP left on the wrong positions would not)."""
    torch.manual_seed(seed)
    model = small_vit(num_blks=num_blks).double()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.5)  # not the zero <cls> start: every path must matter
    X = torch.randn(batch, 3, 12, 12, dtype=torch.float64)
    Y = torch.randint(0, 10, (batch,))
    grads = []
    for run in (model, model.forward_cls_only):
        model.zero_grad()
        logits = run(X)  # (B, 10)
        torch.nn.functional.cross_entropy(logits, Y).backward()
        grads.append((logits.detach(), [p.grad.clone() for p in model.parameters()]))
    (want, want_g), (got, got_g) = grads
    assert got.shape == (batch, 10)
    torch.testing.assert_close(got, want, atol=1e-10, rtol=1e-10)
    for name_p, g, h in zip(model.named_parameters(), got_g, want_g):
        torch.testing.assert_close(g, h, atol=1e-10, rtol=1e-8, msg=lambda m, n=name_p[0]: f"{n}: {m}")


def test_forward_first_is_the_blocks_first_position():
    torch.manual_seed(0)
    blk = ViTBlock(8, 8, 12, 2, 0.0)
    X = torch.randn(3, 5, 8)
    torch.testing.assert_close(blk.forward_first(X), blk(X)[:, :1])
    assert blk.forward_first(X).shape == (3, 1, 8)


def test_recipe_trainer_runs_a_subclass_that_overrides_forward_as_it_is():
    """The shortcut is for our ViT's own forward: a mean-pooling subclass must be trained and scored by its own
    forward, not by the <cls> shortcut of its parent."""

    class MeanPool(ViT):
        calls = 0

        def forward(self, X):
            MeanPool.calls += 1
            X = self.patch_embedding(X)  # (B, P, N)
            return self.head(self.blks(X + self.pos_embedding[:, 1:]).mean(dim=1))  # (B, num_classes)

    torch.manual_seed(0)
    plain, pooled = small_vit(), small_vit(MeanPool)
    X = torch.randn(2, 3, 12, 12)
    torch.testing.assert_close(RecipeTrainer.logits(plain, X), plain(X))
    assert torch.equal(RecipeTrainer.logits(pooled, X), pooled(X)) and MeanPool.calls == 2

    class Reversed(ViTBlock):  # a last block with its own forward, which the shortcut would skip
        def forward(self, X, valid_lens=None):
            return super().forward(X, valid_lens).flip(-1)  # features reversed: no layer norm undoes that

    last = plain.blks[-1]
    plain.blks[-1] = Reversed(16, 16, 32, 2, 0.0)
    plain.blks[-1].load_state_dict(last.state_dict())
    assert torch.equal(RecipeTrainer.logits(plain, X), plain(X))
    assert not torch.allclose(plain.forward_cls_only(X), plain(X))


def test_train_fashion_mnist_trains_once_then_loads(tmp_path, monkeypatch):
    """Through qkv.trained.fit_or_load (a smoke run under the test suite): the second call loads."""
    from qkv.data import FashionMNIST

    monkeypatch.setenv("QKV_TRAINED_DIR", str(tmp_path))
    monkeypatch.setenv("QKV_TRAIN_SMOKE", "2")
    data = FashionMNIST(CPU_RECIPE.batch_size, num_train=512, num_val=256)
    first, _ = train_fashion_mnist(seed=1, data=data, log=lambda s: None)
    again, _ = train_fashion_mnist(seed=1, data=data, log=lambda s: None)
    assert first.trained and not again.trained
    assert again.history["val_acc"] == first.history["val_acc"]
    X = data.val[[0, 1, 2, 3]][0]
    assert torch.equal(first.model(X), again.model(X))
