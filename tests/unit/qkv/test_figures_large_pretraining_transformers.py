"""Tests for qkv.figures.large_pretraining_transformers (D2L 11.9): the glance drawing shows qkv's masks, the table
of model scales holds the published numbers and their ratios, and the scaling plot draws the fitted law."""

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from qkv.figures import large_pretraining_transformers as figures  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_glance_draws_each_familys_mask_from_loops():
    axes = figures.glance(T=6, valid_len=5, prefix_len=3, T_tgt=4).axes
    shown = [torch.tensor(ax.images[0].get_array().data).bool() for ax in axes]
    rng6, rng4 = range(6), range(4)
    bert = torch.tensor([[j < 5 for j in rng6] for _ in rng6])
    dec = torch.tensor([[j <= i for j in rng4] for i in rng4])
    cross = torch.tensor([[j < 5 for j in rng6] for _ in rng4])
    gpt = torch.tensor([[j <= i for j in rng6] for i in rng6])
    prefix = torch.tensor([[j <= i or j < 3 for j in rng6] for i in rng6])
    for got, want in zip(shown, [bert, dec, cross, gpt, prefix], strict=True):
        assert torch.equal(got, want)
    assert "BERT" in axes[0].get_title() and "GPT" in axes[3].get_title()


def test_model_scales_hold_the_published_numbers_and_ratios():
    rows = {r["name"]: r for r in figures.model_scale_rows()}
    assert rows["Chinchilla"]["tokens_per_param"] == pytest.approx(20.0)
    assert rows["GPT-3"]["tokens_per_param"] == pytest.approx(300 / 175)
    assert rows["PaLM"]["params"] == 540e9 and rows["PaLM"]["tokens"] == 780e9
    assert rows["T5-11B"]["tokens"] == 1e12
    assert rows["BERT-large"]["tokens"] == pytest.approx(1e6 * 256 * 512, rel=0.01)
    assert rows["GPT-2"]["tokens"] is None and rows["GPT-2"]["tokens_per_param"] is None
    fig = figures.plot_model_scales(ours=("ours", 1e5, 2.5e6))
    points = [tuple(c.get_offsets()[0]) for c in fig.axes[0].collections if len(c.get_offsets())]
    assert (1e5, 2.5e6) in points and (70e9, 1.4e12) in points and len(points) == 7  # GPT-2 has no tokens


def test_scaling_plot_draws_the_fitted_power_law():
    rows = [dict(num_hiddens=n, num_blks=1, params=p, val_loss=3 * p**-0.1) for n, p in [(8, 1e3), (16, 1e4)]]
    fig = figures.plot_scaling(rows, 3.0, 0.1)
    (line,) = fig.axes[0].lines
    x, y = line.get_data()
    assert all(math.isclose(b, 3 * a**-0.1, rel_tol=1e-12) for a, b in zip(x, y))
    assert min(x) < 1e3 and max(x) > 1e4
    ax = fig.axes[0]
    assert ax.get_xlabel() == "non-embedding parameters N", "Kaplan et al.'s letter, as the page writes it"
    assert [t.get_text() for t in ax.texts] == ["8 units, 1 block", "16 units, 1 block"], "each point's width and depth"


def test_perplexity_bars_follow_the_table():
    fig = figures.plot_perplexity([("bigram", 9.6), ("GRU", 4.2), ("GPT", 5.0)])
    widths = [p.get_width() for p in fig.axes[0].patches]
    assert widths == [9.6, 4.2, 5.0]


def test_post_training_pipeline_draws_each_stage_with_its_data_objective_and_model():
    from matplotlib.patches import FancyArrowPatch

    (ax,) = figures.post_training_pipeline().axes
    at = {t.get_text(): t.get_position() for t in ax.texts}
    titles = ["1. pretraining", "2. supervised instruction tuning", "3. preference tuning"]
    assert [t.get_text() for t in ax.texts if t.get_fontweight() == "bold"] == [
        titles[0],
        titles[1],
        titles[2],
        "RLHF",
        "DPO",
    ], "three stage titles, then the third stage's two routes"
    assert [at[t][0] for t in titles] == sorted(at[t][0] for t in titles), "the stages run left to right"
    data = ["raw text", "(instruction, response) pairs", "(prompt, preferred, rejected) triples"]
    models = ["base model", "instruction-tuned model", "preference-tuned model"]
    for title, what, model in zip(titles, data, models, strict=True):
        assert at[what][0] == at[title][0] == at[model][0], f"{what} and {model} sit under {title}"
        assert at[title][1] > at[what][1] > at[model][1], "title, data, then the model, top down"
    objectives = {t.get_text(): t.get_position() for t in ax.texts if "loss" in t.get_text() or "PPO" in t.get_text()}
    pre, sft = (next(p for s, p in objectives.items() if key in s) for key in ("every token", "response's tokens"))
    assert pre[0] == at[titles[0]][0] and sft[0] == at[titles[1]][0], "each objective under its stage"
    rlhf, dpo = (next(s for s in objectives if key in s) for key in ("reward model r", "no reward model"))
    assert "PPO" in rlhf and r"\sigma(r(\mathbf{x}, \mathbf{y}^+) - r(\mathbf{x}, \mathbf{y}^-))" in rlhf, (
        "RLHF: a reward model fitted to the pairs, then PPO"
    )
    assert r"\pi_{\mathrm{ref}}" in dpo and r"\sigma(\beta" in dpo, "DPO: a log-sigmoid of log-ratios to pi_ref"
    assert at["RLHF"][0] < at[titles[2]][0] < at["DPO"][0], "the two routes side by side under the third stage"
    arrows = [p for p in ax.patches if isinstance(p, FancyArrowPatch)]
    assert len(arrows) == 4 + 4 + 2, "data to objective and objective to model per route, and model to model twice"
