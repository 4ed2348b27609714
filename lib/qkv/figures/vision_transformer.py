"""The figures of D2L 11.8, Transformers for Vision; ``glance()`` opens the section.

``glance()`` draws the ViT's pipeline on a Fashion-MNIST image (patches, their linear map, ``<cls>`` and positions,
the encoder, the head); :func:`draw_patches` cuts an image into a grid of patches on an axes;
:func:`accuracy_against_time` plots test accuracy against training time for several trained models (the ViT and
the CNN of the inductive-bias comparison).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.patches import FancyArrowPatch, Rectangle

from qkv.plotting import use_svg_display

__all__ = ["sample_image", "draw_patches", "glance", "accuracy_against_time"]


def sample_image(index: int = 0) -> torch.Tensor:
    """Test image ``index`` of Fashion-MNIST as a (28, 28) float tensor in [0, 1] (an ankle boot for 0)."""
    from qkv.data.fashion_mnist import FashionMNIST

    data = FashionMNIST(batch_size=1, num_train=0, num_val=index + 1)
    return data.val[index][0][0]  # (1, 28, 28) -> (28, 28)


def draw_patches(ax, image, patch_size: int, numbers: bool = True) -> int:
    """Show ``image`` (S, S) on ``ax`` with the grid of ``patch_size`` patches over it, numbered in the order the
    patch embedding reads them (row by row); returns the number of patches."""
    image = np.asarray(image)
    S = image.shape[0]
    if S % patch_size:
        raise ValueError(f"the patch size {patch_size} must divide the image size {S}")
    g = S // patch_size
    ax.imshow(image, cmap="Greys", extent=(0, S, S, 0))
    for k in range(1, g):
        ax.axhline(k * patch_size, color="C0", lw=0.8)
        ax.axvline(k * patch_size, color="C0", lw=0.8)
    if numbers and g <= 8:
        for i in range(g):
            for j in range(g):
                ax.text((j + 0.5) * patch_size, (i + 0.5) * patch_size, str(i * g + j + 1), color="C3",
                        ha="center", va="center", fontsize=7)  # fmt: skip
    ax.set_xticks([])
    ax.set_yticks([])
    return g * g


def _box(ax, x, y, w, h, text, color, fontsize=8):
    ax.add_patch(Rectangle((x, y), w, h, facecolor=color, edgecolor="0.3", lw=0.8))
    ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=fontsize)


def _arrow(ax, a, b):
    ax.add_patch(FancyArrowPatch(a, b, arrowstyle="->", mutation_scale=9, color="0.3", lw=0.8))


def glance(image=None, patch_size: int = 7):
    """D2L 11.8 at a glance: an image cut into patches, each patch mapped linearly to a token, ``<cls>`` put in
    front, positions added, a stack of pre-norm encoder blocks, and the head reading ``<cls>``."""
    use_svg_display()
    image = sample_image() if image is None else image
    fig = plt.figure(figsize=(8.6, 3.0))
    ax_img = fig.add_axes((0.0, 0.12, 0.24, 0.76))
    P = draw_patches(ax_img, image, patch_size)
    ax_img.set_title(f"{P} patches of {patch_size} x {patch_size}", fontsize=9)
    ax = fig.add_axes((0.26, 0.0, 0.74, 1.0))
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 4)
    ax.axis("off")
    # tokens: <cls> then the patches, each with its position
    ax.text(0.1, 3.55, "flatten each patch,\nlinear map (one conv)", fontsize=8, va="center")
    shown = [0, 1, 2, None, P]
    for k, i in enumerate(shown):
        x = 0.2 + 0.62 * k
        if i is None:
            ax.text(x + 0.26, 1.6, "...", ha="center", va="center")
            continue
        _box(ax, x, 1.2, 0.52, 0.8, "<cls>" if i == 0 else str(i), "#f4d35e" if i == 0 else "#9ecae1", 7)
        ax.text(x + 0.26, 0.85, f"+p{i}", ha="center", va="center", fontsize=7, color="C3")
    ax.text(1.45, 0.35, "learned positions, one per token", ha="center", fontsize=8, color="C3")
    _arrow(ax, (3.35, 1.6), (3.9, 1.6))
    _box(ax, 3.95, 0.7, 2.7, 1.8, "", "#eeeeee")
    ax.text(5.3, 2.75, "n x encoder block (pre-norm)", ha="center", fontsize=8)
    _box(ax, 4.1, 0.85, 1.15, 0.6, "LN, multi-head\nself-attention", "#c7e9c0", 6.5)
    _box(ax, 5.4, 0.85, 1.1, 0.6, "LN, MLP\n(GELU)", "#fdd0a2", 6.5)
    ax.text(5.3, 1.95, "x + f(LN(x)), twice", ha="center", fontsize=7)
    _arrow(ax, (6.7, 1.6), (7.25, 1.6))
    _box(ax, 7.3, 1.2, 1.05, 0.8, "<cls>\noutput", "#f4d35e", 7)
    _arrow(ax, (8.4, 1.6), (8.75, 1.6))
    _box(ax, 8.8, 1.2, 1.1, 0.8, "LN, linear:\n10 classes", "#dadaeb", 7)
    return fig


def accuracy_against_time(runs: dict, d2l: float | tuple[float, float] | None = None, ax=None, clock: str = "wall"):
    """Test accuracy after each epoch against the training time, one curve per run.

    ``runs`` maps a label to a history with ``val_acc`` and, per epoch, ``train_seconds`` (wall seconds of training,
    evaluation excluded; ``clock="wall"``) or ``cpu_seconds`` (the process's CPU seconds; ``clock="cpu"``), as
    :func:`qkv.recipes.vit.train_fashion_mnist` records them; ``d2l``, an accuracy or an (accuracy, seconds) pair,
    adds D2L's result as a horizontal line. Returns the axes.
    """
    keys = {"wall": "train_seconds", "cpu": "cpu_seconds"}
    if clock not in keys:
        raise ValueError(f"clock must be 'wall' or 'cpu', got {clock!r}")
    key = keys[clock]
    use_svg_display()
    if ax is None:
        _, ax = plt.subplots(figsize=(5.6, 3.4))
    for k, (label, history) in enumerate(runs.items()):
        seconds, acc = history.get(key, []), history["val_acc"]
        if len(seconds) != len(acc) or not acc:
            raise ValueError(f"{label}: need one {key} per val_acc, got {len(seconds)} and {len(acc)}")
        ax.plot(seconds, acc, "o-", color=f"C{k}", label=label)
    if d2l is not None:
        acc, seconds = (d2l, None) if isinstance(d2l, int | float) else d2l
        when = "on a GPU" if seconds is None else f"after {seconds:.0f} s on a GPU"
        ax.axhline(acc, color="0.5", ls="--", label=f"D2L's ViT: {acc:.2f} {when}")
    ax.set_xlabel(
        "training time (wall seconds, evaluation excluded)"
        if clock == "wall"
        else "training time (CPU seconds, all threads together)"
    )
    ax.set_ylabel("test accuracy")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    return ax
