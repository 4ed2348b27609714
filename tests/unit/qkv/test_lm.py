"""Tests for qkv.lm (D2L 11.9): the character data and its held-out split, the bigram model against counts made by
hand, the GRU's parameter count against its closed form, the sampling distribution against Python floats, the
power-law fit against exact data, and the recipes' caching through qkv.recipes.weights (smoke runs)."""

import math

import pytest
import torch

from qkv import lm
from qkv.pretraining import DecoderOnlyLM, GPTConfig
from qkv.recipes import lm as lm_recipes


class _Tiny:
    """A data module of two held-out windows, for perplexity."""

    def __init__(self, X, Y):
        self.X_val, self.Y_val = X, Y

    def val_dataloader(self):
        return [(self.X_val, self.Y_val)]


@pytest.fixture(scope="module")
def data(data_dir):
    return lm.CharLMData(data_dir=data_dir)


def test_windows_shift_by_one_and_the_held_out_text_is_disjoint_and_covered_once(data):
    assert torch.equal(data.X[:, 1:], data.Y[:, :-1])
    corpus = torch.tensor(data.corpus)
    split = int(len(corpus) * 0.9)
    starts = torch.arange(len(data.X)) * data.stride
    assert torch.equal(data.X[5], corpus[starts[5] : starts[5] + 64])
    assert int(starts[-1]) + 64 < split, "the last training label lies before the held-out text"
    m, T = data.X_val.shape
    assert torch.equal(data.Y_val.reshape(-1), corpus[split + 1 : split + 1 + m * T]), "each held-out char once"
    assert len(corpus) - split - 1 - m * T < T, "at most one window's worth is left over"
    assert data.decode(data.encode("The time")) == "the time"
    with pytest.raises(ValueError, match="not in the vocabulary"):
        data.encode("time!")


def test_bigram_perplexity_equals_add_one_counts_by_hand():
    X = torch.tensor([[0, 1, 2, 1], [2, 2, 0, 1]])
    Y = torch.tensor([[1, 2, 1, 0], [2, 0, 1, 1]])
    V = 3
    model = lm.BigramLM.fit(X, Y, V)
    counts = [[0] * V for _ in range(V)]
    for a, b in zip(X.flatten().tolist(), Y.flatten().tolist()):
        counts[a][b] += 1
    Xv, Yv = torch.tensor([[1, 0], [2, 1]]), torch.tensor([[0, 2], [1, 1]])
    nll = [-math.log((counts[a][b] + 1) / (sum(counts[a]) + V)) for a, b in zip(Xv.flatten(), Yv.flatten())]
    assert lm.perplexity(model, _Tiny(Xv, Yv)) == pytest.approx(math.exp(sum(nll) / len(nll)), rel=1e-6)


def test_gru_width_matches_the_parameter_target_and_counts_are_exact():
    gpt = DecoderOnlyLM(GPTConfig(vocab_size=28, **lm_recipes.GPT_CONFIG))
    target = lm.count_parameters(gpt)
    # tied head counted once; the embeddings are V x N and max_len x N
    assert target == sum(p.numel() for p in gpt.parameters())
    N, T = lm_recipes.GPT_CONFIG["num_hiddens"], lm_recipes.GPT_CONFIG["max_len"]
    assert target - lm.count_parameters(gpt, non_embedding=True) == 28 * N + T * N
    h = lm.gru_hiddens_for(target, 28)
    gru = lm.GRULM(lm.GRUConfig(28, num_hiddens=h))
    n = lm.count_parameters(gru)
    assert n == 28 * 64 + 3 * (64 * h + h * h + 2 * h) + h * 28 + 28
    assert abs(n - target) / target < 0.01
    for other in (h - 1, h + 1):
        m = lm.count_parameters(lm.GRULM(lm.GRUConfig(28, num_hiddens=other)))
        assert abs(m - target) >= abs(n - target)


@pytest.mark.parametrize("V,E", [(28, 64), (28, 16), (7, 5)])
def test_gru_width_is_the_closest_real_count_by_brute_force(V, E):
    """gru_hiddens_for(target, V, E) is the width whose GRULM, built and counted, is closest to ``target``: by brute
    force over widths, for 2,888 parameters and for targets just either side of the midpoint between neighbouring
    widths' counts (where a count off by a bias or a head would pick the neighbour)."""
    widths = range(1, 61)
    real = {h: lm.count_parameters(lm.GRULM(lm.GRUConfig(V, num_hiddens=h, num_embed=E))) for h in widths}
    targets = [2888] + [(real[h] + real[h + 1]) // 2 + d for h in (1, 4, 9, 20, 45) for d in (-1, 2)]
    for target in targets:
        assert target < real[widths[-1]], "widen the brute force"
        want = min(widths, key=lambda h: abs(real[h] - target))
        got = lm.gru_hiddens_for(target, V, E)
        assert got == want, (
            f"target {target} (V = {V}, E = {E}): width {got} has {real.get(got)} parameters, width {want} has "
            f"{real[want]}, closer"
        )


@pytest.mark.parametrize("tau,k", [(0.5, None), (1.0, 2), (3.0, 4), (0.2, 1)])
def test_next_token_distribution_is_the_tempered_top_k_softmax(tau, k):
    logits = torch.tensor([[1.5, -0.3, 0.8, 2.2, 0.0], [0.1, 0.4, -1.0, 0.3, 2.0]], dtype=torch.float64)
    got = lm.next_token_distribution(logits, tau, k)
    for row, p in zip(logits.tolist(), got.tolist()):
        keep = sorted(range(5), key=lambda v: -row[v])[: k or 5]
        z = sum(math.exp(row[v] / tau) for v in keep)
        assert p == pytest.approx([math.exp(row[v] / tau) / z if v in keep else 0.0 for v in range(5)], abs=1e-12)
    with pytest.raises(ValueError, match="temperature"):
        lm.next_token_distribution(logits, 0.0)


def test_power_law_fit_recovers_exact_parameters():
    sizes = [1e3, 5e3, 2e4, 1e5, 3e5]
    a, alpha = lm.fit_power_law(sizes, [4.2 * s**-0.09 for s in sizes])
    assert (a, alpha) == (pytest.approx(4.2, rel=1e-9), pytest.approx(0.09, rel=1e-9))
    with pytest.raises(ValueError, match="two"):
        lm.fit_power_law([1.0], [1.0])


def test_recipes_train_once_then_load_the_same_weights(data_dir, tmp_path, monkeypatch):
    data = lm.CharLMData(num_steps=16, batch_size=4, stride=4096, val_fraction=0.02, data_dir=data_dir)
    monkeypatch.setenv("QKV_TRAINED_DIR", str(tmp_path))
    monkeypatch.setenv("QKV_TRAIN_SMOKE", "1")
    first, _ = lm_recipes.train_gpt(data, log=lambda s: None)
    again, _ = lm_recipes.train_gpt(data, log=lambda s: None)
    assert first.trained and not again.trained and again.smoke == 1
    for (k, v), (_, w) in zip(first.model.state_dict().items(), again.model.state_dict().items()):
        assert torch.equal(v, w), k
    rows = lm_recipes.scaling_study(data, sizes=((8, 1),), log=lambda s: None)
    assert rows[0]["params"] == lm.count_parameters(
        DecoderOnlyLM(GPTConfig(vocab_size=28, **lm_recipes.scaling_config(8, 1))), non_embedding=True
    )
    assert math.isfinite(rows[0]["val_loss"]) and len(list(tmp_path.glob("char-gpt-8x1-smoke-*.pt"))) == 1
