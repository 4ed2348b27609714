"""Interactive explorer of D2L 11.8, "Transformers for Vision" (``book/vision-transformer.md``): how the patch size
sets the length of the sequence a ViT reads, and what its attention costs, with sliders for the image size and the
patch size.

:func:`patch_explorer` is a live explorer (:mod:`qkv.widgets._live`): the module ``js/vit_patches.js`` draws it, in
JupyterLab and in the book, from :func:`patch_explorer_data` (the image's grey levels and the model's sizes), and
resizes the image and counts the patches, tokens and multiply-adds in the page as the sliders move; the static
:func:`patch_grid` stays for print and readers without JavaScript. The numbers come from :func:`patch_costs`.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import torch
from torch.nn import functional as F

from qkv._validate import int_in, positive_int
from qkv.plotting import use_svg_display
from qkv.widgets import _live as live

__all__ = ["IMAGE_SIZES", "patch_costs", "patch_grid", "patch_explorer_data", "patch_explorer"]

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


def _following_patch(img_size: int) -> int:
    """The patch size that follows a new image size: the divisor nearest a quarter of it (the smaller if two are)."""
    return min(_divisors(img_size), key=lambda d: abs(d - img_size / 4))


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


def _grey_levels(image) -> torch.Tensor:
    """``image`` as a 2-D tensor of finite grey levels in [0, 1]; a clear error otherwise."""
    image = torch.as_tensor(image)
    if image.dim() != 2 or min(image.shape) < 1:
        raise ValueError(f"the image must be 2-D, (height, width), got shape {tuple(image.shape)}")
    if not (image.is_floating_point() and bool(torch.isfinite(image).all())):
        raise ValueError("the image must hold finite floating-point grey levels in [0, 1]")
    if bool((image < 0).any() or (image > 1).any()):
        raise ValueError(f"the image's grey levels must be in [0, 1], got {float(image.min())} to {float(image.max())}")
    return image


def patch_explorer_data(
    image=None, image_sizes: Sequence[int] = IMAGE_SIZES, num_hiddens: int = 64, num_heads: int = 4
) -> dict:
    """What ``js/vit_patches.js`` draws from, as JSON values (D2L 11.8).

    The image's grey levels, row by row, each value exactly as the tensor holds it (``float`` of a float32 value is
    that value); the page resizes it to each side S of ``image_sizes`` as :func:`torch.nn.functional.interpolate`
    does (bilinear, ``align_corners=False``) and counts what :func:`patch_costs` counts with ``num_hiddens`` and
    ``num_heads``. ``image`` defaults to Fashion-MNIST's test image 0
    (:func:`qkv.figures.vision_transformer.sample_image`)."""
    from qkv.figures.vision_transformer import sample_image

    image = _grey_levels(sample_image() if image is None else image)
    sizes = [int_in(S, "each image size", 2) for S in image_sizes]
    if not sizes:
        raise ValueError("give at least one image size")
    return {
        "image": [[float(x) for x in row] for row in image.tolist()],
        "image_sizes": sizes,
        "num_hiddens": positive_int(num_hiddens, "num_hiddens"),
        "num_heads": positive_int(num_heads, "num_heads"),
    }


def patch_explorer(image=None):
    """Explore the patch size: sliders for the image size and the patch size (one of its divisors); the image cut
    into patches, the sequence length and the cost of attention against the projections (D2L 11.8).

    The image (default: Fashion-MNIST's test image 0) is resized to each size of :data:`IMAGE_SIZES`; moving the
    image size moves the patch size to the divisor nearest a quarter of it. A line of text says the number of
    patches, the sequence length and the ratio of attention's cost to the projections'.

    Returns:
        In Jupyter, a live widget (``js/vit_patches.js``; its traitlets ``img_size`` and ``patch_size`` are the
        sliders, and setting ``img_size`` alone to a size that the patch does not divide moves ``patch_size`` as
        the slider does). During the book build (:func:`qkv.widgets.static_mode`), the same explorer for the
        page, after the static :func:`patch_grid` that it replaces; without anywidget, that figure alone
        (:mod:`qkv.widgets._live`).
    """
    from qkv.figures.vision_transformer import sample_image

    image = _grey_levels(sample_image() if image is None else image)
    shown = live.explorer(
        "vit_patches",
        data=lambda: patch_explorer_data(image),
        settings={"img_size": 28, "patch_size": 7},
        static=lambda: patch_grid(image=image),
        label="Patch explorer: choose the image size and the patch size, and see the patches, the sequence length "
        "and what attention costs",
    )
    if hasattr(shown, "observe"):  # the widget: keep the patch a divisor of the image size, as the slider does

        def follow(change):
            if change["new"] % shown.patch_size:
                shown.patch_size = _following_patch(change["new"])

        shown.observe(follow, names="img_size")
    return shown
