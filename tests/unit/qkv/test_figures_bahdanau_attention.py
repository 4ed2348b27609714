"""Tests for qkv.figures.bahdanau_attention: the glance figure of D2L 11.4 and the heatmap of one sentence."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402

from qkv.figures import bahdanau_attention as figures  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _texts(ax):
    return [t.get_text() for t in ax.texts]


def test_glance_shows_every_encoder_state_feeding_the_attention_and_the_previous_state_as_query():
    (ax,) = figures.glance().axes
    texts = _texts(ax)
    boxes = [p for p in ax.patches if isinstance(p, FancyBboxPatch)]
    arrows = [p for p in ax.patches if isinstance(p, FancyArrowPatch)]
    states = [t for t in texts if t.startswith(r"$\mathbf{h}_")]
    assert len(states) == 4, "one encoder state per source token"
    assert any("s}_{t'-1}" in t for t in texts) and any("s}_{t'}" in t for t in texts)
    assert "query" in texts and any("context" in t for t in texts)
    assert any(r"\alpha(\mathbf{s}_{t'-1}, \mathbf{h}_t)" in t for t in texts), "the context's equation"
    # 4 tokens + 4 states + attention + 2 decoder states + embedding + next token
    assert len(boxes) == 13
    # 4 token->state, 3 state->state, 4 state->attention, query, context, s->s, embedding->s, s->next
    assert len(arrows) == 16


def test_source_heatmap_labels_rows_and_columns_and_writes_each_weight():
    w = torch.tensor([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1]])
    ax = figures.source_heatmap(w.unsqueeze(1), ["a", "b", "."], ["x", "<eos>"])  # (T_out, 1, T_src) squeezes
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "."]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["x", "<eos>"]
    assert sorted(_texts(ax)) == sorted(f"{v:.2f}" for v in w.flatten().tolist())
    assert ax.images[0].get_array().shape == (2, 3)


def test_source_heatmap_refuses_weights_that_do_not_fit_the_tokens():
    with pytest.raises(ValueError, match="do not fit 2 output tokens x 4 source tokens"):
        figures.source_heatmap(torch.rand(2, 3), ["a", "b", "c", "d"], ["x", "y"])
    with pytest.raises(ValueError, match="one sentence"):
        figures.source_heatmap(torch.rand(2, 3, 4), ["a"], ["x"])
