"""Tests for qkv.widgets.vision_transformer (D2L 11.8): patch counts and attention cost, and the patch explorer in
Jupyter (a live widget) and in the book (the static grid, then the live explorer)."""

import sys

import matplotlib

matplotlib.use("Agg")

import anywidget  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from qkv.widgets import _live as live  # noqa: E402
from qkv.widgets.vision_transformer import (  # noqa: E402
    IMAGE_SIZES,
    patch_costs,
    patch_explorer,
    patch_explorer_data,
    patch_grid,
)

pytestmark = pytest.mark.usefixtures("close_figures")


def test_patch_costs_by_hand():
    c = patch_costs(28, 7, num_hiddens=64, num_heads=4)
    assert c == {
        "patches": 16,
        "tokens": 17,
        "scores": 4 * 17 * 17,
        "attention_macs": 2 * 17 * 17 * 64,
        "projection_macs": 4 * 17 * 64 * 64,
    }
    assert patch_costs(96, 16)["patches"] == 36  # D2L's setting
    # halving the patch quadruples the patches, and the attention grows about 16-fold
    assert patch_costs(28, 2)["attention_macs"] / patch_costs(28, 4)["attention_macs"] == pytest.approx((197 / 50) ** 2)
    with pytest.raises(ValueError, match="divide"):
        patch_costs(28, 5)
    with pytest.raises(TypeError):
        patch_costs(28.0, 7)


def test_grid():
    image = torch.rand(28, 28)
    fig = patch_grid([(28, 7), (56, 8)], image=image)
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    assert "P = 49 patches" in fig.axes[1].get_title()
    with pytest.raises(ValueError, match="at least one"):
        patch_grid([])


def test_explorer_data_hold_the_image_and_the_sizes():
    image = torch.rand(28, 28, generator=torch.Generator().manual_seed(1))  # float32
    data = patch_explorer_data(image, image_sizes=(28, 96), num_hiddens=32, num_heads=2)
    assert data == {
        "image": [[float(x) for x in row] for row in image.tolist()],
        "image_sizes": [28, 96],
        "num_hiddens": 32,
        "num_heads": 2,
    }
    assert torch.equal(torch.tensor(data["image"], dtype=torch.float32), image), "the values are written exactly"


def test_patch_explorer_is_a_live_widget(jupyter):
    image = torch.rand(28, 28)
    panel = patch_explorer(image=image)
    assert isinstance(panel, anywidget.AnyWidget)
    assert panel._esm == live.module_text("vit_patches")
    assert panel.data == patch_explorer_data(image)
    assert panel.data["image_sizes"] == list(IMAGE_SIZES)
    assert (panel.img_size, panel.patch_size) == (28, 7)
    panel.patch_size = 4  # what the patch slider sets
    assert panel.get_state(["img_size", "patch_size"]) == {"img_size": 28, "patch_size": 4}


def test_the_patch_follows_the_image_size_in_jupyter(jupyter):
    panel = patch_explorer(image=torch.rand(28, 28))
    panel.img_size = 96  # 7 does not divide 96: the patch moves to the divisor nearest 96 / 4, as the slider does
    assert (panel.img_size, panel.patch_size) == (96, 24)
    panel.patch_size = 16
    panel.img_size = 224  # 16 divides 224: the patch stays
    assert (panel.img_size, panel.patch_size) == (224, 16)
    panel.img_size, panel.patch_size = 56, 8  # both at once, as the page sends them
    assert (panel.img_size, panel.patch_size) == (56, 8)


def test_patch_explorer_draws_the_static_grid_in_the_book(book_build):
    image = torch.rand(28, 28)
    explorer = patch_explorer(image=image)
    assert isinstance(explorer, live.BookExplorer) and explorer.name == "vit_patches"
    assert explorer.settings == {"img_size": 28, "patch_size": 7}
    assert explorer.data == patch_explorer_data(image)
    fig = explorer.figure
    assert isinstance(fig, Figure) and not plt.fignum_exists(fig.number)
    titles = [ax.get_title() for ax in fig.axes]
    shown = ["28 px, patch 14", "28 px, patch 7", "28 px, patch 4", "96 px, patch 16"]
    assert [t.split("\n")[0] for t in titles] == shown
    assert 'data-qkv-live="vit_patches"' in explorer.html()


def test_without_anywidget_the_explorer_is_the_static_grid(jupyter, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "anywidget", None)  # `import anywidget` raises ImportError
    shown = patch_explorer(image=torch.rand(28, 28))
    assert isinstance(shown, Figure) and len(shown.axes) == 4 and not plt.fignum_exists(shown.number)
    assert capsys.readouterr().out == live.NO_ANYWIDGET_NOTE + "\n"


def test_bad_images_are_clear_errors(jupyter):
    with pytest.raises(ValueError, match=r"2-D, \(height, width\), got shape \(3, 28, 28\)"):
        patch_explorer(image=torch.rand(3, 28, 28))
    with pytest.raises(ValueError, match=r"grey levels must be in \[0, 1\]"):
        patch_explorer(image=torch.rand(28, 28) * 255)
    with pytest.raises(ValueError, match="finite floating-point"):
        patch_explorer(image=torch.zeros(28, 28, dtype=torch.uint8))
