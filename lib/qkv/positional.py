"""Positional encodings: telling self-attention where each token sits (D2L 11.6).

Self-attention treats its inputs as a set: permuting the tokens permutes the
outputs in the same way. To use word order, information about positions is
added to the inputs (absolute encodings) or put into the scores themselves
(rotary encodings):

* :class:`PositionalEncoding`: D2L's fixed sinusoidal table (D2L 11.6.3),
  ``P[i, 2j] = sin(i / 10000^(2j/d))`` and ``P[i, 2j+1] = cos(i / 10000^(2j/d))``;
* :class:`LearnedPositionalEncoding`: a trained table, as in BERT and ViT
  (D2L 11.8, 11.9);
* :class:`RotaryPositionalEmbedding`: RoPE (Su et al., 2021). D2L 11.6.3 shows
  that the sinusoidal encoding of position ``i + delta`` is a fixed rotation of
  the encoding of ``i``; RoPE rotates queries and keys by their positions so
  that a query-key score depends on their offset only.

Shape letters are those of the glossary in :mod:`qkv`.
"""

from __future__ import annotations

import torch
from torch import nn

from qkv._validate import int_in, positive_int

__all__ = [
    "sinusoidal_table",
    "PositionalEncoding",
    "LearnedPositionalEncoding",
    "rotary_angles",
    "apply_rotary",
    "RotaryPositionalEmbedding",
]


def _check_input(X: torch.Tensor, num_hiddens: int, max_len: int, offset: int = 0) -> int:
    """Check that ``X`` is (..., T, num_hiddens) with ``offset + T <= max_len``; return T."""
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ValueError(
            f"offset must be a non-negative int (the position of X's first step), got {offset!r}; "
            "for a tensor use int(offset)"
        )
    if not isinstance(X, torch.Tensor):
        raise TypeError(f"expected a tensor of shape (B, T, {num_hiddens}), got {type(X).__name__}")
    if X.dim() < 2 or X.shape[-1] != num_hiddens:
        raise ValueError(
            f"expected a tensor of shape (..., T, {num_hiddens}) (last axis = the encoding's size), "
            f"got shape {tuple(X.shape)}"
        )
    if not X.is_floating_point():
        raise TypeError(f"positional encodings apply to floating-point features, got dtype {X.dtype}")
    T = X.shape[-2]
    if offset + T > max_len:
        raise ValueError(
            f"positions {offset}..{offset + T - 1} are past the table's max_len = {max_len}; "
            f"build the encoding with max_len={offset + T} or more"
        )
    return T


def sinusoidal_table(max_len: int, num_hiddens: int) -> torch.Tensor:
    """The sinusoidal table P of shape (max_len, num_hiddens), in float64 (D2L 11.6.3).

    Row ``i`` encodes position ``i``: ``P[i, 2j] = sin(i * w_j)`` and
    ``P[i, 2j + 1] = cos(i * w_j)`` with frequency ``w_j = 1 / 10000^(2j / d)``,
    ``d = num_hiddens``. For an odd ``d`` the last column is the sine of a
    pair whose cosine would be column ``d``, which does not exist.
    """
    positive_int(max_len, "max_len")
    positive_int(num_hiddens, "num_hiddens")
    positions = torch.arange(max_len, dtype=torch.float64)  # (T,)
    freqs = 10000.0 ** (-torch.arange(0, num_hiddens, 2, dtype=torch.float64) / num_hiddens)  # (ceil(d/2),)
    angles = positions[:, None] * freqs[None, :]  # (T, 1) * (1, ceil(d/2)) -> (T, ceil(d/2))
    P = torch.empty(max_len, num_hiddens, dtype=torch.float64)  # (T, d)
    P[:, 0::2] = torch.sin(angles)  # (T, ceil(d/2))
    P[:, 1::2] = torch.cos(angles[:, : num_hiddens // 2])  # (T, floor(d/2))
    return P


class PositionalEncoding(nn.Module):
    """Fixed sinusoidal positional encoding, added to the inputs (D2L 11.6.3).

    ``PositionalEncoding(num_hiddens, dropout, max_len=1000)``; ``forward(X)``
    with X (B, T, N) returns ``dropout(X + P[:, :T])``, (B, T, N);
    ``forward(X, offset)`` adds the rows ``offset .. offset + T - 1`` instead.

    The table is the buffer ``self.P`` of shape (1, max_len, N), computed in
    float64 and stored in the default dtype; it is cast to X's dtype when
    added. It is a non-persistent buffer: it moves with ``.to(device)`` but is
    not saved in ``state_dict()`` since it follows from the formula.
    An odd ``num_hiddens`` is allowed (see :func:`sinusoidal_table`).
    A sequence longer than ``max_len`` raises a ValueError.
    """

    def __init__(self, num_hiddens: int, dropout: float = 0.0, max_len: int = 1000):
        super().__init__()
        self.num_hiddens = positive_int(num_hiddens, "num_hiddens")
        self.max_len = positive_int(max_len, "max_len")
        self.dropout = nn.Dropout(dropout)
        P = sinusoidal_table(max_len, num_hiddens).to(torch.get_default_dtype())
        self.register_buffer("P", P.unsqueeze(0), persistent=False)  # (T, N) -> (1, T, N)

    def forward(self, X: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """X (..., T, N) -> (..., T, N): add the encodings of positions offset..offset+T-1, then dropout.

        ``offset`` (0 in D2L) is the position of X's first step, e.g. the
        number of tokens already decoded when decoding one token at a time.
        """
        T = _check_input(X, self.num_hiddens, self.max_len, offset)
        P = self.P[0, offset : offset + T]  # (1, max_len, N) -> (T, N)
        return self.dropout(X + P.to(X.dtype))  # (..., T, N) + (T, N) -> (..., T, N)

    def extra_repr(self) -> str:
        return f"num_hiddens={self.num_hiddens}, max_len={self.max_len}"


class LearnedPositionalEncoding(nn.Module):
    """A trained positional table added to the inputs, as in BERT and ViT (D2L 11.6, 11.8, 11.9).

    ``LearnedPositionalEncoding(num_hiddens, dropout, max_len=1000, init_std=0.02)``;
    ``forward(X)`` with X (B, T, N) returns ``dropout(X + P[:, :T])``
    (``forward(X, offset)``: rows ``offset .. offset + T - 1``).
    ``self.P`` is an ``nn.Parameter`` of shape (1, max_len, N), initialised
    with independent normal noise of mean 0 and standard deviation
    ``init_std`` (0.02 by default, the ``initializer_range`` of the original
    BERT), so the encodings start small next to the token embeddings. D2L's
    ViT (11.8) starts its positions larger, with ``torch.randn`` (standard
    deviation 1): ``init_std=1`` gives that start.
    A sequence longer than ``max_len`` raises a ValueError.
    """

    def __init__(self, num_hiddens: int, dropout: float = 0.0, max_len: int = 1000, init_std: float = 0.02):
        super().__init__()
        self.num_hiddens = positive_int(num_hiddens, "num_hiddens")
        self.max_len = positive_int(max_len, "max_len")
        if not init_std >= 0:
            raise ValueError(f"init_std must be a non-negative number, got {init_std}")
        self.dropout = nn.Dropout(dropout)
        self.P = nn.Parameter(torch.randn(1, max_len, num_hiddens) * init_std)  # (1, T, N)

    def forward(self, X: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """X (..., T, N) -> (..., T, N): add the learned encodings of positions offset..offset+T-1, then dropout."""
        T = _check_input(X, self.num_hiddens, self.max_len, offset)
        P = self.P[0, offset : offset + T]  # (1, max_len, N) -> (T, N)
        return self.dropout(X + P.to(X.dtype))  # (..., T, N) + (T, N) -> (..., T, N)

    def extra_repr(self) -> str:
        return f"num_hiddens={self.num_hiddens}, max_len={self.max_len}"


def rotary_angles(max_len: int, head_dim: int, base: float = 10000.0) -> torch.Tensor:
    """Angles ``m * theta_j`` of shape (max_len, head_dim / 2), in float64 (RoPE; D2L 11.6.3).

    ``theta_j = base^(-2j / head_dim)`` for ``j = 0 .. head_dim/2 - 1``: the
    frequencies of D2L's sinusoidal table, with ``base`` in place of 10000.
    """
    positive_int(max_len, "max_len")
    int_in(head_dim, "head_dim", 2)
    if head_dim % 2:
        raise ValueError(f"rotary embeddings rotate pairs of features, so head_dim must be even; got {head_dim}")
    if not base > 1:
        raise ValueError(f"base must be a number greater than 1, got {base}")
    positions = torch.arange(max_len, dtype=torch.float64)  # (T,)
    theta = float(base) ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)  # (h/2,)
    return positions[:, None] * theta[None, :]  # (T, 1) * (1, h/2) -> (T, h/2)


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate each interleaved pair of features ``(x[2j], x[2j+1])`` by its angle (RoPE; D2L 11.6.3).

    Args:
        x: features of shape (..., T, h), h even.
        cos, sin: cosines and sines of the angles, shape (T, h/2) (or any shape
            that broadcasts to (..., T, h/2)); pair ``j`` of step ``t`` turns by
            the angle whose cosine is ``cos[t, j]``.

    Returns:
        (..., T, h): ``y[2j] = x[2j] cos - x[2j+1] sin`` and
        ``y[2j+1] = x[2j] sin + x[2j+1] cos``, i.e. each pair, read as a point
        of the plane, turned counter-clockwise. Pairs are interleaved, as in
        D2L's equation (not split into halves as some libraries do).
    """
    h = x.shape[-1]
    if h % 2:
        raise ValueError(f"apply_rotary rotates pairs of features, so the last axis must be even; got {h}")
    pairs = x.reshape(*x.shape[:-1], h // 2, 2)  # (..., T, h) -> (..., T, h/2, 2)
    x_even, x_odd = pairs[..., 0], pairs[..., 1]  # (..., T, h/2) each
    cos, sin = cos.to(x.dtype), sin.to(x.dtype)
    rotated = torch.stack((x_even * cos - x_odd * sin, x_even * sin + x_odd * cos), dim=-1)  # (..., T, h/2, 2)
    return rotated.flatten(-2)  # (..., T, h/2, 2) -> (..., T, h)


class RotaryPositionalEmbedding(nn.Module):
    """Rotary positional embedding, RoPE (Su et al., 2021), built on D2L 11.6.3's rotation.

    ``RotaryPositionalEmbedding(head_dim, base=10000, max_len=1000)``;
    ``forward(X, offset=0)`` with X (..., T, h) returns X with the pair
    ``(X[..., t, 2j], X[..., t, 2j+1])`` rotated by the angle
    ``(offset + t) * theta_j``, ``theta_j = base^(-2j/h)``. Apply it to the
    queries and the keys (per head, after the projections): since rotations
    compose, ``<R_m q, R_n k> = <q, R_(n-m) k>`` depends on ``m - n`` only.
    ``offset`` is the position of X's first step (for decoding one token at a
    time). The tables ``self.cos`` and ``self.sin`` (max_len, h/2) are
    non-persistent buffers; positions past ``max_len`` raise a ValueError.
    """

    def __init__(self, head_dim: int, base: float = 10000.0, max_len: int = 1000):
        super().__init__()
        angles = rotary_angles(max_len, head_dim, base)  # (T, h/2)
        self.head_dim, self.base, self.max_len = head_dim, float(base), max_len
        self.register_buffer("cos", torch.cos(angles).to(torch.get_default_dtype()), persistent=False)  # (T, h/2)
        self.register_buffer("sin", torch.sin(angles).to(torch.get_default_dtype()), persistent=False)  # (T, h/2)

    def forward(self, X: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """X (..., T, h) -> (..., T, h), step t rotated as position ``offset + t``."""
        T = _check_input(X, self.head_dim, self.max_len, offset)
        return apply_rotary(X, self.cos[offset : offset + T], self.sin[offset : offset + T])  # (..., T, h)

    def extra_repr(self) -> str:
        return f"head_dim={self.head_dim}, base={self.base:g}, max_len={self.max_len}"
