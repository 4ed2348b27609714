"""Tests of qkv.bleu (D2L 10.7.8): hand-computed scores, edge cases and properties."""

from __future__ import annotations

import math
from collections import defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qkv.bleu import bleu


def greedy_reference(pred: str, label: str, k: int) -> float:
    """D2L's counting written out: each predicted n-gram consumes one matching label n-gram, if any is left."""
    p, l = pred.split(), label.split()
    if not p:
        return 1.0 if not l else 0.0
    score = math.exp(min(0, 1 - len(l) / len(p)))
    for n in range(1, min(k, len(p)) + 1):
        left = defaultdict(int)
        for i in range(len(l) - n + 1):
            left[tuple(l[i : i + n])] += 1
        matches = 0
        for i in range(len(p) - n + 1):
            gram = tuple(p[i : i + n])
            if left[gram] > 0:
                matches, left[gram] = matches + 1, left[gram] - 1
        score *= math.pow(matches / (len(p) - n + 1), math.pow(0.5, n))
    return score


@pytest.mark.parametrize(
    "pred, label, k, expected",
    [
        # Same length, so no brevity penalty. Unigrams: a, b, c match, d does not: p1 = 3/4.
        # Bigrams: "a b", "b c" match, "c d" does not: p2 = 2/3. BLEU = (3/4)^(1/2) * (2/3)^(1/4).
        ("a b c d", "a b c e", 2, (3 / 4) ** 0.5 * (2 / 3) ** 0.25),
        # Every n-gram matches but the prediction is half as long: exp(1 - 4/2) = e^-1.
        ("a b", "a b c d", 2, math.exp(-1)),
        # Clipping: "the" occurs once in the label, so only one of the four counts. p1 = 1/4, (1/4)^(1/2) = 1/2.
        # The prediction is longer than the label: no penalty.
        ("the the the the", "the cat", 1, 0.5),
        # n-gram orders longer than the prediction are skipped: only p1 = 1 counts, times exp(1 - 2/1).
        ("a", "a b", 4, math.exp(-1)),
        # The label has no bigram, so p2 = 0.
        ("a b c", "a", 2, 0.0),
        # p1 = 2/3 (c is wrong), p2 = 1/2 ("a b" right, "b c" wrong), p3 = 0: nothing survives.
        ("a b c", "a b d", 3, 0.0),
        # Repeated bigrams clip too: label "a a" has one "a a" bigram; prediction "a a a" has two. p1 = 2/3
        # (two a's in the label), p2 = 1/2; penalty exp(min(0, 1 - 2/3)) = 1. BLEU = (2/3)^(1/2) * (1/2)^(1/4).
        ("a a a", "a a", 2, (2 / 3) ** 0.5 * 0.5**0.25),
        ("va !", "va !", 2, 1.0),
        ("", "a b", 2, 0.0),
        ("", "", 3, 1.0),
        ("a b", "", 2, 0.0),
    ],
)
def test_hand_computed_scores(pred, label, k, expected):
    assert bleu(pred, label, k) == pytest.approx(expected, abs=1e-12)


def test_whitespace_is_not_a_token():
    assert bleu("  il a  raison . ", "il a raison .", 4) == 1.0


def test_bad_arguments():
    with pytest.raises(TypeError, match="join"):
        bleu(["a", "b"], "a b", 2)
    with pytest.raises(ValueError, match="k"):
        bleu("a", "a", 0)


SENTENCES = st.lists(st.sampled_from(["le", "chat", "est", "noir", ".", "!"]), max_size=8).map(" ".join)


@settings(max_examples=200, deadline=None)
@given(SENTENCES, SENTENCES, st.integers(1, 5))
def test_bleu_is_in_0_1_and_agrees_with_greedy_counting(pred, label, k):
    score = bleu(pred, label, k)
    assert 0.0 <= score <= 1.0
    assert score == pytest.approx(greedy_reference(pred, label, k), abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(SENTENCES, st.integers(1, 5))
def test_identical_sequences_score_one(seq, k):
    assert bleu(seq, seq, k) == 1.0
