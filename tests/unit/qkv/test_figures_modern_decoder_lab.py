"""Tests for qkv.figures.modern_decoder_lab: the glance drawing shows GPT-2's block and the block of 2026 part for
part, bottom up, as the lab's table and classes have them."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from qkv.figures import modern_decoder_lab as figures  # noqa: E402
from qkv.modern_decoder import ModernDecoderBlock  # noqa: E402
from qkv.pretraining import DecoderOnlyBlock  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_glance_shows_both_blocks_part_for_part_bottom_up():
    (ax,) = figures.glance().axes
    texts = [t.get_text() for t in ax.texts]
    assert texts.count("LayerNorm") == 2 and texts.count("RMSNorm") == 2
    assert texts.count("+") == 4, "a residual addition after each of the four sublayers"
    height = {t: ax.texts[texts.index(t)].get_position()[1] for t in texts}
    assert (
        height["RMSNorm"]
        < height[next(t for t in texts if t.startswith("grouped-query"))]
        < height[next(t for t in texts if t.startswith("SwiGLU"))]
    )
    assert any("no position table" in t for t in texts) and any("learned position table" in t for t in texts)
    assert any("rotary" in t for t in texts) and any("cache" in t for t in texts)


def test_the_drawn_parts_are_the_classes_parts():
    """What the figure says each block holds is what the two classes hold."""
    gpt = DecoderOnlyBlock(16, 4, 64, 0.0)
    new = ModernDecoderBlock(16, 4, 2)
    assert type(gpt.ln1).__name__ == "LayerNorm" and type(new.attn_norm).__name__ == "RMSNorm"
    assert type(new.ffn).__name__ == "SwiGLU" and new.ffn.W_up.out_features == 48  # 8/3 of 16, rounded to 16
    assert gpt.ffn[0].bias is not None and all(m.bias is None for m in (new.W_q, new.W_k, new.W_v, new.W_o))
    parts = [text for text, _ in figures.BLOCKS["the block of 2026"]["parts"]]
    assert parts[0] == "RMSNorm" and parts[4].startswith("SwiGLU")
