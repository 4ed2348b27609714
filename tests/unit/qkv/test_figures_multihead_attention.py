"""Tests for qkv.figures.multihead_attention (D2L 11.5): the glance diagram, the trained toy model whose heads the
book draws, the head-importance experiment, and the claims the section's prose makes about them (CONTRIBUTING.md,
"Conventions": a claim in the prose is computed, here or in a cell)."""

import math
import re

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402

from course import notebooks as nbs  # noqa: E402
from course.section import section  # noqa: E402
from qkv import multihead as ref  # noqa: E402
from qkv.figures import multihead_attention as figures  # noqa: E402
from qkv.recipes import offsets as offset_recipes  # noqa: E402

pytestmark = pytest.mark.usefixtures("close_figures")
TASK = figures.OffsetTask()


def _prose() -> str:
    cells = nbs.read(section("multihead-attention").path).cells
    return " ".join(" ".join(c.source for c in cells if c.cell_type == "markdown").split())


@pytest.fixture(scope="module")
def model():
    """The book's model, trained for real (the suite's smoke runs would not learn the task)."""
    with pytest.MonkeyPatch.context() as mp:  # not trained_offset_reader: its per-process cache may hold a smoke model
        mp.delenv("QKV_TRAIN_SMOKE", raising=False)
        return offset_recipes.fit_offset_reader(TASK).model.eval()


def test_glance_shows_inputs_heads_concat_and_output_projection():
    (ax,) = figures.glance().axes
    texts = [t.get_text() for t in ax.texts]
    assert [t for t in texts if t.startswith("head")] == ["head 1", "head 2", "head H"]
    assert any("W}_o" in t for t in texts) and any("con-" in t for t in texts)
    assert sum("scaled dot" in t for t in texts) == 3, "each head attends on its own"
    assert sum(isinstance(p, FancyBboxPatch) for p in ax.patches) == 1 + 3 * 2 + 2
    assert sum(isinstance(p, FancyArrowPatch) for p in ax.patches) == 3 * 3 + 1


def test_offset_batch_targets_are_the_tokens_at_each_offset():
    X, Y = figures.offset_batch(TASK, 3, torch.Generator().manual_seed(0))
    assert X.shape == (3, TASK.num_steps) and Y.shape == (3, TASK.num_steps, len(figures.OFFSETS))
    T = TASK.num_steps
    for b in range(3):
        for t in range(T):
            for k, o in enumerate(figures.OFFSETS):
                assert Y[b, t, k] == X[b, (t + o) % T]


def test_training_is_seeded_and_learns_the_task(model):
    assert not model.training
    X, Y = figures.offset_batch(TASK, 256, torch.Generator().manual_seed(99))
    with torch.no_grad():
        accuracy = (model(X).argmax(-1) == Y).double().mean().item()
    assert accuracy == 1.0, "the trained model reads the three tokens exactly"


def test_training_repeats_and_is_cached_once(model, tmp_path, monkeypatch):
    """Two trainings in empty caches give the same weights as the book's model; the second call loads them; and a
    grading run (QKV_NO_TRAIN, as the grader's sandbox sets) with no cached weights refuses to train."""
    from qkv.recipes.weights import NotCached

    data = figures.OffsetData(TASK)
    assert len(data.train_dataloader()) == TASK.steps and data.X.shape == (TASK.steps * TASK.batch_size, 10)
    monkeypatch.delenv("QKV_TRAIN_SMOKE", raising=False)
    monkeypatch.setenv("QKV_TRAINED_DIR", str(tmp_path / "a"))
    first = offset_recipes.fit_offset_reader(TASK)
    again = offset_recipes.fit_offset_reader(TASK)
    assert first.trained and not again.trained and again.seconds == first.seconds
    for (name, a), b in zip(model.state_dict().items(), first.model.state_dict().values()):
        torch.testing.assert_close(a, b, rtol=0, atol=0, msg=f"{name} differs between two trainings")
    monkeypatch.setenv("QKV_TRAINED_DIR", str(tmp_path / "b"))
    monkeypatch.setenv("QKV_NO_TRAIN", "1")
    with pytest.raises(NotCached):
        offset_recipes.fit_offset_reader(TASK)


def test_the_model_is_warmed_before_grading():
    from course.section import section

    assert "qkv.recipes.offsets:trained_offset_reader" in section("multihead-attention").trains


def test_head_weights_are_the_layers_weights_per_head(model):
    X, _ = figures.offset_batch(TASK, 2, torch.Generator().manual_seed(3))
    W = figures.head_weights(model, X)
    assert W.shape == (2, TASK.num_heads, TASK.num_steps, TASK.num_steps)
    torch.testing.assert_close(W.sum(-1), torch.ones(2, TASK.num_heads, TASK.num_steps))
    # head j of example b is row b * H + j of the layer's (B * H, T, T) weights
    torch.testing.assert_close(W[1, 2], model.attention.attention.attention_weights[1 * TASK.num_heads + 2])


def test_head_offsets_by_a_direct_average(model):
    X, _ = figures._evaluation_batch(TASK)
    W = figures.head_weights(model, X).mean(0)  # (H, T, T)
    T = TASK.num_steps
    for j, (offset, weight) in enumerate(figures.head_offsets(model, TASK)):
        per_offset = [sum(W[j, t, (t + o) % T].item() for t in range(T)) / T for o in range(T)]
        best = max(range(T), key=per_offset.__getitem__)
        assert offset % T == best and -T // 2 <= offset <= T // 2
        assert math.isclose(weight, per_offset[best], rel_tol=1e-5)


def test_head_importance_equals_zeroing_the_heads_columns_of_W_o(model):
    """Masking head j before W_o is the same as zeroing W_o's columns j*h .. (j+1)*h - 1: checked on a copy."""
    base, masked = figures.head_importance(model, TASK)
    X, Y = figures._evaluation_batch(TASK)
    h = TASK.num_hiddens // TASK.num_heads
    copy = figures.OffsetReader(TASK)
    copy.load_state_dict(model.state_dict())
    copy.eval()
    with torch.no_grad():
        assert math.isclose(base, figures.offset_loss(copy, X, Y).item(), rel_tol=1e-6)
        for j in range(TASK.num_heads):
            copy.load_state_dict(model.state_dict())
            copy.attention.W_o.weight[:, j * h : (j + 1) * h] = 0
            assert math.isclose(masked[j], figures.offset_loss(copy, X, Y).item(), rel_tol=1e-5, abs_tol=1e-7)
    assert figures.head_importance(model, TASK)[0] == base, "the hooks are removed afterwards"


# ----------------------------------------------------------------------------- what the prose says


def test_prose_states_the_task_as_configured():
    text = _prose()
    assert f"{TASK.num_steps} random tokens (from {TASK.vocab_size} symbols)" in text
    assert f"with {TASK.num_heads} heads" in text
    assert f"trains for {TASK.steps} steps of Adam" in text
    offsets = ", ".join(f"$t {'-' if o < 0 else '+'} {abs(o)}$" for o in figures.OFFSETS[:-1])
    last = figures.OFFSETS[-1]
    assert f"those at {offsets} and $t + {last}$" in text
    assert f"averages over {figures.EVALUATION_SIZE} sequences" in text


def test_prose_claims_about_the_heads_hold(model):
    """'Each head has settled on one offset'; 'two heads look at the same offset, four ahead'; 'masking one of them
    costs almost nothing while masking the other costs a few nats'; three heads are kept by pruning; and the alt
    texts name which head looks where."""
    offsets = [o for o, _ in figures.head_offsets(model, TASK)]
    assert sorted(set(offsets)) == sorted(figures.OFFSETS), "every offset has a head"
    twice = [o for o in set(offsets) if offsets.count(o) == 2]
    assert twice == [4] and len(offsets) == 4, "two heads share the offset four ahead, the others one each"
    base, masked = figures.head_importance(model, TASK)
    increase = [m - base for m in masked]
    pair = [j for j, o in enumerate(offsets) if o == 4]
    assert min(increase[j] for j in pair) < 0.01, "masking one of the pair costs almost nothing"
    assert max(increase[j] for j in pair) > 1, "masking the other costs a few nats"
    assert sum(i > 1 for i in increase) == 3 and sum(i < 0.01 for i in increase) == 1, "pruning keeps three heads"
    text = nbs.read(section("multihead-attention").path)
    alts = " ".join(c.metadata.get("mystnb", {}).get("image", {}).get("alt", "") for c in text.cells)
    words = {-1: "one position back", 2: "two ahead", 4: "four ahead"}
    sentence = re.search(r"head 1 looks (.+?), head 2 (.+?), heads 3 and 4 both (.+?)\.", alts)
    assert sentence, "the alt text of the heads' figure names where each head looks"
    assert [words[offsets[0]], words[offsets[1]], words[offsets[2]]] == list(sentence.groups())
    assert offsets[2] == offsets[3] == 4


def test_prose_claims_about_the_cost_table_hold():
    """With N = 8192, 64 heads, 80 layers and 32,768 tokens: the cache shrinks by exactly G / H; the multi-head
    cache of one sequence is larger than the attention weights (16-bit), the grouped-query one (G = 8) smaller."""
    N, H, layers, tokens = 8192, 64, 80, 32_768
    mha = ref.attention_costs(N, H, 64, tokens, num_layers=layers)
    gqa = ref.attention_costs(N, H, 8, tokens, num_layers=layers)
    assert gqa[1] * 64 == mha[1] * 8
    assert gqa[0] / mha[0] > 0.5, "the parameters shrink by much less than the cache"
    assert mha[1] > 2 * mha[0] and gqa[1] < 2 * gqa[0]
    assert "32,768 tokens" in _prose() and "$N = 8192$, 64 query heads, 80 layers" in _prose()
