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

from dataclasses import asdict, dataclass

import torch
from torch import nn
from torch.nn import functional as F

from qkv.multihead import MultiHeadAttention

__all__ = ["PatchEmbedding", "ViTMLP", "ViTBlock", "ViT", "ViTConfig"]


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
        # rounding), and on a CPU a faster backward than the convolution's for a stride equal to the kernel.
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
        than overfits), SGD with learning rate 0.3 and batches of 128.
        :mod:`qkv.recipes.vit` has the recipe the course trains with.
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
