"""Corrupting text for pretraining: BERT's masked tokens and T5's corrupted spans (D2L 11.9).

Both objectives hide part of a sequence and train the model to restore it.

- :func:`mask_tokens` is BERT's masked language model (Devlin et al., 2019):
  15% of the ordinary tokens are chosen; of those, 80% become ``<mask>``,
  10% a random token and 10% stay as they are. The encoder predicts the
  original token at every chosen position, and only there.
- :func:`corrupt_spans` is T5's span corruption (Raffel et al., 2020): 15% of
  the tokens, in spans of mean length 3, are cut out; each span becomes one
  sentinel ``<extra_id_k>`` in the input, and the target lists each sentinel
  followed by the tokens it replaced, closed by one more sentinel.

Special tokens follow :class:`qkv.data.Vocab`'s conventions: they are the
vocabulary's tokens written in angle brackets (``<pad>``, ``<bos>``, ``<eos>``,
``<cls>``, ``<sep>``, ``<mask>``, ``<extra_id_0>``...), added as
``reserved_tokens``. ``<unk>`` is the exception: it stands for a real word of
the text, so it may be chosen like any ordinary token, as in BERT.
:data:`BERT_RESERVED` and :func:`sentinel_tokens` give the reserved tokens
each objective needs. Randomness comes from an optional ``torch.Generator``
(CPU): the same generator state gives the same corruption.
Shape letters are those of the glossary in :mod:`qkv`.
"""

from __future__ import annotations

import re
from typing import NamedTuple

import torch

from qkv.data.vocab import UNK, Vocab

__all__ = [
    "BERT_RESERVED",
    "IGNORE_INDEX",
    "MASK",
    "MaskedTokens",
    "SpanCorruption",
    "corrupt_spans",
    "mask_tokens",
    "sentinel_tokens",
    "special_token_ids",
]

MASK = "<mask>"
BERT_RESERVED = ("<pad>", MASK, "<cls>", "<sep>")  # D2L's reserved tokens for BERT (D2L 15.9)
IGNORE_INDEX = -100  # the label of a position with nothing to predict; F.cross_entropy skips it by default
_SPECIAL = re.compile(r"<[^<>\s]+>")


def sentinel_tokens(n: int) -> list[str]:
    """The first ``n`` sentinels of T5, ``["<extra_id_0>", ..., "<extra_id_{n-1}>"]`` (D2L 11.9)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be a non-negative int (a number of sentinels), got {n!r}")
    return [f"<extra_id_{k}>" for k in range(n)]


def special_token_ids(vocab: Vocab) -> list[int]:
    """Indices of the vocabulary's special tokens: every ``<...>`` token except ``<unk>`` (D2L 11.9)."""
    return [i for i, t in enumerate(_check_vocab(vocab).idx_to_token) if t != UNK and _SPECIAL.fullmatch(t)]


def _check_vocab(vocab) -> Vocab:
    if not isinstance(vocab, Vocab):
        raise TypeError(f"vocab must be a qkv.data.Vocab, got {type(vocab).__name__}")
    return vocab


def _check_rate(value, name: str, closed: bool = False) -> float:
    """A probability in (0, 1), or in [0, 1] when ``closed``."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not ok or not (0.0 <= value <= 1.0 if closed else 0.0 < value < 1.0):
        raise ValueError(f"{name} must be a number in {'[0, 1]' if closed else '(0, 1)'}, got {value!r}")
    return float(value)


def _check_ids(tokens, vocab: Vocab, name: str = "tokens") -> torch.Tensor:
    if not isinstance(tokens, torch.Tensor):
        raise TypeError(f"{name} must be a tensor of token ids, got {type(tokens).__name__}; use torch.tensor(...)")
    if tokens.dtype == torch.bool or tokens.is_floating_point() or tokens.is_complex():
        raise TypeError(f"{name} must hold integer token ids, got dtype {tokens.dtype}")
    if tokens.numel() and (tokens.min() < 0 or tokens.max() >= len(vocab)):
        raise ValueError(
            f"{name} must lie in [0, len(vocab) = {len(vocab)}), got ids from {tokens.min().item()} "
            f"to {tokens.max().item()}; were they made with another vocabulary?"
        )
    return tokens.long()


def _rand(shape, generator, device) -> torch.Tensor:
    """Uniform [0, 1) numbers drawn on the generator's device (CPU by default), then moved to ``device``."""
    gen_device = generator.device if generator is not None else "cpu"
    return torch.rand(shape, generator=generator, device=gen_device).to(device)


class MaskedTokens(NamedTuple):
    """BERT's masked-LM example (D2L 11.9.1): the encoder reads ``inputs`` and predicts ``labels``."""

    inputs: torch.Tensor  # (B, T) or (T,), long: the corrupted tokens
    labels: torch.Tensor  # same shape, long: the original token where chosen, IGNORE_INDEX elsewhere
    chosen: torch.Tensor  # same shape, bool: the positions the loss is taken at


def mask_tokens(
    tokens: torch.Tensor,
    vocab: Vocab,
    *,
    mask_rate: float = 0.15,
    mask_token_rate: float = 0.8,
    random_token_rate: float = 0.1,
    generator: torch.Generator | None = None,
) -> MaskedTokens:
    """BERT's masked-language-model corruption of token ids (D2L 11.9.1; Devlin et al., 2019).

    ``tokens`` (B, T) or (T,): integer ids in ``vocab``. In each sequence,
    ``round(mask_rate * n)`` of its ``n`` ordinary tokens (at least one if
    ``n > 0``) are chosen uniformly at random, as BERT's and D2L's data
    pipelines do; special tokens (``<cls>``, ``<sep>``, ``<pad>``...) are never
    chosen, so padding needs no lengths. Each chosen token independently
    becomes ``<mask>`` with probability ``mask_token_rate``, a token drawn
    uniformly from the ordinary tokens with probability ``random_token_rate``
    (possibly itself, as in BERT), and stays unchanged otherwise.

    Returns :class:`MaskedTokens` ``(inputs, labels, chosen)``, each of the
    shape of ``tokens``: ``inputs`` long, ``labels`` long holding the original
    token where chosen and ``IGNORE_INDEX`` (-100) elsewhere, ready for
    ``F.cross_entropy(logits.reshape(-1, V), labels.reshape(-1))``, and
    ``chosen`` bool. ``vocab`` must hold ``<mask>`` (``Vocab(...,
    reserved_tokens=BERT_RESERVED)``). The same ``generator`` state gives the
    same result.
    """
    vocab = _check_vocab(vocab)
    mask_rate = _check_rate(mask_rate, "mask_rate")
    mask_token_rate = _check_rate(mask_token_rate, "mask_token_rate", closed=True)
    random_token_rate = _check_rate(random_token_rate, "random_token_rate", closed=True)
    if mask_token_rate + random_token_rate > 1.0:
        raise ValueError(
            f"mask_token_rate + random_token_rate = {mask_token_rate + random_token_rate} exceeds 1; "
            "the rest, the share of chosen tokens left unchanged, cannot be negative"
        )
    if MASK not in vocab.token_to_idx:
        raise ValueError(f"vocab has no {MASK} token; build it with Vocab(..., reserved_tokens=BERT_RESERVED)")
    special = special_token_ids(vocab)
    ordinary = torch.ones(len(vocab), dtype=torch.bool)
    ordinary[special] = False
    ordinary_ids = ordinary.nonzero().squeeze(1)  # (n_ordinary,), never empty: <unk> is ordinary
    tokens = _check_ids(tokens, vocab)
    if tokens.dim() not in (1, 2):
        raise ValueError(f"tokens must have shape (T,) or (B, T), got {tuple(tokens.shape)}")
    X = tokens[None] if tokens.dim() == 1 else tokens  # (B, T)
    device = X.device
    candidate = ordinary.to(device)[X]  # (B, T): True where a token may be chosen
    # Choose k = round(mask_rate * n) candidates per row: rank random keys, non-candidates last.
    n = candidate.sum(dim=1)  # (B,)
    k = torch.where(n > 0, torch.round(mask_rate * n).long().clamp(min=1), 0)  # (B,)
    keys = _rand(X.shape, generator, device).masked_fill(~candidate, 2.0)  # (B, T)
    rank = keys.argsort(dim=1).argsort(dim=1)  # (B, T): 0 for the smallest key
    chosen = rank < k[:, None]  # (B, T) < (B, 1) -> (B, T)
    # Split the chosen ones 80/10/10 by one uniform number each.
    u = _rand(X.shape, generator, device)  # (B, T)
    to_mask = chosen & (u < mask_token_rate)
    to_random = chosen & (u >= mask_token_rate) & (u < mask_token_rate + random_token_rate)
    draws = _rand(X.shape, generator, device)  # (B, T)
    random_ids = ordinary_ids.to(device)[(draws * len(ordinary_ids)).long().clamp(max=len(ordinary_ids) - 1)]
    inputs = X.masked_fill(to_mask, vocab[MASK])
    inputs = torch.where(to_random, random_ids, inputs)  # (B, T)
    labels = X.masked_fill(~chosen, IGNORE_INDEX)  # (B, T)
    if tokens.dim() == 1:
        return MaskedTokens(inputs[0], labels[0], chosen[0])
    return MaskedTokens(inputs, labels, chosen)


class SpanCorruption(NamedTuple):
    """T5's span-corruption example (D2L 11.9.2): the encoder reads ``inputs``, the decoder produces ``targets``."""

    inputs: torch.Tensor  # (T_src,), long: kept tokens, each cut span replaced by one sentinel
    targets: torch.Tensor  # (T_tgt,), long: each sentinel, then the tokens it replaced; a final sentinel
    noise: torch.Tensor  # (T,), bool: True at the tokens that were cut out


def _composition(total: int, parts: int, minimum: int, generator) -> list[int]:
    """``parts`` integers >= ``minimum`` summing to ``total``, uniform over all such lists (stars and bars)."""
    free = total - parts * minimum  # what is left to share once each part has its minimum
    bars = torch.randperm(free + parts - 1, generator=generator)[: parts - 1].sort().values.tolist()
    edges = [-1, *bars, free + parts - 1]
    return [edges[i + 1] - edges[i] - 1 + minimum for i in range(parts)]


def corrupt_spans(
    tokens: torch.Tensor,
    vocab: Vocab,
    *,
    noise_density: float = 0.15,
    mean_span_length: float = 3.0,
    generator: torch.Generator | None = None,
) -> SpanCorruption:
    """T5's span corruption of one sequence of token ids (D2L 11.9.2; Raffel et al., 2020).

    ``tokens`` (T,), T >= 2: ordinary token ids in ``vocab`` (no padding, no
    special tokens: add ``<eos>`` after corrupting). As T5 does, ``n =
    round(noise_density * T)`` tokens are cut (at least 1, at most T - 1), in
    ``S = round(n / mean_span_length)`` spans (at least 1); the span lengths
    are a uniformly random way of writing ``n`` as ``S`` positive parts, so
    their mean is ``n / S``, about ``mean_span_length``. The spans are placed
    uniformly among the kept tokens, never touching each other. (T5's code
    always starts with a kept stretch and ends with a cut one; here either end
    may be cut or kept.)

    Returns :class:`SpanCorruption` ``(inputs, targets, noise)``: ``inputs``
    (T - n + S,) long, the sequence with span ``k`` replaced by ``<extra_id_k>``;
    ``targets`` (n + S + 1,) long, ``<extra_id_k>`` followed by span ``k``'s
    tokens for each k, then ``<extra_id_S>``; ``noise`` (T,) bool. For the
    paper's example: inputs "Thank you <extra_id_0> me to your party
    <extra_id_1> week .", targets "<extra_id_0> for inviting <extra_id_1>
    last <extra_id_2>". ``vocab`` needs the sentinels ``<extra_id_0>`` to
    ``<extra_id_S>`` (``Vocab(..., reserved_tokens=sentinel_tokens(100))``).
    The same ``generator`` state gives the same result.
    """
    vocab = _check_vocab(vocab)
    noise_density = _check_rate(noise_density, "noise_density")
    ok = isinstance(mean_span_length, (int, float)) and not isinstance(mean_span_length, bool)
    if not ok or not mean_span_length >= 1:
        raise ValueError(f"mean_span_length must be a number >= 1 (tokens per span), got {mean_span_length!r}")
    tokens = _check_ids(tokens, vocab)
    if tokens.dim() != 1 or len(tokens) < 2:
        raise ValueError(
            f"tokens must be one sequence (T,) with T >= 2, got shape {tuple(tokens.shape)}; "
            "corrupt a batch one sequence at a time, before padding"
        )
    special = torch.tensor(special_token_ids(vocab), dtype=torch.long, device=tokens.device)
    found = tokens[torch.isin(tokens, special)]
    if len(found):
        raise ValueError(
            f"tokens hold special tokens {sorted(set(vocab.to_tokens(found.tolist())))}; corrupt the text's own "
            "tokens only (no padding, no sentinels) and add <bos>/<eos> afterwards"
        )
    T = len(tokens)
    n = min(max(round(noise_density * T), 1), T - 1)  # number of cut tokens
    S = min(max(round(n / mean_span_length), 1), T - n + 1)  # number of spans; S - 1 kept tokens must part them
    sentinels = sentinel_tokens(S + 1)
    missing = [t for t in sentinels if t not in vocab.token_to_idx]
    if missing:
        raise ValueError(
            f"vocab lacks the sentinels {missing[0]}..{missing[-1]}: this sequence needs {S + 1} "
            f"(<extra_id_0> to <extra_id_{S}>); build it with Vocab(..., reserved_tokens=sentinel_tokens({S + 1}))"
        )
    span_lengths = _composition(n, S, 1, generator)  # S parts >= 1
    gaps = _composition(T - n - (S - 1), S + 1, 0, generator)  # before, between and after the spans
    gaps = [g + (0 < i < S) for i, g in enumerate(gaps)]  # the S - 1 inner gaps get one kept token at least
    noise = torch.zeros(T, dtype=torch.bool)
    inputs, targets, start = [], [], 0
    ids = tokens.tolist()
    for k in range(S):
        inputs += ids[start : start + gaps[k]]
        start += gaps[k]
        inputs.append(vocab[sentinels[k]])
        targets += [vocab[sentinels[k]], *ids[start : start + span_lengths[k]]]
        noise[start : start + span_lengths[k]] = True
        start += span_lengths[k]
    inputs += ids[start:]
    targets.append(vocab[sentinels[S]])
    device = tokens.device
    return SpanCorruption(
        torch.tensor(inputs, dtype=torch.long, device=device),  # (T - n + S,)
        torch.tensor(targets, dtype=torch.long, device=device),  # (n + S + 1,)
        noise.to(device),  # (T,)
    )
