"""qkv.recipes.modern: the modern-decoder lab's two language models, 11.9's GPT and a Llama-style decoder, at one
size and one budget (trained here as the suite's smoke runs: two batches each)."""

from __future__ import annotations

import math

from qkv.lm import count_parameters
from qkv.modern_decoder import ModernDecoderLM
from qkv.pretraining import DecoderOnlyLM
from qkv.recipes import modern
from qkv.recipes.lm import GPT_CONFIG


def test_the_pair_shares_width_depth_context_and_learning_rate_and_their_size_agrees():
    for name in ("num_hiddens", "num_heads", "num_blks", "max_len", "lr"):
        assert modern.MODERN_CONFIG[name] == GPT_CONFIG[name], name
    assert modern.MODERN_CONFIG["num_kv_heads"] < modern.MODERN_CONFIG["num_heads"]


def test_train_pair_gives_both_models_trained_with_the_seed_and_their_perplexities(tmp_path, monkeypatch):
    monkeypatch.setenv("QKV_TRAINED_DIR", str(tmp_path))
    pair = modern.train_pair(seed=1, progress=False, log=lambda *_: None)
    gpt, lab = pair["gpt"], pair["modern"]
    assert isinstance(gpt["fitted"].model, DecoderOnlyLM) and isinstance(lab["fitted"].model, ModernDecoderLM)
    assert abs(count_parameters(lab["fitted"].model) / count_parameters(gpt["fitted"].model) - 1) < 0.005
    vocab = len(pair["data"].vocab)
    for side in (gpt, lab):
        assert 1 < side["perplexity"] <= vocab * 1.5 and math.isfinite(side["perplexity"])
        assert side["fitted"].path.parent == tmp_path and "seed1" in side["fitted"].path.name
    again = modern.train_pair(pair["data"], seed=1, progress=False, log=lambda *_: None)
    assert not again["modern"]["fitted"].trained, "the second call loads the weights"
    assert again["modern"]["perplexity"] == lab["perplexity"]
