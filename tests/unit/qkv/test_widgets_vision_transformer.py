"""Tests for qkv.widgets.vision_transformer (D2L 11.8): patch counts and attention cost, the explorer."""

import matplotlib

matplotlib.use("Agg")

import ipywidgets  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from qkv.widgets.vision_transformer import patch_costs, patch_explorer, patch_grid  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


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


def test_grid_and_static_explorer(monkeypatch):
    image = torch.rand(28, 28)
    fig = patch_grid([(28, 7), (56, 8)], image=image)
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    assert "P = 49 patches" in fig.axes[1].get_title()
    monkeypatch.setenv("QKV_BOOK_BUILD", "1")
    assert isinstance(patch_explorer(image=image), Figure)


def test_explorer_keeps_the_patch_a_divisor_of_the_image(monkeypatch):
    monkeypatch.delenv("QKV_BOOK_BUILD", raising=False)
    panel = patch_explorer(image=torch.rand(28, 28))
    assert isinstance(panel, ipywidgets.interactive)
    size, patch = panel.children[0], panel.children[1]
    size.value = 96
    assert all(96 % p == 0 for p in patch.options) and 96 % patch.value == 0
    assert "96 px" in panel.result.axes[0].get_title()
