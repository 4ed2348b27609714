"""Interactive explorer of D2L 11.8, "Transformers for Vision" (``book/vision-transformer.md``): how the patch size
sets the length of the sequence a ViT reads, and what its attention costs, with sliders for the image size and the
patch size.

:func:`patch_explorer` returns the controls in Jupyter and the static :func:`patch_grid` in the book (see
:mod:`qkv.widgets`). The numbers come from :func:`patch_costs`.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import torch
from torch.nn import functional as F

from qkv._validate import positive_int
from qkv.plotting import use_svg_display
from qkv.widgets import ipywidgets_or_none, static_figure

__all__ = ["IMAGE_SIZES", "patch_costs", "patch_grid", "patch_explorer"]

#: The image sides on the explorer's slider: Fashion-MNIST's 28 and its multiples up to D2L's 96 and ViT's 224.
IMAGE_SIZES = (28, 56, 84, 96, 112, 224)


def patch_costs(img_size: int, patch_size: int, num_hiddens: int = 64, num_heads: int = 4) -> dict:
    """What one encoder block of a ViT pays for an ``img_size`` x ``img_size`` image cut into ``patch_size`` patches
    (D2L 11.8, beyond D2L): the number of patches P = (S / p)^2, the sequence length T = P + 1 (with ``<cls>``),
    the attention scores per image (H T^2), and the multiply-adds of the attention's two products (2 T^2 N) beside
    those of its four projections (4 T N^2)."""
    S = positive_int(img_size, "img_size")
    p = positive_int(patch_size, "patch_size")
    N = positive_int(num_hiddens, "num_hiddens")
    H = positive_int(num_heads, "num_heads")
    if S % p:
        raise ValueError(f"the patch size {p} must divide the image size {S}; pick a divisor of {S}")
    P = (S // p) ** 2
    T = P + 1
    return {
        "patches": P,
        "tokens": T,
        "scores": H * T * T,
        "attention_macs": 2 * T * T * N,
        "projection_macs": 4 * T * N * N,
    }


def _divisors(n: int) -> list[int]:
    return [d for d in range(2, n + 1) if n % d == 0]


def _resized(image: torch.Tensor, S: int) -> torch.Tensor:
    X = image[None, None].float()  # (S0, S0) -> (1, 1, S0, S0)
    return F.interpolate(X, size=(S, S), mode="bilinear", align_corners=False)[0, 0]  # (S, S)


def _draw(ax, image, img_size: int, patch_size: int) -> None:
    from qkv.figures.vision_transformer import draw_patches

    c = patch_costs(img_size, patch_size)
    draw_patches(ax, _resized(image, img_size), patch_size, numbers=c["patches"] <= 64)
    ax.set_title(
        f"{img_size} px, patch {patch_size}\nP = {c['patches']} patches, T = {c['tokens']}\n"
        f"attention / projections: {c['attention_macs'] / c['projection_macs']:.2f}",
        fontsize=8,
    )


def patch_grid(settings: Sequence[tuple[int, int]] = ((28, 14), (28, 7), (28, 4), (96, 16)), image=None):
    """One panel per (image size, patch size) in ``settings``: the image cut into patches, with the sequence
    length and the cost of one block's attention (D2L 11.8). Returns the ``Figure``."""
    from qkv.figures.vision_transformer import sample_image

    settings = list(settings)
    if not settings:
        raise ValueError("give at least one (image size, patch size) pair")
    image = sample_image() if image is None else image
    use_svg_display()
    fig, axes = plt.subplots(1, len(settings), figsize=(2.6 * len(settings), 3.4), squeeze=False)
    for ax, (S, p) in zip(axes[0], settings):
        _draw(ax, image, S, p)
    fig.tight_layout()
    return fig


def patch_explorer(image=None):
    """Explore the patch size: sliders for the image size and the patch size (one of its divisors); the image cut
    into patches, the sequence length and the cost of attention against the projections (D2L 11.8).

    Returns:
        In Jupyter, an ``ipywidgets.interactive`` panel. During the book build, or without ipywidgets, the static
        :func:`patch_grid` instead.
    """
    from qkv.figures.vision_transformer import sample_image

    image = sample_image() if image is None else image
    widgets = ipywidgets_or_none()
    if widgets is None:
        return static_figure(patch_grid(image=image))
    last = {"fig": None}
    size = widgets.SelectionSlider(options=list(IMAGE_SIZES), value=28, description="image")
    patch = widgets.SelectionSlider(options=_divisors(28), value=7, description="patch")

    def follow(change):  # the patch size must divide the image size
        options = _divisors(change["new"])
        patch.options = options
        patch.value = min(options, key=lambda d: abs(d - change["new"] / 4))

    size.observe(follow, names="value")

    def draw(img_size, patch_size):
        if last["fig"] is not None:
            plt.close(last["fig"])
        if img_size % patch_size:  # between the two sliders' updates
            return None
        fig, ax = plt.subplots(figsize=(3.6, 3.8))
        _draw(ax, image, img_size, patch_size)
        fig.tight_layout()
        last["fig"] = fig
        return fig

    return widgets.interactive(draw, img_size=size, patch_size=patch)
