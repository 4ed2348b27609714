"""A vocabulary: the two-way map between tokens and indices (D2L 9.2.3).

Index 0 is ``<unk>``, which every unknown token maps to; the reserved tokens
come next, in the order given; then every token seen at least ``min_freq``
times, most frequent first, ties broken by the token's text so the order never
depends on the order of the input.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

__all__ = ["Vocab"]

UNK = "<unk>"


def _flatten(tokens) -> list[str]:
    """Accept a list of tokens or a list of token lists (sentences)."""
    if isinstance(tokens, str):
        tokens = list(tokens)
    flat = []
    for item in tokens:
        if isinstance(item, str):
            flat.append(item)
        elif isinstance(item, Iterable):
            for token in item:
                if not isinstance(token, str):
                    raise TypeError(f"tokens must be strings, got {token!r} of type {type(token).__name__}")
                flat.append(token)
        else:
            raise TypeError(
                f"Vocab takes a list of string tokens or a list of token lists, got an item {item!r} "
                f"of type {type(item).__name__}"
            )
    return flat


class Vocab:
    """Vocabulary of a corpus (D2L 9.2.3).

    ``Vocab(tokens=(), min_freq=0, reserved_tokens=())``: ``tokens`` is a list of
    tokens or a list of token lists. ``vocab[token]`` is an index (``vocab.unk``
    for an unknown token), ``vocab[[t1, t2]]`` a list of indices,
    ``vocab.to_tokens(indices)`` the way back. ``token_freqs`` lists
    ``(token, count)`` pairs, most frequent first.
    """

    def __init__(self, tokens: Iterable = (), min_freq: int = 0, reserved_tokens: Iterable[str] = ()):
        counter = Counter(_flatten(tokens))
        self.token_freqs: list[tuple[str, int]] = sorted(counter.items(), key=lambda tf: (-tf[1], tf[0]))
        self.idx_to_token: list[str] = [UNK]
        for token in _flatten([list(reserved_tokens)]):
            if token not in self.idx_to_token:
                self.idx_to_token.append(token)
        known = set(self.idx_to_token)
        self.idx_to_token += [t for t, freq in self.token_freqs if freq >= min_freq and t not in known]
        self.token_to_idx: dict[str, int] = {token: idx for idx, token in enumerate(self.idx_to_token)}

    def __len__(self) -> int:
        return len(self.idx_to_token)

    def __getitem__(self, tokens):
        """Index of a token (``unk`` if unknown), or a list of indices for a list/tuple of tokens."""
        if isinstance(tokens, str):
            return self.token_to_idx.get(tokens, self.unk)
        if isinstance(tokens, (list, tuple)):
            return [self[token] for token in tokens]
        raise TypeError(
            f"look up a string token or a list/tuple of tokens, got {type(tokens).__name__}; "
            "use to_tokens() to turn indices back into tokens"
        )

    def to_tokens(self, indices):
        """The token of an index, or the list of tokens of a sequence of indices (a list, array or tensor)."""
        if hasattr(indices, "__len__") and getattr(indices, "ndim", 1) != 0:
            return [self.to_tokens(i) for i in indices]
        try:
            index = int(indices)
        except (TypeError, ValueError) as err:
            raise TypeError(f"to_tokens takes integer indices, got {indices!r}") from err
        if not 0 <= index < len(self):
            raise IndexError(f"index {index} is outside this vocabulary of {len(self)} tokens (0..{len(self) - 1})")
        return self.idx_to_token[index]

    @property
    def unk(self) -> int:
        """Index of the unknown token ``<unk>`` (always 0)."""
        return self.token_to_idx[UNK]

    def __repr__(self) -> str:
        head = ", ".join(repr(t) for t in self.idx_to_token[:6])
        return f"Vocab({len(self)} tokens: {head}{', ...' if len(self) > 6 else ''})"
