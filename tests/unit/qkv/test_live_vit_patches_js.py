"""11.8's live patch explorer computes in the page what torch and ``qkv`` compute (``js/vit_patches.js``).

The module's exported functions run in Node on the data that ``patch_explorer_data`` makes: its bilinear resize
equals ``torch.nn.functional.interpolate(..., mode="bilinear", align_corners=False)`` on the float64 image within
1e-9, at every image size of the slider and at sizes that are not multiples of 28 (up and down); its counts equal
``patch_costs`` exactly; the patch follows the image size as the Python explorer does. The browser test
(``tests/book/test_explorer_vit_patches.py``) reads the drawing back in Chromium.
"""

from __future__ import annotations

import pytest
import torch
from torch.nn import functional as F

from qkv.widgets.vision_transformer import (
    IMAGE_SIZES,
    _divisors,
    _following_patch,
    patch_costs,
    patch_explorer_data,
)
from tests.support.js_modules import call_module

RTOL, ATOL = 1e-9, 1e-12

pytestmark = pytest.mark.usefixtures("_node")


@pytest.fixture
def _node():
    from tests.support.js_modules import node_or_skip

    node_or_skip()


@pytest.fixture(scope="module")
def data():
    return patch_explorer_data()


def _torch_resize(image: list, size: int, align_corners: bool = False) -> torch.Tensor:
    X = torch.tensor(image, dtype=torch.float64)[None, None]  # (h, w) -> (1, 1, h, w)
    return F.interpolate(X, size=(size, size), mode="bilinear", align_corners=align_corners)[0, 0]  # (S, S)


def _close(js, reference, what: str):
    got = torch.tensor(js, dtype=torch.float64)
    torch.testing.assert_close(got, reference, rtol=RTOL, atol=ATOL, msg=lambda m: f"{what}: {m}")


# ---- the image, resized ------------------------------------------------------------------------------------------


def test_the_data_hold_the_sample_image_exactly(data):
    from qkv.figures.vision_transformer import sample_image

    image = sample_image()  # (28, 28) float32
    assert data["image"] == [[float(x) for x in row] for row in image.tolist()]
    assert torch.equal(torch.tensor(data["image"], dtype=torch.float32), image)
    assert data["image_sizes"] == list(IMAGE_SIZES) and (data["num_hiddens"], data["num_heads"]) == (64, 4)


@pytest.mark.parametrize("size", [*IMAGE_SIZES, 50, 17, 1])
def test_resize_is_torchs_bilinear_interpolation(data, size):
    [resized] = call_module("vit_patches", [("resize", [data["image"], size])])
    _close(resized, _torch_resize(data["image"], size), f"the 28 x 28 image resized to {size} x {size}")


def test_resize_of_a_rectangular_random_image_is_torchs():
    """Heights and widths apart, and values that are not multiples of 1/255: the two axes are not mixed up."""
    image = torch.rand(11, 19, generator=torch.Generator().manual_seed(0), dtype=torch.float64).tolist()
    sizes = [7, 11, 19, 30, 64]
    results = call_module("vit_patches", [("resize", [image, S]) for S in sizes])
    for S, resized in zip(sizes, results):
        _close(resized, _torch_resize(image, S), f"an 11 x 19 image resized to {S} x {S}")


def test_the_comparison_could_fail(data):
    """The resize differs far beyond the tolerance from what a near miss would give (align_corners=True, or the
    pixels repeated), and the sizes make different images: the comparison above can fail."""
    [resized] = call_module("vit_patches", [("resize", [data["image"], 96])])
    resized = torch.tensor(resized, dtype=torch.float64)
    assert (resized - _torch_resize(data["image"], 96, align_corners=True)).abs().max() > 0.05
    image = torch.tensor(data["image"], dtype=torch.float64)
    [doubled] = call_module("vit_patches", [("resize", [data["image"], 56])])
    repeated = image.repeat_interleave(2, 0).repeat_interleave(2, 1)  # nearest neighbour, (56, 56)
    assert (torch.tensor(doubled) - repeated).abs().max() > 0.1


# ---- the counts --------------------------------------------------------------------------------------------------


def test_costs_are_patch_costs_exactly_at_every_setting_of_the_sliders(data):
    settings = [(S, p) for S in IMAGE_SIZES for p in _divisors(S)]
    results = call_module("vit_patches", [("explore", [data, S, p]) for S, p in settings])
    for (S, p), result in zip(settings, results):
        costs = patch_costs(S, p, data["num_hiddens"], data["num_heads"])
        assert {key: result[key] for key in costs} == costs, f"S = {S}, p = {p}"
        assert result["ratio"] == costs["attention_macs"] / costs["projection_macs"], f"S = {S}, p = {p}"
        assert (result["size"], result["patch"], result["grid"]) == (S, p, S // p)
        assert result["numbered"] == (costs["patches"] <= 64)
    assert len(settings) > 40, "every patch size of every image size"


@pytest.mark.parametrize("num_hiddens, num_heads", [(512, 8), (7, 1)])
def test_costs_follow_the_models_sizes(num_hiddens, num_heads):
    data = patch_explorer_data(torch.zeros(4, 4), image_sizes=(96,), num_hiddens=num_hiddens, num_heads=num_heads)
    results = call_module("vit_patches", [("explore", [data, 96, p]) for p in (16, 2)])
    for p, result in zip((16, 2), results):
        costs = patch_costs(96, p, num_hiddens, num_heads)
        assert {key: result[key] for key in costs} == costs
        assert result["ratio"] == costs["attention_macs"] / costs["projection_macs"]


def test_settings_make_a_difference_far_beyond_the_tolerance(data):
    small, large = call_module("vit_patches", [("explore", [data, 28, 14]), ("explore", [data, 224, 2])])
    assert (small["tokens"], large["tokens"]) == (5, 12545)
    assert large["ratio"] / small["ratio"] > 1000


def test_the_patch_follows_the_image_size_as_the_python_explorer_did():
    calls = [("followingPatch", [S]) for S in IMAGE_SIZES] + [("divisors", [S]) for S in IMAGE_SIZES]
    results = call_module("vit_patches", calls)
    assert results[: len(IMAGE_SIZES)] == [_following_patch(S) for S in IMAGE_SIZES] == [7, 14, 21, 24, 28, 56]
    assert results[len(IMAGE_SIZES) :] == [_divisors(S) for S in IMAGE_SIZES]


def test_explore_snaps_to_the_sliders_values(data):
    """A setting the sliders cannot make (Python may set one) is shown as the nearest they can: the nearest image
    size, then the divisor of it nearest the patch size asked for (the smaller of two as near)."""
    asked = [(96, 7), (30, 7), (1000, 3), (84, 5), (28, 28), (28, 1)]
    results = call_module("vit_patches", [("explore", [data, S, p]) for S, p in asked])
    assert [(r["size"], r["patch"]) for r in results] == [(96, 6), (28, 7), (224, 2), (84, 4), (28, 28), (28, 2)]


def test_summary_says_the_key_numbers(data):
    settings = [(96, 16), (28, 7), (224, 224), (224, 2)]
    results = call_module("vit_patches", [("explore", [data, S, p]) for S, p in settings])
    texts = call_module("vit_patches", [("summary", [r]) for r in results])
    for (S, p), text in zip(settings, texts):
        c = patch_costs(S, p)
        ratio = c["attention_macs"] / c["projection_macs"]
        patches = "1 patch" if c["patches"] == 1 else f"{c['patches']:,} patches"
        assert text == (
            f"{S} px image in {p} px patches: {patches}, a sequence of {c['tokens']:,} tokens; "
            f"attention's products cost {ratio:.2f} times the projections'."
        )
    assert texts[0] == (
        "96 px image in 16 px patches: 36 patches, a sequence of 37 tokens; "
        "attention's products cost 0.29 times the projections'."
    )
    assert "12,544 patches, a sequence of 12,545 tokens" in texts[3]


# ---- the Python side's data: bad input -----------------------------------------------------------------------------


def test_bad_images_and_sizes_are_clear_errors():
    with pytest.raises(ValueError, match="2-D"):
        patch_explorer_data(torch.zeros(1, 28, 28))
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        patch_explorer_data(torch.full((28, 28), 255.0))
    with pytest.raises(ValueError, match="finite"):
        patch_explorer_data(torch.full((28, 28), float("nan")))
    with pytest.raises(ValueError, match="at least 2"):
        patch_explorer_data(torch.zeros(28, 28), image_sizes=(28, 1))
    with pytest.raises(ValueError, match="at least one image size"):
        patch_explorer_data(torch.zeros(28, 28), image_sizes=())
