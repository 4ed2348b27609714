"""Answers to the stubs of book/vision-transformer.md (D2L 11.8), by grade_id = function or class name.

The bodies are pasted into the notebook by the assembler, so they use only the notebook's names: ``torch``, ``nn``,
``MultiHeadAttention`` (from ``qkv.multihead``) and ``ref`` (the course's ``qkv.vit``). Downstream answers build on
``ref.PatchEmbedding``, ``ref.ViTMLP``, ``ref.ViTBlock`` and ``ref.ViT``, as their stubs ask, never on the student's
earlier exercises.
"""

import torch
from torch import nn

from qkv import vit as ref
from qkv.multihead import MultiHeadAttention

__all__ = ["num_patches", "PatchEmbedding", "ViTMLP", "ViTBlock", "ViT", "MeanPoolViT"]


def num_patches(img_size, patch_size):
    sizes = []
    for name, value in (("img_size", img_size), ("patch_size", patch_size)):
        pair = tuple(value) if isinstance(value, (tuple, list)) else (value, value)
        if len(pair) != 2 or not all(isinstance(v, int) and v > 0 for v in pair):
            raise ValueError(f"{name} must be a positive int or a (height, width) pair of them, got {value!r}")
        sizes.append(pair)
    (h, w), (ph, pw) = sizes
    if h % ph or w % pw:
        raise ValueError(f"the image size {(h, w)} is not a multiple of the patch size {(ph, pw)} on each side")
    return (h // ph) * (w // pw)


class PatchEmbedding(nn.Module):
    def __init__(self, img_size, patch_size, num_hiddens, in_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, num_hiddens, kernel_size=patch_size, stride=patch_size)
        (h, w), (ph, pw) = nn.modules.utils._pair(img_size), nn.modules.utils._pair(patch_size)
        self.num_patches = (h // ph) * (w // pw)

    def forward(self, X):
        Y = self.conv(X)  # (B, C, H, W) -> (B, N, H / p, W / p)
        return Y.flatten(2).transpose(1, 2)  # (B, N, H / p, W / p) -> (B, N, P) -> (B, P, N)


class ViTMLP(nn.Module):
    def __init__(self, mlp_num_hiddens, mlp_num_outputs, dropout=0.5):
        super().__init__()
        self.dense1 = nn.LazyLinear(mlp_num_hiddens)
        self.gelu = nn.GELU()
        self.dropout1 = nn.Dropout(dropout)
        self.dense2 = nn.LazyLinear(mlp_num_outputs)
        self.dropout2 = nn.Dropout(dropout)

    def forward(self, X):
        H = self.dropout1(self.gelu(self.dense1(X)))  # (B, T, N) -> (B, T, M)
        return self.dropout2(self.dense2(H))  # (B, T, M) -> (B, T, mlp_num_outputs)


class ViTBlock(nn.Module):
    def __init__(self, num_hiddens, norm_shape, mlp_num_hiddens, num_heads, dropout, use_bias=False):
        super().__init__()
        N = num_hiddens
        self.ln1 = nn.LayerNorm(norm_shape)
        self.attention = MultiHeadAttention(N, num_heads, dropout, use_bias, query_size=N, key_size=N, value_size=N)
        self.ln2 = nn.LayerNorm(norm_shape)
        self.mlp = ref.ViTMLP(mlp_num_hiddens, N, dropout, in_features=N)

    def forward(self, X, valid_lens=None):
        Y = self.ln1(X)  # (B, T, N)
        X = X + self.attention(Y, Y, Y, valid_lens)  # (B, T, N)
        return X + self.mlp(self.ln2(X))  # (B, T, N)


class ViT(nn.Module):
    def __init__(
        self,
        img_size,
        patch_size,
        num_hiddens,
        mlp_num_hiddens,
        num_heads,
        num_blks,
        emb_dropout,
        blk_dropout,
        use_bias=False,
        num_classes=10,
        in_channels=1,
    ):
        super().__init__()
        N = num_hiddens
        self.patch_embedding = ref.PatchEmbedding(img_size, patch_size, N, in_channels=in_channels)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, N))  # (1, 1, N)
        num_steps = self.patch_embedding.num_patches + 1  # the patches and <cls>
        self.pos_embedding = nn.Parameter(torch.randn(1, num_steps, N))  # (1, P + 1, N), as D2L and ref.ViT
        self.dropout = nn.Dropout(emb_dropout)
        self.blks = nn.Sequential(
            *(ref.ViTBlock(N, N, mlp_num_hiddens, num_heads, blk_dropout, use_bias) for _ in range(num_blks))
        )
        self.head = nn.Sequential(nn.LayerNorm(N), nn.Linear(N, num_classes))

    def forward(self, X):
        X = self.patch_embedding(X)  # (B, C, H, W) -> (B, P, N)
        cls = self.cls_token.expand(X.shape[0], -1, -1)  # (1, 1, N) -> (B, 1, N)
        X = torch.cat((cls, X), dim=1)  # (B, 1, N) ++ (B, P, N) -> (B, P + 1, N)
        X = self.dropout(X + self.pos_embedding)  # (B, P + 1, N) + (1, P + 1, N)
        X = self.blks(X)  # (B, P + 1, N)
        return self.head(X[:, 0])  # (B, N) -> (B, num_classes)


class MeanPoolViT(ref.ViT):
    def forward(self, X):
        X = self.patch_embedding(X)  # (B, C, H, W) -> (B, P, N)
        X = self.dropout(X + self.pos_embedding[:, 1:])  # (B, P, N) + (1, P, N): the patches' own positions
        X = self.blks(X)  # (B, P, N)
        return self.head(X.mean(dim=1))  # (B, P, N) -> (B, N) -> (B, num_classes)
