"""Our recipe for training D2L 11.8's Vision Transformer on Fashion-MNIST on two CPU cores, and its CNN baseline.

D2L 11.8.5 trains :class:`qkv.vit.ViT` on 96-pixel images by plain SGD on a GPU. This module is what the course
adds to train a small ViT in about two CPU minutes instead: :class:`ViTRecipe` (a :class:`~qkv.vit.ViTConfig` for
the model, plus how to train it), :class:`RecipeTrainer` (a :class:`qkv.training.Trainer` with AdamW, a warm-up
and cosine schedule stepped per batch, label smoothing, and a forward pass that skips what the head never reads),
the :class:`SmallCNN` baseline, :data:`CPU_RECIPE` and :data:`CNN_RECIPE`, and :func:`train_fashion_mnist`, which
trains once and then loads the cached weights (:mod:`qkv.recipes.weights`). The runs that chose the recipe are in
``benchmarks/results/vit_cpu.md``. Shape letters are those of the glossary in :mod:`qkv`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import torch
from torch import nn
from torch.nn import functional as F

from qkv.training import Trainer, evaluating, fusable
from qkv.vit import ViT, ViTBlock, ViTConfig

__all__ = [
    "ViTRecipe",
    "RecipeTrainer",
    "SmallCNN",
    "sincos_positions_2d",
    "augment",
    "warmup_cosine",
    "forward_first",
    "forward_cls_only",
    "training_flops",
    "train_fashion_mnist",
    "train_cnn",
    "CPU_RECIPE",
    "CNN_RECIPE",
]


def _cpu_vit() -> ViTConfig:
    """The ViT of our recipe: Fashion-MNIST at its own 28 x 28, 7 x 7 patches (16 of them), width 64, MLP 128,
    4 heads, 2 blocks, no dropout (D2L 11.8.5's model is 96 x 96 in 16 x 16 patches, width 512)."""
    return ViTConfig(
        img_size=28,
        patch_size=7,
        num_hiddens=64,
        mlp_num_hiddens=128,
        num_heads=4,
        num_blks=2,
        emb_dropout=0.0,
        blk_dropout=0.0,
    )


@dataclass
class ViTRecipe:
    """How we train a ViT (or the CNN baseline) on Fashion-MNIST in about two CPU minutes (D2L 11.8.5, our recipe).

    ``model`` is the ViT's :class:`~qkv.vit.ViTConfig` (its ``lr``, D2L's SGD learning rate, is not used:
    :class:`RecipeTrainer` brings its own optimiser); ``cnn=True`` trains :class:`SmallCNN` instead, with the
    same training. The rest is the training: ``epochs`` passes over the 60,000 training images in batches of
    ``batch_size``; AdamW with peak learning rate ``lr`` and weight decay ``weight_decay`` (on matrices only, not
    on biases, norms, ``<cls>`` or positions); the learning rate rises linearly from 0 over the first ``warmup``
    fraction of the steps, then falls to 0 along a half cosine (:meth:`schedule`); the loss is cross-entropy with
    label smoothing ``label_smoothing``; every training image is shifted by up to ``shift`` pixels in each
    direction (zeros fill in) and mirrored left-right with probability ``flip``. ``pos_init`` is where the learned
    positions start: ``"sincos"`` (:func:`sincos_positions_2d`, ``<cls>`` at 0) or ``"normal"`` (truncated
    normal, standard deviation 0.02, timm's start); both are ours, where D2L's :class:`~qkv.vit.ViT` starts them
    at ``torch.randn`` (standard deviation 1).
    """

    model: ViTConfig = field(default_factory=_cpu_vit)
    cnn: bool = False
    epochs: int = 12
    batch_size: int = 128
    lr: float = 4e-3
    weight_decay: float = 0.05
    warmup: float = 0.05
    label_smoothing: float = 0.1
    shift: int = 0
    flip: float = 0.0
    pos_init: str = "sincos"

    def __post_init__(self):
        if not isinstance(self.model, ViTConfig):
            raise TypeError(f"model must be a qkv.vit.ViTConfig, got {self.model!r}; cnn=True trains the CNN")
        if self.pos_init not in ("sincos", "normal"):
            raise ValueError(f"pos_init must be 'sincos' or 'normal', got {self.pos_init!r}")
        if not self.cnn and self.pos_init == "sincos" and self.model.num_hiddens % 4:
            raise ValueError(
                f"pos_init='sincos' needs num_hiddens divisible by 4 (a sine and a cosine for the row and for the "
                f"column), got {self.model.num_hiddens}; pick another width or pos_init='normal'"
            )
        if not 0 <= self.warmup < 1:
            raise ValueError(f"warmup is a fraction of the steps in [0, 1), got {self.warmup!r}")
        if not 0 <= self.flip <= 1:
            raise ValueError(f"flip is a probability in [0, 1], got {self.flip!r}")
        if self.shift < 0:
            raise ValueError(f"shift is a number of pixels >= 0, got {self.shift!r}")

    @property
    def name(self) -> str:
        """``"cnn"`` or ``"vit"``: what this recipe trains."""
        return "cnn" if self.cnn else "vit"

    def with_model(self, **changes) -> ViTRecipe:
        """This recipe with the model's fields ``changes`` changed: ``CPU_RECIPE.with_model(img_size=56)``."""
        return dataclasses.replace(self, model=dataclasses.replace(self.model, **changes))

    def build(self) -> nn.Module:
        """The untrained model (seed torch first for repeatable weights)."""
        if self.cnn:
            return SmallCNN()
        model = ViT.from_config(self.model)
        with torch.no_grad():
            if self.pos_init == "sincos":  # still learned: only the starting values change
                model.pos_embedding.zero_()  # <cls> (row 0) starts at 0
                grid = model.patch_embedding.grid_size
                model.pos_embedding[0, 1:] = sincos_positions_2d(*grid, self.model.num_hiddens)  # (P, N)
            else:
                nn.init.trunc_normal_(model.pos_embedding, std=0.02)  # ours (timm's); D2L's is randn, std 1
        return model

    def schedule(self, optimizer: torch.optim.Optimizer, total_steps: int) -> torch.optim.lr_scheduler.LambdaLR:
        """The learning rate per batch, :func:`warmup_cosine` of the ``total_steps`` (the trainer's ``scheduler``)."""
        return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: warmup_cosine(step, total_steps, self.warmup))


def sincos_positions_2d(grid_h: int, grid_w: int, num_hiddens: int, base: float = 10000.0) -> torch.Tensor:
    """Two-dimensional sine-cosine positions for a grid of patches, (grid_h * grid_w, num_hiddens), rows in the
    patches' row-major order (D2L 11.6.3's encoding, once for the row and once for the column).

    With q = num_hiddens / 4 frequencies w_k = base^(-k / q), k = 0 .. q - 1, patch (i, j) gets
    [sin(i w), cos(i w), sin(j w), cos(j w)]: a quarter of the features each. Our recipe starts the ViT's learned
    positions here (Beyer et al. 2022 keep such positions fixed) so that the first steps already know which patches
    are neighbours."""
    if num_hiddens % 4:
        raise ValueError(f"num_hiddens must be divisible by 4, got {num_hiddens}")
    q = num_hiddens // 4
    omega = base ** (-torch.arange(q, dtype=torch.float32) / q)  # (q,)
    rows, cols = torch.meshgrid(torch.arange(grid_h), torch.arange(grid_w), indexing="ij")  # (gh, gw) each
    i = rows.reshape(-1, 1) * omega  # (P, 1) * (q,) -> (P, q)
    j = cols.reshape(-1, 1) * omega  # (P, 1) * (q,) -> (P, q)
    return torch.cat((i.sin(), i.cos(), j.sin(), j.cos()), dim=1)  # (P, 4q) = (P, N)


class SmallCNN(nn.Module):
    """The convolutional baseline of our inductive-bias comparison (D2L 11.8; convolutions are D2L chapter 7):
    three 3 x 3 conv blocks.

    conv(1 -> 16) BN ReLU, max-pool 2; conv(16 -> 32) BN ReLU, max-pool 2;
    conv(32 -> 64) BN ReLU; global average pooling; linear to 10 classes.
    Images (B, 1, S, S) -> logits (B, 10).

    Its kernels and activations are stored channels-last (``torch.channels_last``: each pixel's channels side by
    side in memory). The values are the same; only the layout differs, which oneDNN's CPU convolutions run about
    1.4 times as fast (a training step of batch 128: 24 against 34 ms on two cores; ``benchmarks/vit.py`` times
    whole runs).
    """

    def __init__(self, num_classes: int = 10, in_channels: int = 1, widths=(16, 32, 64)):
        super().__init__()

        def block(c_in, c_out):
            return [nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU()]

        a, b, c = widths
        self.net = nn.Sequential(
            *block(in_channels, a),
            nn.MaxPool2d(2),  # (B, a, S, S) -> (B, a, S / 2, S / 2)
            *block(a, b),
            nn.MaxPool2d(2),  # (B, b, S / 2, S / 2) -> (B, b, S / 4, S / 4)
            *block(b, c),
            nn.AdaptiveAvgPool2d(1),  # (B, c, S / 4, S / 4) -> (B, c, 1, 1)
            nn.Flatten(),  # (B, c, 1, 1) -> (B, c)
            nn.Linear(c, num_classes),
        )
        self.to(memory_format=torch.channels_last)  # the conv kernels (c_out, c_in, 3, 3), stored channels-last

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        X = X.contiguous(memory_format=torch.channels_last)  # (B, 1, S, S), the same values laid out channels-last
        return self.net(X)  # (B, 1, S, S) -> (B, num_classes)


def augment(X: torch.Tensor, shift: int, flip: float, generator=None) -> torch.Tensor:
    """Shift each image (B, C, S, S) by up to ``shift`` pixels each way (zeros fill in) and mirror it
    left-right with probability ``flip``; a new tensor of the same shape (D2L 14.1's augmentation, made cheap)."""
    B, C, H, W = X.shape
    if shift:
        Xp = F.pad(X, (shift, shift, shift, shift))  # (B, C, H + 2s, W + 2s)
        dy = torch.randint(0, 2 * shift + 1, (B, 1), generator=generator)  # (B, 1)
        dx = torch.randint(0, 2 * shift + 1, (B, 1), generator=generator)  # (B, 1)
        rows = (dy + torch.arange(H)).to(X.device)  # (B, H)
        cols = (dx + torch.arange(W)).to(X.device)  # (B, W)
        b = torch.arange(B, device=X.device)[:, None, None, None]  # (B, 1, 1, 1)
        c = torch.arange(C, device=X.device)[None, :, None, None]  # (1, C, 1, 1)
        X = Xp[b, c, rows[:, None, :, None], cols[:, None, None, :]]  # (B, C, H, W)
    if flip:
        mirror = (torch.rand(B, generator=generator) < flip).to(X.device)  # (B,)
        X = torch.where(mirror[:, None, None, None], X.flip(-1), X)  # (B, C, H, W)
    return X


def _decay_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """Weight decay on matrices and conv kernels only; biases, norms, ``<cls>`` and positions are not decayed."""
    decay, keep = [], []
    for name, p in model.named_parameters():
        (keep if p.dim() < 2 or name in ("cls_token", "pos_embedding") else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": keep, "weight_decay": 0.0}]


def warmup_cosine(step: int, total: int, warmup: float) -> float:
    """The learning-rate factor at ``step`` of ``total``: linear from 0 to 1 over ``warmup * total`` steps, then
    a half cosine down to 0 at ``total`` (our recipe's schedule; D2L 11.8.5 keeps SGD's rate constant)."""
    n_warm = max(1, round(warmup * total))
    if step < n_warm:
        return (step + 1) / n_warm
    progress = (step - n_warm) / max(1, total - n_warm)
    return 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))


def forward_first(blk: ViTBlock, X: torch.Tensor) -> torch.Tensor:
    """``blk(X)[:, :1]``, computed for the first position only (our addition to D2L 11.8.3).

    Position 0 still attends to every position, so its keys and values are computed for all of them; its query,
    the attention's output projection, the second layer norm and the MLP are computed for position 0 alone.
    (B, T, N) -> (B, 1, N). The last block of a classifier that reads only ``<cls>`` needs nothing more.
    """
    Y = blk.ln1(X)  # (B, T, N)
    X = X[:, :1] + blk.attention(Y[:, :1], Y, Y)  # (B, 1, N): one query against T keys and values
    return X + blk.mlp(blk.ln2(X))  # (B, 1, N)


def forward_cls_only(model: ViT, X: torch.Tensor) -> torch.Tensor:
    """The logits of ``model(X)``, with the last block computed at ``<cls>`` only (our addition to D2L 11.8.4).

    The head reads position 0 alone, so the last block's outputs at the P patch positions are computed and thrown
    away; :func:`forward_first` skips them. The logits (and so the gradients) are those of :meth:`ViT.forward` up
    to rounding, for less work. (B, C, S, S) -> (B, num_classes).
    """
    X = model.embed(X)  # (B, C, S, S) -> (B, P + 1, N)
    for blk in model.blks[:-1]:
        X = blk(X)  # (B, P + 1, N)
    return model.head(forward_first(model.blks[-1], X)[:, 0])  # (B, 1, N) -> (B, num_classes)


class RecipeTrainer(Trainer):
    """A :class:`qkv.training.Trainer` that follows a :class:`ViTRecipe` (D2L 11.8.5, our recipe).

    AdamW runs fused (one kernel for all parameters) with the recipe's weight decay groups, its learning rate
    follows :meth:`ViTRecipe.schedule` batch by batch (the base trainer's ``scheduler``), the training loss has
    label smoothing and the training images the recipe's augmentation, and a :class:`~qkv.vit.ViT` runs by
    :func:`forward_cls_only` (see :meth:`logits`). Beyond the base trainer's history it records, per epoch,
    ``val_acc`` (accuracy on the validation data).
    """

    def __init__(self, recipe: ViTRecipe, *, seed: int, device="cpu", progress: bool | None = None):
        super().__init__(
            recipe.epochs,
            device=device,
            seed=seed,
            optimizer="adam",
            lr=recipe.lr,
            progress=progress,
            scheduler=recipe.schedule,
        )
        self.recipe = recipe

    def configure_optimizer(self, model: nn.Module) -> torch.optim.Optimizer:
        r = self.recipe
        groups = _decay_groups(model, r.weight_decay)
        return torch.optim.AdamW(groups, lr=r.lr, betas=(0.9, 0.999), fused=fusable(model))

    @staticmethod
    def logits(model: nn.Module, X: torch.Tensor) -> torch.Tensor:
        """``model(X)``; for a :class:`~qkv.vit.ViT` whose ``forward`` and last block's ``forward`` are qkv's, the
        same logits by :func:`forward_cls_only`, which skips the last block's unread patch positions. A subclass
        that overrides either (mean pooling, say) is called as it is."""
        ours = isinstance(model, ViT) and type(model).forward is ViT.forward
        if ours and type(model.blks[-1]).forward is ViTBlock.forward:  # and so is its last block's
            return forward_cls_only(model, X)  # (B, C, S, S) -> (B, num_classes)
        return model(X)  # (B, C, S, S) -> (B, num_classes)

    def compute_loss(self, model: nn.Module, batch) -> torch.Tensor:
        X, Y = batch
        if model.training:
            X = augment(X, self.recipe.shift, self.recipe.flip)
            return F.cross_entropy(self.logits(model, X), Y, label_smoothing=self.recipe.label_smoothing)
        return F.cross_entropy(self.logits(model, X), Y)

    def evaluate(self, model: nn.Module, loader) -> float:
        if loader is None:
            return math.nan
        loss, correct, count = 0.0, 0, 0
        with evaluating(model):
            for X, Y in loader:
                X, Y = X.to(self.device), Y.to(self.device)
                Y_hat = self.logits(model, X)  # (B, num_classes)
                loss += float(F.cross_entropy(Y_hat, Y, reduction="sum"))
                correct += int((Y_hat.argmax(-1) == Y).sum())
                count += Y.shape[0]
        self.history.setdefault("val_acc", []).append(correct / count)
        return loss / count


#: Our ViT recipe for two CPU cores: 7 x 7 patches of the 28-pixel images, width 64, 2 blocks, learned positions
#: that start at a 2-D sine-cosine encoding, AdamW at 0.004 with warm-up and cosine decay, label smoothing 0.1, no
#: augmentation, batches of 128, 12 epochs, and the last block computed at <cls> only (forward_cls_only).
#: ``benchmarks/results/vit_cpu.md`` has the runs that chose it and its times and accuracies.
CPU_RECIPE = ViTRecipe()
#: The CNN baseline: the same recipe with a larger learning rate (its batch norms allow it) and 6 epochs, which
#: take about the ViT's time (``benchmarks/results/vit_cpu.md``).
CNN_RECIPE = ViTRecipe(cnn=True, epochs=6, lr=5e-3)


def training_flops(model: nn.Module, img_size: int, forward=None, batch_size: int = 4) -> float:
    """The floating-point operations of one training step per image, forward and backward, as PyTorch's
    :class:`torch.utils.flop_counter.FlopCounterMode` counts them (matrix products and convolutions, two per
    multiply-add; our addition to D2L 11.8.5, to compare the cost of two recipes).

    ``model`` is called on a batch of ``batch_size`` random grayscale images of side ``img_size``, through
    ``forward(model, X)`` if given (e.g. :meth:`RecipeTrainer.logits`, which our recipe trains with), and the
    cross-entropy against class 0 is backpropagated. The gradients it leaves are zeroed again.
    """
    from torch.utils.flop_counter import FlopCounterMode

    X = torch.rand(batch_size, 1, img_size, img_size)  # (B, 1, S, S)
    Y = torch.zeros(batch_size, dtype=torch.long)  # (B,)
    with FlopCounterMode(display=False) as counter:
        logits = model(X) if forward is None else forward(model, X)  # (B, num_classes)
        F.cross_entropy(logits, Y).backward()
    model.zero_grad(set_to_none=True)
    return counter.get_total_flops() / batch_size


def train_fashion_mnist(recipe: ViTRecipe | None = None, *, seed: int = 0, data=None, log=print, progress=None):
    """Train a model on Fashion-MNIST with ``recipe`` (default :data:`CPU_RECIPE`), or load the weights of an
    identical earlier run (D2L 11.8.5, our recipe).

    ``data`` defaults to ``FashionMNIST(recipe.batch_size, resize=recipe.model.img_size)`` (all 60,000 training
    images; the 10,000 test images validate). The model is built after ``torch.manual_seed(seed)`` and trained by
    a :class:`RecipeTrainer` on the CPU; :func:`qkv.recipes.weights.fit_or_load` caches the weights. Returns ``(fitted,
    data)``: ``fitted.history`` has per epoch ``val_acc`` (test accuracy), ``train_seconds`` and ``cpu_seconds``
    (the training's wall and CPU time so far) and the base trainer's losses and wall ``seconds``.
    """
    from qkv.data import FashionMNIST
    from qkv.recipes.weights import fit_or_load

    recipe = CPU_RECIPE if recipe is None else recipe
    data = FashionMNIST(recipe.batch_size, resize=recipe.model.img_size) if data is None else data
    trainer = RecipeTrainer(recipe, seed=seed, device="cpu", progress=progress)
    return fit_or_load(f"{recipe.name}-fashion-mnist", recipe.build, data, trainer, config=recipe, log=log), data


def train_cnn(*, seed: int = 0, data=None, log=print):
    """The CNN baseline (:data:`CNN_RECIPE`) trained or loaded as :func:`train_fashion_mnist` does (D2L 11.8)."""
    return train_fashion_mnist(CNN_RECIPE, seed=seed, data=data, log=log)
