"""Tests of qkv.recipes.vit (D2L 11.8, our CPU recipe): positions, augmentation, schedule, weight decay groups,
the trainer and its <cls>-only shortcut, the cache."""

from __future__ import annotations

import dataclasses
import functools

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from qkv.recipes.vit import (
    CNN_RECIPE,
    CPU_RECIPE,
    RecipeTrainer,
    SmallCNN,
    ViTRecipe,
    _decay_groups,
    augment,
    forward_cls_only,
    forward_first,
    sincos_positions_2d,
    train_fashion_mnist,
    warmup_cosine,
)
from qkv.vit import ViT, ViTBlock, ViTConfig


def _vit(cls=ViT, num_blks: int = 2) -> ViT:
    """A small ViT: 12 x 12 images of 3 channels in 4 x 4 patches (P = 9), N = 16, MLP 32, 2 heads, no dropout."""
    return cls(12, 4, 16, 32, 2, num_blks, 0.0, 0.0, in_channels=3)


def _tiny(**kw) -> ViTRecipe:
    """The recipe with a tiny ViT: 8 x 8 images in 4 x 4 patches, N = 8, MLP 8, 2 heads, 1 block."""
    model = ViTConfig(img_size=8, patch_size=4, num_hiddens=8, mlp_num_hiddens=8, num_heads=2, num_blks=1)
    return ViTRecipe(model=model, **kw)


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
    r = _tiny().with_model(img_size=12)
    model = r.build()
    assert model.pos_embedding.requires_grad
    torch.testing.assert_close(model.pos_embedding[0, 0], torch.zeros(8))
    torch.testing.assert_close(model.pos_embedding[0, 1:], sincos_positions_2d(3, 3, 8))
    torch.manual_seed(0)
    rand = dataclasses.replace(r, pos_init="normal").build().pos_embedding.detach()
    assert 0.01 < float(rand.std()) < 0.04  # std 0.02 (9 x 8 draws)


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
    model = _tiny().build()
    decay, keep = _decay_groups(model, 0.05)
    names = {id(p): n for n, p in model.named_parameters()}
    assert {names[id(p)] for p in keep["params"]} >= {"cls_token", "pos_embedding", "head.0.weight", "head.1.bias"}
    assert all(p.dim() >= 2 for p in decay["params"])
    assert {names[id(p)] for p in decay["params"]} >= {"patch_embedding.conv.weight", "head.1.weight"}
    assert len(decay["params"]) + len(keep["params"]) == len(list(model.parameters()))


def test_recipe_checks_its_fields():
    with pytest.raises(TypeError, match="model must be a qkv.vit.ViTConfig"):
        ViTRecipe(model="cnn")
    with pytest.raises(ValueError, match="warmup"):
        ViTRecipe(warmup=1.0)
    with pytest.raises(ValueError, match="flip"):
        ViTRecipe(flip=2.0)
    with pytest.raises(ValueError, match="pos_init"):
        ViTRecipe(pos_init="zeros")
    with pytest.raises(ValueError, match="divisible by 4"):
        CPU_RECIPE.with_model(num_hiddens=30)
    dataclasses.replace(CPU_RECIPE, pos_init="normal").with_model(num_hiddens=30)  # the old start: any width
    assert isinstance(CNN_RECIPE.build(), SmallCNN) and CNN_RECIPE.name == "cnn" and CPU_RECIPE.name == "vit"
    assert CPU_RECIPE.with_model(img_size=56).model.img_size == 56 and CPU_RECIPE.model.img_size == 28


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
    recipe = _tiny(epochs=8, lr=1e-2).with_model(num_hiddens=16, mlp_num_hiddens=16)
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


def test_the_learning_rate_follows_warmup_cosine_batch_by_batch(monkeypatch):
    """The trainer's scheduler steps once per batch: the k-th optimiser step of the run uses lr times
    warmup_cosine(k, total, warmup), total = epochs x batches per epoch (3 x 8 = 24 here, 2 of them warm-up)."""
    recipe = _tiny(epochs=3, lr=1e-2, warmup=0.1)
    seen = []
    real_step = torch.optim.AdamW.step

    def step(self, *args, **kwargs):
        seen.append(self.param_groups[0]["lr"])
        return real_step(self, *args, **kwargs)

    monkeypatch.setattr(torch.optim.AdamW, "step", step)
    trainer = RecipeTrainer(recipe, seed=0)
    trainer.fit(recipe.build(), _Blobs(n=128, batch_size=16))
    assert seen == pytest.approx([1e-2 * warmup_cosine(k, 24, 0.1) for k in range(24)], rel=1e-12, abs=1e-15)
    assert isinstance(trainer.lr_scheduler, torch.optim.lr_scheduler.LambdaLR)


@settings(max_examples=15, deadline=None)
@given(num_blks=st.integers(1, 3), batch=st.integers(1, 4), seed=st.integers(0, 2**16))
def test_forward_cls_only_gives_the_logits_and_gradients_of_forward(num_blks, batch, seed):
    """Skipping the last block's patch positions changes nothing the head reads: logits and every parameter's
    gradient agree with forward() in float64 (a query, projection or MLP left on the wrong positions would not)."""
    torch.manual_seed(seed)
    model = _vit(num_blks=num_blks).double()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.5)  # not the zero <cls> start: every path must matter
    X = torch.randn(batch, 3, 12, 12, dtype=torch.float64)
    Y = torch.randint(0, 10, (batch,))
    grads = []
    for run in (model, functools.partial(forward_cls_only, model)):
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
    torch.testing.assert_close(forward_first(blk, X), blk(X)[:, :1])
    assert forward_first(blk, X).shape == (3, 1, 8)


def _cnn_by_hand(model: SmallCNN, X: torch.Tensor) -> torch.Tensor:
    """SmallCNN's forward written out with torch.nn.functional on plain (contiguous NCHW) copies of its weights."""
    convs = [m for m in model.net if isinstance(m, nn.Conv2d)]
    norms = [m for m in model.net if isinstance(m, nn.BatchNorm2d)]
    H = X.contiguous()
    for i, (conv, bn) in enumerate(zip(convs, norms)):
        H = F.conv2d(H, conv.weight.detach().contiguous(), padding=1)
        H = F.batch_norm(H, bn.running_mean, bn.running_var, bn.weight.detach(), bn.bias.detach(), eps=bn.eps)
        H = F.relu(H)
        if i < 2:
            H = F.max_pool2d(H, 2)
    head = model.net[-1]
    return F.linear(H.mean(dim=(2, 3)), head.weight.detach(), head.bias.detach())


@pytest.mark.parametrize("size", [28, 12])
def test_small_cnn_stored_channels_last_computes_the_plain_layers(size):
    """The channels-last layout is a speed-up only: the logits (eval mode) are those of the same layers applied
    by hand to contiguous tensors, and training updates the kernels in place, still channels-last."""
    torch.manual_seed(0)
    model = SmallCNN()
    for m in model.net:
        if isinstance(m, nn.BatchNorm2d):  # running statistics away from the defaults, so that they count
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 2.0)
    X = torch.randn(5, 1, size, size)
    model.eval()
    with torch.no_grad():
        got = model(X)
    assert got.shape == (5, 10)
    torch.testing.assert_close(got, _cnn_by_hand(model, X), atol=1e-5, rtol=1e-4)
    conv = model.net[0]
    assert conv.weight.is_contiguous(memory_format=torch.channels_last)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, fused=True)
    before = conv.weight.detach().clone()
    model(X).square().mean().backward()
    opt.step()
    assert not torch.equal(conv.weight, before)
    assert conv.weight.is_contiguous(memory_format=torch.channels_last)


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
    plain, pooled = _vit(), _vit(MeanPool)
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
    assert not torch.allclose(forward_cls_only(plain, X), plain(X))


def test_train_fashion_mnist_trains_once_then_loads(tmp_path, monkeypatch):
    """Through qkv.recipes.weights.fit_or_load (a smoke run under the test suite): the second call loads."""
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
