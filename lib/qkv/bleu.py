"""BLEU, the n-gram overlap score of a predicted translation (D2L 10.7.8).

For a prediction of ``len_pred`` tokens and a label of ``len_label`` tokens::

    BLEU = exp(min(0, 1 - len_label / len_pred)) * prod_{n=1}^{k} p_n ** (1 / 2**n)

where ``p_n`` is the fraction of the prediction's n-grams that also occur in
the label, each label n-gram matching at most as many times as it occurs
there (clipped counts). The exponent ``1 / 2**n`` weighs long n-grams more:
matching them is harder. The first factor penalises predictions shorter
than the label, which would otherwise score high precisions too easily.
"""

from __future__ import annotations

import math
from collections import Counter

__all__ = ["bleu"]


def _ngrams(tokens: list[str], n: int) -> Counter:
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def bleu(pred_seq: str, label_seq: str, k: int) -> float:
    """BLEU of a space-separated prediction against a label, with n-grams up to ``k`` (D2L 10.7.8).

    Edge cases, as D2L's function behaves on them without dividing by zero:

    - n-gram orders ``n`` longer than the prediction are skipped (they contribute
      a factor 1), so a one-word prediction is judged on unigrams only;
    - an order ``n`` the prediction has but the label lacks (label shorter than
      ``n``) has no match, so the score is 0;
    - an empty prediction scores 0, unless the label is empty too (then 1).

    Tokens are split on whitespace (D2L splits on single spaces; the two agree
    for the single-spaced strings that joining tokens with ``" "`` gives).
    """
    if not isinstance(pred_seq, str) or not isinstance(label_seq, str):
        raise TypeError(
            f"bleu takes two strings of space-separated tokens, got {type(pred_seq).__name__} and "
            f"{type(label_seq).__name__}; join a token list with ' '.join(tokens)"
        )
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k, the longest n-gram order, must be a positive int, got {k!r}")
    pred_tokens, label_tokens = pred_seq.split(), label_seq.split()
    len_pred, len_label = len(pred_tokens), len(label_tokens)
    if len_pred == 0:
        return 1.0 if len_label == 0 else 0.0
    score = math.exp(min(0.0, 1 - len_label / len_pred))
    for n in range(1, min(k, len_pred) + 1):
        pred_grams, label_grams = _ngrams(pred_tokens, n), _ngrams(label_tokens, n)
        matches = sum(min(count, label_grams[gram]) for gram, count in pred_grams.items())
        score *= (matches / (len_pred - n + 1)) ** (0.5**n)
    return score
