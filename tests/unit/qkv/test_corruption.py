"""Tests of qkv.corruption (D2L 11.9): BERT's masked tokens and T5's corrupted spans, their statistics over many
draws (within 5 binomial standard deviations, fixed seeds) and their invariants."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.nn import functional as F

from qkv.corruption import (
    BERT_RESERVED,
    IGNORE_INDEX,
    MASK,
    corrupt_spans,
    mask_tokens,
    sentinel_tokens,
    special_token_ids,
)
from qkv.data import Vocab

WORDS = [f"w{i}" for i in range(30)]
VOCAB = Vocab(WORDS, reserved_tokens=[*BERT_RESERVED, "<bos>", "<eos>", *sentinel_tokens(40)])
SPECIAL = torch.tensor(special_token_ids(VOCAB))
ORDINARY = torch.tensor([VOCAB.unk] + VOCAB[WORDS])  # <unk> stands for a word: it is ordinary
PAD, CLS, SEP, MASK_ID = VOCAB["<pad>"], VOCAB["<cls>"], VOCAB["<sep>"], VOCAB[MASK]


def within(count, n, p, sds=5.0):
    """Whether ``count`` successes in ``n`` trials agree with probability ``p`` within ``sds`` standard deviations."""
    return abs(count - n * p) <= sds * math.sqrt(n * p * (1 - p))


def test_special_tokens_follow_vocab_conventions():
    """Every <...> token but <unk> is special; the words are not."""
    names = set(VOCAB.to_tokens(special_token_ids(VOCAB)))
    assert names == {*BERT_RESERVED, "<bos>", "<eos>", *sentinel_tokens(40)}
    assert sentinel_tokens(3) == ["<extra_id_0>", "<extra_id_1>", "<extra_id_2>"]
    assert special_token_ids(Vocab(["a", "b"])) == []


# ---------------------------------------------------------------- BERT: masked tokens


def bert_batch(B: int, T: int, seed: int) -> torch.Tensor:
    """<cls> words <sep> words <sep> <pad>...: D2L's BERT input layout, random lengths, <unk> among the words."""
    g = torch.Generator().manual_seed(seed)
    X = ORDINARY[torch.randint(0, len(ORDINARY), (B, T), generator=g)]  # (B, T)
    X[:, 0] = CLS
    for b in range(B):
        length = int(torch.randint(4, T + 1, (1,), generator=g))
        X[b, int(torch.randint(2, length - 1, (1,), generator=g))] = SEP
        X[b, length - 1] = SEP
        X[b, length:] = PAD
    return X


def test_mask_tokens_invariants_and_chosen_counts():
    """Labels at chosen positions only, equal to the original; everything else unchanged; no special token
    chosen; each row chooses round(15% of its ordinary tokens), at least one."""
    X = bert_batch(300, 40, seed=0)
    inputs, labels, chosen = mask_tokens(X, VOCAB, generator=torch.Generator().manual_seed(1))
    assert inputs.shape == labels.shape == chosen.shape == X.shape
    assert inputs.dtype == labels.dtype == torch.long and chosen.dtype == torch.bool
    assert torch.equal(labels[chosen], X[chosen]) and torch.all(labels[~chosen] == IGNORE_INDEX)
    assert torch.equal(inputs[~chosen], X[~chosen])
    assert not torch.isin(X[chosen], SPECIAL).any(), "special tokens and padding must never be chosen"
    replaced = inputs[chosen]
    assert torch.isin(replaced, ORDINARY).logical_or(replaced == MASK_ID).all(), "a random token must be ordinary"
    n = torch.isin(X, ORDINARY).sum(1)  # (B,)
    expected = torch.tensor([max(1, round(0.15 * int(m))) for m in n])
    assert torch.equal(chosen.sum(1), expected)
    assert abs(chosen.sum() / n.sum() - 0.15) < 0.01


def test_mask_tokens_choose_every_position_alike():
    """Without special tokens, each of T = 20 positions is chosen in 3 of 20 draws on average (not the first 3)."""
    B, T = 4000, 20
    X = ORDINARY[torch.randint(0, len(ORDINARY), (B, T), generator=torch.Generator().manual_seed(2))]
    chosen = mask_tokens(X, VOCAB, generator=torch.Generator().manual_seed(3)).chosen
    assert torch.all(chosen.sum(1) == 3)
    per_position = chosen.sum(0)  # (T,)
    assert all(within(int(c), B, 3 / T) for c in per_position), per_position.tolist()


@pytest.mark.parametrize("rates", [(0.8, 0.1), (0.5, 0.3)])
def test_mask_tokens_split_80_10_10(rates):
    """Among chosen tokens: <mask> with probability 0.8, a random ordinary token 0.1 (which may be the
    original itself, with chance 1 / number of ordinary tokens), unchanged otherwise; random draws are uniform."""
    p_mask, p_random = rates
    X = bert_batch(2000, 40, seed=4)
    inputs, labels, chosen = mask_tokens(
        X, VOCAB, mask_token_rate=p_mask, random_token_rate=p_random, generator=torch.Generator().manual_seed(5)
    )
    got, orig = inputs[chosen], X[chosen]
    n, m = len(got), len(ORDINARY)
    masked, same = int((got == MASK_ID).sum()), int((got == orig).sum())
    assert within(masked, n, p_mask)
    assert within(same, n, 1 - p_mask - p_random + p_random / m)
    assert within(n - masked - same, n, p_random * (1 - 1 / m))
    draws = got[(got != MASK_ID) & (got != orig)]
    counts = torch.bincount(draws, minlength=len(VOCAB))[ORDINARY]  # (m,)
    # A changed token is uniform over the m - 1 others; the originals are uniform, so each token has frequency 1 / m.
    assert all(within(int(c), len(draws), 1 / m) for c in counts), counts.tolist()


def test_mask_tokens_reproducible_shapes_and_edge_rates():
    X = bert_batch(8, 12, seed=6)
    a = mask_tokens(X, VOCAB, generator=torch.Generator().manual_seed(7))
    b = mask_tokens(X, VOCAB, generator=torch.Generator().manual_seed(7))
    c = mask_tokens(X, VOCAB, generator=torch.Generator().manual_seed(8))
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert not torch.equal(a.chosen, c.chosen)
    one = mask_tokens(X[0], VOCAB, generator=torch.Generator().manual_seed(7))
    assert one.inputs.shape == (12,) and one.chosen.shape == (12,)
    all_masked = mask_tokens(X, VOCAB, mask_token_rate=1.0, random_token_rate=0.0)
    assert torch.all(all_masked.inputs[all_masked.chosen] == MASK_ID)
    kept = mask_tokens(X, VOCAB, mask_token_rate=0.0, random_token_rate=0.0)
    assert torch.equal(kept.inputs, X) and kept.chosen.any()
    only_special = torch.tensor([[CLS, SEP, PAD, PAD]])
    nothing = mask_tokens(only_special, VOCAB)
    assert not nothing.chosen.any() and torch.equal(nothing.inputs, only_special)


def test_mask_tokens_labels_feed_cross_entropy():
    """IGNORE_INDEX is cross_entropy's default ignore_index: the loss is the mean over chosen positions."""
    X = bert_batch(4, 10, seed=9)
    _, labels, chosen = mask_tokens(X, VOCAB, generator=torch.Generator().manual_seed(0))
    logits = torch.randn(4, 10, len(VOCAB))
    loss = F.cross_entropy(logits.reshape(-1, len(VOCAB)), labels.reshape(-1))
    per_token = F.cross_entropy(logits[chosen], X[chosen], reduction="none")
    torch.testing.assert_close(loss, per_token.mean())


def test_mask_tokens_errors():
    X = bert_batch(2, 6, seed=0)
    for bad in (0, 1, 1.5, -0.1, True, "0.15"):
        with pytest.raises(ValueError, match=r"mask_rate must be a number in \(0, 1\)"):
            mask_tokens(X, VOCAB, mask_rate=bad)
    with pytest.raises(ValueError, match=r"random_token_rate must be a number in \[0, 1\]"):
        mask_tokens(X, VOCAB, random_token_rate=1.2)
    with pytest.raises(ValueError, match="exceeds 1"):
        mask_tokens(X, VOCAB, mask_token_rate=0.8, random_token_rate=0.3)
    with pytest.raises(ValueError, match="no <mask> token.*BERT_RESERVED"):
        mask_tokens(torch.tensor([1, 2]), Vocab(["a", "b"]))
    with pytest.raises(ValueError, match=r"lie in \[0, len\(vocab\)"):
        mask_tokens(torch.tensor([0, len(VOCAB)]), VOCAB)
    with pytest.raises(TypeError, match="integer token ids"):
        mask_tokens(X.float(), VOCAB)
    with pytest.raises(TypeError, match="tensor of token ids"):
        mask_tokens([1, 2, 3], VOCAB)
    with pytest.raises(ValueError, match=r"\(T,\) or \(B, T\)"):
        mask_tokens(X[None], VOCAB)
    with pytest.raises(TypeError, match="qkv.data.Vocab"):
        mask_tokens(X, {"<mask>": 1})


# ---------------------------------------------------------------- T5: corrupted spans


SENTINELS = torch.tensor(VOCAB[sentinel_tokens(40)])


def expand(inputs: torch.Tensor, targets: torch.Tensor) -> list[int]:
    """Put back each sentinel's tokens, read from the targets: the inverse of span corruption."""
    spans, k = {}, None
    for t in targets.tolist():
        if t in SENTINELS:
            k = t
            spans[k] = []
        else:
            spans[k].append(t)
    out = []
    for t in inputs.tolist():
        out += spans[t] if t in SENTINELS else [t]
    return out


def runs(noise: torch.Tensor) -> list[int]:
    """Lengths of the runs of True in a 1-D bool tensor."""
    lengths, current = [], 0
    for x in noise.tolist() + [False]:
        if x:
            current += 1
        elif current:
            lengths.append(current)
            current = 0
    return lengths


@settings(max_examples=60, deadline=None)
@given(
    T=st.integers(2, 80),
    density=st.floats(0.05, 0.6),
    mean=st.floats(1.0, 6.0),
    seed=st.integers(0, 2**16),
)
def test_corrupt_spans_invariants(T, density, mean, seed):
    """Sentinels in order; the target holds exactly the cut tokens; expanding the input recovers the sequence."""
    tokens = ORDINARY[torch.randint(0, len(ORDINARY), (T,), generator=torch.Generator().manual_seed(seed))]
    inputs, targets, noise = corrupt_spans(
        tokens, VOCAB, noise_density=density, mean_span_length=mean, generator=torch.Generator().manual_seed(seed)
    )
    assert inputs.dtype == targets.dtype == torch.long and noise.dtype == torch.bool and noise.shape == (T,)
    assert expand(inputs, targets) == tokens.tolist()
    n = min(max(round(density * T), 1), T - 1)
    S = len(runs(noise))
    assert int(noise.sum()) == n and 1 <= S
    assert inputs[torch.isin(inputs, SENTINELS)].tolist() == SENTINELS[:S].tolist()
    assert targets[torch.isin(targets, SENTINELS)].tolist() == SENTINELS[: S + 1].tolist()
    assert targets[0] == SENTINELS[0] and targets[-1] == SENTINELS[S]
    assert inputs[~torch.isin(inputs, SENTINELS)].tolist() == tokens[~noise].tolist()
    assert targets[~torch.isin(targets, SENTINELS)].tolist() == tokens[noise].tolist()
    assert len(inputs) == T - n + S and len(targets) == n + S + 1


def test_corrupt_spans_statistics():
    """15% of the tokens cut, spans of mean length 3, span lengths spread as a uniform composition, every
    position as likely as another away from the ends (and both ends sometimes cut)."""
    g = torch.Generator().manual_seed(10)
    lengths, cut, total, first_spans = [], 0, 0, []
    T, draws = 100, 1500
    at = torch.zeros(T)
    for _ in range(draws):
        tokens = ORDINARY[torch.randint(0, len(ORDINARY), (T,), generator=g)]
        noise = corrupt_spans(tokens, VOCAB, generator=g).noise
        spans = runs(noise)
        lengths += spans
        first_spans.append(spans[0])
        cut, total = cut + int(noise.sum()), total + T
        at += noise
    assert cut / total == 0.15 and sum(lengths) / len(lengths) == 3.0  # 15 tokens in 5 spans, every time
    # The first span's length j among 5 spans of 15 tokens: C(14 - j, 3) / C(14, 4).
    for j in range(1, 8):
        p = math.comb(14 - j, 3) / math.comb(14, 4)
        assert within(first_spans.count(j), draws, p), (j, first_spans.count(j), draws * p)
    middle = at[20:80] / draws
    assert torch.all((middle - 0.15).abs() < 5 * math.sqrt(0.15 * 0.85 / draws) + 0.01), middle
    assert 0 < at[0] < draws and 0 < at[-1] < draws
    # Mixed lengths: the cut fraction and the mean span length stay near 15% and 3.
    lengths, cut, total = [], 0, 0
    for T in range(20, 220):
        noise = corrupt_spans(ORDINARY[torch.randint(0, len(ORDINARY), (T,), generator=g)], VOCAB, generator=g).noise
        lengths += runs(noise)
        cut, total = cut + int(noise.sum()), total + T
    assert abs(cut / total - 0.15) < 0.005
    assert abs(sum(lengths) / len(lengths) - 3.0) < 0.1


def test_corrupt_spans_reproducible_and_smallest_case():
    tokens = ORDINARY[:12]
    a = corrupt_spans(tokens, VOCAB, generator=torch.Generator().manual_seed(3))
    b = corrupt_spans(tokens, VOCAB, generator=torch.Generator().manual_seed(3))
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    seen = {
        tuple(corrupt_spans(tokens, VOCAB, generator=torch.Generator().manual_seed(s)).noise.tolist())
        for s in range(20)
    }
    assert len(seen) > 1
    s0, s1 = SENTINELS[:2].tolist()
    x, y = VOCAB["w1"], VOCAB["w2"]
    two = corrupt_spans(torch.tensor([x, y]), VOCAB, generator=torch.Generator().manual_seed(0))
    assert (two.inputs.tolist(), two.targets.tolist()) in [([s0, y], [s0, x, s1]), ([x, s0], [s0, y, s1])]


def test_corrupt_spans_errors():
    tokens = ORDINARY[:10]
    for bad in (0, 1, 2.0, -0.5, None):
        with pytest.raises(ValueError, match=r"noise_density must be a number in \(0, 1\)"):
            corrupt_spans(tokens, VOCAB, noise_density=bad)
    with pytest.raises(ValueError, match="mean_span_length must be a number >= 1"):
        corrupt_spans(tokens, VOCAB, mean_span_length=0.5)
    with pytest.raises(ValueError, match="one sequence"):
        corrupt_spans(tokens[None], VOCAB)
    with pytest.raises(ValueError, match="T >= 2"):
        corrupt_spans(tokens[:1], VOCAB)
    with pytest.raises(ValueError, match=r"special tokens \['<extra_id_0>', '<pad>'\]"):
        corrupt_spans(torch.tensor([VOCAB["w1"], PAD, SENTINELS[0]]), VOCAB)
    few = Vocab(WORDS, reserved_tokens=sentinel_tokens(2))
    with pytest.raises(ValueError, match=r"lacks the sentinels <extra_id_2>..<extra_id_5>.*sentinel_tokens\(6\)"):
        corrupt_spans(torch.tensor(few[WORDS[:30]]), few, noise_density=0.5)  # 15 cut tokens in 5 spans: 6 sentinels
    with pytest.raises(ValueError, match=r"lie in \[0, len\(vocab\)"):
        corrupt_spans(torch.tensor([1, 2, len(VOCAB)]), VOCAB)
    with pytest.raises(ValueError, match="non-negative int"):
        sentinel_tokens(-1)
