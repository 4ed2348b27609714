"""The Vision Transformer (D2L 11.8).

A ViT reads an image as a sequence: it cuts the image into square patches,
maps each patch linearly to ``num_hiddens`` features (one strided convolution
does this for all patches at once), puts a learnable ``<cls>`` token in front,
adds a learnable positional embedding, and runs a stack of pre-norm
Transformer encoder blocks. The class is predicted from the ``<cls>`` output
alone. With the positional embedding set to zero the model could not tell
where a patch came from: it would treat the image as a set of patches.
Shape letters are those of the glossary in :mod:`qkv`.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass

import torch
from torch import nn
from torch.nn import functional as F

from qkv.multihead import MultiHeadAttention
from qkv.training import Trainer, evaluating

__all__ = [
    "PatchEmbedding",
    "ViTMLP",
    "ViTBlock",
    "ViT",
    "ViTConfig",
    "ViTRecipe",
    "SmallCNN",
    "RecipeTrainer",
    "augment",
    "warmup_cosine",
    "train_fashion_mnist",
    "train_cnn",
    "training_flops",
    "CPU_RECIPE",
    "CNN_RECIPE",
]


def _pair(x, name: str) -> tuple[int, int]:
    """``x`` as a (height, width) pair of positive ints; an int means a square."""
    pair = tuple(x) if isinstance(x, list | tuple) else (x, x)
    if len(pair) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) for v in pair):
        raise TypeError(f"{name} must be an int or a (height, width) pair of ints, got {x!r}")
    if min(pair) <= 0:
        raise ValueError(f"{name} must be positive, got {x!r}")
    return pair


class PatchEmbedding(nn.Module):
    """Cut an image into patches and map each patch linearly to ``num_hiddens`` features (D2L 11.8.2).

    ``PatchEmbedding(img_size=96, patch_size=16, num_hiddens=512)``: sizes are an
    int (square) or an (h, w) pair, and each side of the image must be a multiple
    of the patch's. A Conv2d whose kernel and stride both equal the patch size
    applies the same linear map to every non-overlapping patch (computed as that
    matrix product over the cut-out patches once the weights exist). As in D2L the
    number of input channels is inferred on the first call, unless the keyword
    ``in_channels`` is given. Images (B, C, S, S) -> patch features (B, P, N),
    patches in row-major order (left to right, then top to bottom).
    """

    def __init__(self, img_size=96, patch_size=16, num_hiddens: int = 512, *, in_channels: int | None = None):
        super().__init__()
        self.img_size = _pair(img_size, "img_size")
        self.patch_size = _pair(patch_size, "patch_size")
        (H, W), (ph, pw) = self.img_size, self.patch_size
        if H % ph or W % pw:
            raise ValueError(
                f"the image size {self.img_size} must be a multiple of the patch size {self.patch_size} "
                "on each side; resize the images or pick a patch size that divides them"
            )
        self.grid_size = (H // ph, W // pw)
        self.num_patches = self.grid_size[0] * self.grid_size[1]
        if in_channels is None:
            self.conv = nn.LazyConv2d(num_hiddens, kernel_size=self.patch_size, stride=self.patch_size)
        else:
            self.conv = nn.Conv2d(in_channels, num_hiddens, kernel_size=self.patch_size, stride=self.patch_size)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        if X.dim() != 4:
            raise ValueError(f"PatchEmbedding expects images of shape (B, C, height, width), got {tuple(X.shape)}")
        if tuple(X.shape[-2:]) != self.img_size:
            raise ValueError(
                f"PatchEmbedding was built for images of size {self.img_size}, got {tuple(X.shape[-2:])}; "
                "resize the images (the data loader's `resize`) or build the model for this size"
            )
        lazy = isinstance(self.conv.weight, nn.parameter.UninitializedParameter)
        if not lazy and X.shape[1] != self.conv.in_channels:
            raise ValueError(f"PatchEmbedding was built for {self.conv.in_channels} input channels, got {X.shape[1]}")
        if lazy:  # the first call lets the convolution learn the number of channels
            X = self.conv(X)  # (B, C, S, S) -> (B, N, S / p, S / p)
            return X.flatten(2).transpose(1, 2)  # (B, N, S / p, S / p) -> (B, N, P) -> (B, P, N)
        # The convolution's own map, as one matrix product over the cut-out patches: the same numbers (up to
        # rounding), but PyTorch's CPU convolution backward is about 4x slower for a stride equal to the kernel,
        # a tenth of a training step of our small ViT.
        (B, C), (ph, pw), (gh, gw) = X.shape[:2], self.patch_size, self.grid_size
        X = X.reshape(B, C, gh, ph, gw, pw)  # (B, C, S, S) -> (B, C, S / p, p, S / p, p)
        X = X.permute(0, 2, 4, 1, 3, 5).reshape(B, gh * gw, C * ph * pw)  # -> (B, P, C p p), row-major patches
        W = self.conv.weight.reshape(self.conv.out_channels, -1)  # (N, C, p, p) -> (N, C p p)
        return F.linear(X, W, self.conv.bias)  # (B, P, C p p) @ (C p p, N) -> (B, P, N)


class ViTMLP(nn.Module):
    """The two-layer MLP of a ViT block: dense, GELU, dropout, dense, dropout (D2L 11.8.3).

    ``ViTMLP(mlp_num_hiddens, mlp_num_outputs, dropout=0.5)`` maps (B, T, N) to
    (B, T, mlp_num_outputs). GELU is a smooth ReLU; the Transformer FFN of 11.7
    uses ReLU and no dropout inside. The input size is inferred on the first call
    unless the keyword ``in_features`` is given.
    """

    def __init__(self, mlp_num_hiddens: int, mlp_num_outputs: int, dropout: float = 0.5, *, in_features=None):
        super().__init__()
        self.dense1 = nn.LazyLinear(mlp_num_hiddens) if in_features is None else nn.Linear(in_features, mlp_num_hiddens)
        self.gelu = nn.GELU()
        self.dropout1 = nn.Dropout(dropout)
        self.dense2 = nn.Linear(mlp_num_hiddens, mlp_num_outputs)
        self.dropout2 = nn.Dropout(dropout)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        H = self.dropout1(self.gelu(self.dense1(X)))  # (B, T, N) -> (B, T, mlp_num_hiddens)
        return self.dropout2(self.dense2(H))  # (B, T, mlp_num_hiddens) -> (B, T, mlp_num_outputs)


class ViTBlock(nn.Module):
    """A pre-norm Transformer encoder block, as the ViT uses (D2L 11.8.3).

    ``ViTBlock(num_hiddens, norm_shape, mlp_num_hiddens, num_heads, dropout, use_bias=False)``.
    Layer normalisation comes *before* each sub-layer, inside the residual branch:

        X = X + MultiHeadAttention(LN1(X))        (self-attention)
        X = X + ViTMLP(LN2(X))

    so the residual path from input to output passes through no normalisation.
    ``forward(X, valid_lens=None)``: (B, T, N) -> (B, T, N); ``valid_lens`` is
    passed to the attention (lengths or a boolean mask, see :mod:`qkv.attention`).
    """

    def __init__(
        self, num_hiddens: int, norm_shape, mlp_num_hiddens: int, num_heads: int, dropout: float, use_bias: bool = False
    ):
        super().__init__()
        self.ln1 = nn.LayerNorm(norm_shape)
        self.attention = MultiHeadAttention(
            num_hiddens,
            num_heads,
            dropout,
            use_bias,
            query_size=num_hiddens,
            key_size=num_hiddens,
            value_size=num_hiddens,
        )
        self.ln2 = nn.LayerNorm(norm_shape)
        self.mlp = ViTMLP(mlp_num_hiddens, num_hiddens, dropout, in_features=num_hiddens)

    def forward(self, X: torch.Tensor, valid_lens=None) -> torch.Tensor:
        Y = self.ln1(X)
        X = X + self.attention(Y, Y, Y, valid_lens)  # (B, T, N)
        return X + self.mlp(self.ln2(X))  # (B, T, N)

    def forward_first(self, X: torch.Tensor) -> torch.Tensor:
        """``self(X)[:, :1]``, computed for the first position only (our addition to D2L 11.8.3).

        Position 0 still attends to every position, so its keys and values are computed for all of them; its query,
        the attention's output projection, the second layer norm and the MLP are computed for position 0 alone.
        (B, T, N) -> (B, 1, N). The last block of a classifier that reads only ``<cls>`` needs nothing more.
        """
        Y = self.ln1(X)  # (B, T, N)
        X = X[:, :1] + self.attention(Y[:, :1], Y, Y)  # (B, 1, N): one query against T keys and values
        return X + self.mlp(self.ln2(X))  # (B, 1, N)


class ViT(nn.Module):
    """The Vision Transformer classifier (D2L 11.8.4).

    ``ViT(img_size, patch_size, num_hiddens, mlp_num_hiddens, num_heads, num_blks,
    emb_dropout, blk_dropout, lr=0.1, use_bias=False, num_classes=10)``.
    Images (B, C, S, S) -> patches (B, P, N); a learnable ``<cls>`` token is put
    first, giving P + 1 positions; a learnable positional embedding (one row per
    position) is added, then dropout ``emb_dropout``; ``num_blks`` :class:`ViTBlock`
    follow; the head (LayerNorm, then Linear) reads the ``<cls>`` position only
    and returns logits (B, num_classes). ``in_channels`` (keyword) builds the patch
    embedding eagerly; without it the channels are inferred on the first call.
    """

    def __init__(
        self,
        img_size,
        patch_size,
        num_hiddens: int,
        mlp_num_hiddens: int,
        num_heads: int,
        num_blks: int,
        emb_dropout: float,
        blk_dropout: float,
        lr: float = 0.1,
        use_bias: bool = False,
        num_classes: int = 10,
        *,
        in_channels: int | None = None,
    ):
        super().__init__()
        if num_blks < 1:
            raise ValueError(f"num_blks must be at least 1, got {num_blks}")
        self.lr = lr
        self.patch_embedding = PatchEmbedding(img_size, patch_size, num_hiddens, in_channels=in_channels)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, num_hiddens))  # (1, 1, N)
        num_steps = self.patch_embedding.num_patches + 1  # the patches and <cls>
        self.pos_embedding = nn.Parameter(torch.randn(1, num_steps, num_hiddens))  # (1, P + 1, N), D2L's start: std 1
        self.dropout = nn.Dropout(emb_dropout)
        self.blks = nn.Sequential(
            *(
                ViTBlock(num_hiddens, num_hiddens, mlp_num_hiddens, num_heads, blk_dropout, use_bias)
                for _ in range(num_blks)
            )
        )
        self.head = nn.Sequential(nn.LayerNorm(num_hiddens), nn.Linear(num_hiddens, num_classes))

    @classmethod
    def from_config(cls, config: ViTConfig) -> ViT:
        """Build a ViT from a :class:`ViTConfig` (D2L 11.8.4)."""
        fields = asdict(config)
        in_channels = fields.pop("in_channels")
        return cls(**fields, in_channels=in_channels)

    def embed(self, X: torch.Tensor) -> torch.Tensor:
        """The blocks' input: ``<cls>`` and the patch features, plus positions (D2L 11.8.4).

        (B, C, S, S) -> (B, P + 1, N)."""
        X = self.patch_embedding(X)  # (B, C, S, S) -> (B, P, N)
        cls = self.cls_token.expand(X.shape[0], -1, -1)  # (1, 1, N) -> (B, 1, N)
        X = torch.cat((cls, X), dim=1)  # (B, 1, N) ++ (B, P, N) -> (B, P + 1, N)
        return self.dropout(X + self.pos_embedding)  # (B, P + 1, N) + (1, P + 1, N)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        X = self.embed(X)  # (B, C, S, S) -> (B, P + 1, N)
        for blk in self.blks:
            X = blk(X)  # (B, P + 1, N)
        return self.head(X[:, 0])  # (B, N) -> (B, num_classes)

    def forward_cls_only(self, X: torch.Tensor) -> torch.Tensor:
        """The logits of ``self(X)``, with the last block computed at ``<cls>`` only (our addition to D2L 11.8.4).

        The head reads position 0 alone, so the last block's outputs at the P patch positions are computed and
        thrown away; :meth:`ViTBlock.forward_first` skips them. The logits (and so the gradients) are those of
        :meth:`forward` up to rounding; a raw training step of :data:`CPU_RECIPE` takes about a fifth less time, and
        its 12 epochs about 13% less (``benchmarks/results/vit_cpu.md``, session 8).
        :class:`RecipeTrainer` uses it for models whose ``forward`` is this class's. (B, C, S, S) -> (B, num_classes).
        """
        X = self.embed(X)  # (B, C, S, S) -> (B, P + 1, N)
        for blk in self.blks[:-1]:
            X = blk(X)  # (B, P + 1, N)
        return self.head(self.blks[-1].forward_first(X)[:, 0])  # (B, 1, N) -> (B, num_classes)

    def loss(self, Y_hat: torch.Tensor, Y: torch.Tensor, averaged: bool = True) -> torch.Tensor:
        """Cross-entropy of logits (B, num_classes) against labels (B,), as D2L's classifiers (D2L 4.5, 11.8.5)."""
        return F.cross_entropy(Y_hat, Y, reduction="mean" if averaged else "none")

    def accuracy(self, Y_hat: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        """Fraction of the batch whose most likely class is the label (D2L 4.3)."""
        return (Y_hat.argmax(dim=-1) == Y).float().mean()

    def configure_optimizers(self) -> torch.optim.Optimizer:
        """Minibatch SGD with learning rate ``lr`` and nothing else, as D2L trains the ViT (D2L 11.8.5)."""
        return torch.optim.SGD(self.parameters(), lr=self.lr)


@dataclass
class ViTConfig:
    """Hyper-parameters of a :class:`ViT` (D2L 11.8.5).

    The defaults are D2L's: Fashion-MNIST resized to 96 x 96, 16 x 16 patches
    (36 of them), width 512, MLP width 2048, 8 heads, 2 blocks, dropout 0.1,
    SGD with learning rate 0.1. ``in_channels=1`` (grayscale) is ours: it lets
    the model be built eagerly. :meth:`fashion_mnist_small` is our smaller preset.
    ``ViT.from_config(config)`` builds the model.
    """

    img_size: int | tuple[int, int] = 96
    patch_size: int | tuple[int, int] = 16
    num_hiddens: int = 512
    mlp_num_hiddens: int = 2048
    num_heads: int = 8
    num_blks: int = 2
    emb_dropout: float = 0.1
    blk_dropout: float = 0.1
    lr: float = 0.1
    use_bias: bool = False
    num_classes: int = 10
    in_channels: int = 1

    @classmethod
    def fashion_mnist_small(cls) -> ViTConfig:
        """Our CPU-friendly preset (not D2L's): Fashion-MNIST at its own 28 x 28 size.

        7 x 7 patches (16 of them, 17 positions with ``<cls>``), width 64, MLP
        width 128, 4 heads, 3 blocks, no dropout (a short run underfits rather
        than overfits), SGD with learning rate 0.3 and batches of 128. In our
        trial (one seed) one epoch took about 17 s of CPU time on one thread and
        the test accuracy reached 0.86 to 0.87 after 6 to 8 epochs.
        """
        return cls(
            img_size=28,
            patch_size=7,
            num_hiddens=64,
            mlp_num_hiddens=128,
            num_heads=4,
            num_blks=3,
            emb_dropout=0.0,
            blk_dropout=0.0,
            lr=0.3,
        )


# ---------------------------------------------------------------------------
# Training on a CPU: our recipe (D2L 11.8.5 trains with plain SGD on a GPU).
# ---------------------------------------------------------------------------


@dataclass
class ViTRecipe:
    """How we train a ViT (or the CNN baseline) on Fashion-MNIST in about two CPU minutes (D2L 11.8.5).

    The model fields are those of :class:`ViTConfig`; the rest is the training:
    ``epochs`` passes over the 60,000 training images in batches of ``batch_size``;
    AdamW with peak learning rate ``lr`` and weight decay ``weight_decay`` (on
    matrices only, not on biases, norms, ``<cls>`` or positions); the learning rate
    rises linearly from 0 over the first ``warmup`` fraction of the steps, then
    falls to 0 along a half cosine; the loss is cross-entropy with label smoothing
    ``label_smoothing``; every training image is shifted by up to ``shift`` pixels
    in each direction (zeros fill in) and mirrored left-right with probability
    ``flip``. ``pos_init`` is where the learned positions start: ``"sincos"``
    (:func:`sincos_positions_2d`, ``<cls>`` at 0) or ``"normal"`` (truncated normal,
    standard deviation 0.02, timm's start); both are ours, where D2L's :class:`ViT` starts them at ``torch.randn``
    (standard deviation 1). ``model="cnn"`` trains :class:`SmallCNN` with the same recipe.
    """

    model: str = "vit"
    img_size: int = 28
    patch_size: int = 7
    num_hiddens: int = 64
    mlp_num_hiddens: int = 128
    num_heads: int = 4
    num_blks: int = 2
    emb_dropout: float = 0.0
    blk_dropout: float = 0.0
    use_bias: bool = False
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
        if self.model not in ("vit", "cnn"):
            raise ValueError(f"model must be 'vit' or 'cnn', got {self.model!r}")
        if self.pos_init not in ("sincos", "normal"):
            raise ValueError(f"pos_init must be 'sincos' or 'normal', got {self.pos_init!r}")
        if self.model == "vit" and self.pos_init == "sincos" and self.num_hiddens % 4:
            raise ValueError(
                f"pos_init='sincos' needs num_hiddens divisible by 4 (a sine and a cosine for the row and for the "
                f"column), got {self.num_hiddens}; pick another width or pos_init='normal'"
            )
        if not 0 <= self.warmup < 1:
            raise ValueError(f"warmup is a fraction of the steps in [0, 1), got {self.warmup!r}")
        if not 0 <= self.flip <= 1:
            raise ValueError(f"flip is a probability in [0, 1], got {self.flip!r}")
        if self.shift < 0:
            raise ValueError(f"shift is a number of pixels >= 0, got {self.shift!r}")

    def vit_config(self) -> ViTConfig:
        """The model part, as a :class:`ViTConfig` (grayscale input)."""
        return ViTConfig(
            img_size=self.img_size,
            patch_size=self.patch_size,
            num_hiddens=self.num_hiddens,
            mlp_num_hiddens=self.mlp_num_hiddens,
            num_heads=self.num_heads,
            num_blks=self.num_blks,
            emb_dropout=self.emb_dropout,
            blk_dropout=self.blk_dropout,
            lr=self.lr,
            use_bias=self.use_bias,
        )

    def build(self) -> nn.Module:
        """The untrained model (seed torch first for repeatable weights)."""
        if self.model == "cnn":
            return SmallCNN()
        model = ViT.from_config(self.vit_config())
        with torch.no_grad():
            if self.pos_init == "sincos":  # still learned: only the starting values change
                model.pos_embedding.zero_()  # <cls> (row 0) starts at 0
                grid = model.patch_embedding.grid_size
                model.pos_embedding[0, 1:] = sincos_positions_2d(*grid, self.num_hiddens)  # (P, N)
            else:
                nn.init.trunc_normal_(model.pos_embedding, std=0.02)  # ours (timm's); D2L's is randn, std 1
        return model


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

    def forward(self, X: torch.Tensor) -> torch.Tensor:
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
    a half cosine down to 0 at ``total``."""
    n_warm = max(1, round(warmup * total))
    if step < n_warm:
        return (step + 1) / n_warm
    progress = (step - n_warm) / max(1, total - n_warm)
    return 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))


class RecipeTrainer(Trainer):
    """A :class:`qkv.training.Trainer` that follows a :class:`ViTRecipe` (D2L 11.8.5, our recipe).

    Beyond the base trainer's history it records, per epoch, ``val_acc`` (accuracy on the validation data),
    ``train_seconds`` (wall time spent training so far, evaluation excluded) and ``cpu_seconds`` (the process's
    CPU time spent training so far, evaluation excluded: all threads together, so it depends less on how busy
    the machine is). AdamW runs fused (one kernel for all parameters), which on two CPU cores saves about a tenth
    of a training step against PyTorch's per-parameter default, and a :class:`ViT` runs by
    :meth:`ViT.forward_cls_only` (the same logits, about 13% less time a run; see :meth:`logits`).
    """

    def __init__(self, recipe: ViTRecipe, *, seed: int, device="cpu", progress: bool = False):
        super().__init__(recipe.epochs, device=device, seed=seed, optimizer="adam", lr=recipe.lr, progress=progress)
        self.recipe = recipe
        self._cpu = self._wall = 0.0

    def configure_optimizer(self, model: nn.Module) -> torch.optim.Optimizer:
        r = self.recipe
        fused = next(model.parameters()).dtype in (torch.float32, torch.float64)  # fused supports these on the CPU
        optim = torch.optim.AdamW(_decay_groups(model, r.weight_decay), lr=r.lr, betas=(0.9, 0.999), fused=fused)
        total = self.max_epochs * len(self._train_loader)  # the schedule's steps (fewer in a smoke run)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(optim, lambda s: warmup_cosine(s, total, r.warmup))
        return optim

    @staticmethod
    def logits(model: nn.Module, X: torch.Tensor) -> torch.Tensor:
        """``model(X)``; for a :class:`ViT` whose ``forward`` and last block's ``forward`` are ours, the same logits
        by :meth:`ViT.forward_cls_only`, which skips the last block's unread patch positions. A subclass that
        overrides either (mean pooling, say) is called as it is."""
        ours = isinstance(model, ViT) and type(model).forward is ViT.forward
        if ours and type(model.blks[-1]).forward is ViTBlock.forward:  # and so is its last block's
            return model.forward_cls_only(X)  # (B, C, S, S) -> (B, num_classes)
        return model(X)  # (B, C, S, S) -> (B, num_classes)

    def compute_loss(self, model: nn.Module, batch) -> torch.Tensor:
        X, Y = batch
        if model.training:
            X = augment(X, self.recipe.shift, self.recipe.flip)
            return F.cross_entropy(self.logits(model, X), Y, label_smoothing=self.recipe.label_smoothing)
        return F.cross_entropy(self.logits(model, X), Y)

    def fit_epoch(self, model: nn.Module, loader) -> float:
        model.train()
        start, wall = time.process_time(), time.perf_counter()
        total, count = 0.0, 0
        for batch in loader:
            batch = self.prepare_batch(batch)
            loss = self.compute_loss(model, batch)
            self.optim.zero_grad()
            loss.backward()
            self.optim.step()
            self.scheduler.step()
            n = batch[-1].shape[0]
            total += float(loss.detach()) * n
            count += n
        self._cpu += time.process_time() - start
        self._wall += time.perf_counter() - wall
        self.history.setdefault("cpu_seconds", []).append(self._cpu)
        self.history.setdefault("train_seconds", []).append(self._wall)
        return total / count

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

    def fit(self, model: nn.Module, data) -> dict[str, list]:
        self._train_loader = data.train_dataloader()
        self._cpu = self._wall = 0.0
        return super().fit(model, data)  # the epoch hooks above add to the history fit() makes


#: Our ViT recipe for two CPU cores (see ``benchmarks/results/vit_cpu.md`` for the runs that chose it): 7 x 7
#: patches of the 28-pixel images, width 64, 2 blocks, learned positions that start at a 2-D sine-cosine encoding,
#: AdamW at 0.004 with warm-up and cosine decay, label smoothing 0.1, no augmentation, batches of 128, 12 epochs,
#: and the last block computed at <cls> only (ViT.forward_cls_only): 107 to 117 s of training on two idle cores in
#: two runs, 214 to 229 CPU seconds; test accuracy 0.8911 over three seeds (0.8897 to 0.8923).
CPU_RECIPE = ViTRecipe()
#: The CNN baseline: the same recipe with a larger learning rate (its batch norms allow it; 0.002 gave 0.880 and
#: 0.005 gave 0.895 after 4 epochs in our tuning runs) and 6 epochs, which take about the ViT's time (101 to 125 s
#: on two idle cores in two runs; test accuracy 0.9018 over three seeds).
CNN_RECIPE = ViTRecipe(model="cnn", epochs=6, lr=5e-3)


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


def train_fashion_mnist(recipe: ViTRecipe | None = None, *, seed: int = 0, data=None, log=print, progress=False):
    """Train a model on Fashion-MNIST with ``recipe`` (default :data:`CPU_RECIPE`), or load the weights of an
    identical earlier run (D2L 11.8.5, our recipe).

    ``data`` defaults to ``FashionMNIST(recipe.batch_size, resize=recipe.img_size)`` (all 60,000 training images;
    the 10,000 test images validate). The model is built after ``torch.manual_seed(seed)`` and trained by a
    :class:`RecipeTrainer` on the CPU; :func:`qkv.trained.fit_or_load` caches the weights. Returns ``(fitted,
    data)``: ``fitted.history`` has per epoch ``val_acc`` (test accuracy), ``cpu_seconds`` (training CPU time)
    and the base trainer's losses and wall ``seconds``.
    """
    from qkv.data import FashionMNIST
    from qkv.trained import fit_or_load

    recipe = CPU_RECIPE if recipe is None else recipe
    data = FashionMNIST(recipe.batch_size, resize=recipe.img_size) if data is None else data
    trainer = RecipeTrainer(recipe, seed=seed, device="cpu", progress=progress)
    name = f"{recipe.model}-fashion-mnist"
    return fit_or_load(name, recipe.build, data, trainer, config=recipe, log=log), data


def train_cnn(*, seed: int = 0, data=None, log=print):
    """The CNN baseline (:data:`CNN_RECIPE`) trained or loaded as :func:`train_fashion_mnist` does (D2L 11.8)."""
    return train_fashion_mnist(CNN_RECIPE, seed=seed, data=data, log=log)
