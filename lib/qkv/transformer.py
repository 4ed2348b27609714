"""The Transformer encoder-decoder, with a key/value cache for decoding (D2L 11.7).

The Transformer has no recurrence and no convolution. Each encoder block runs
multi-head self-attention and a position-wise feed-forward network, each
followed by a residual connection and layer normalisation ("add & norm",
post-norm as in the original paper and D2L). Each decoder block adds, between
the two, an encoder-decoder ("cross") attention whose queries come from the
decoder and whose keys and values are the encoder's outputs; its
self-attention is causal, so position ``t`` only sees positions ``<= t``.

Decoding with a key/value cache
-------------------------------
Greedy decoding (``EncoderDecoder.predict_step``) feeds the decoder one token
at a time. Recomputing the whole prefix at every step costs O(t^2) at step
``t``. D2L's decoder avoids re-feeding the prefix by caching each block's
*inputs*, but still re-projects all of them into keys and values at every step.
Our decoder caches what attention actually needs:

* for the self-attention of each block, the keys and values already projected
  by ``W_k`` and ``W_v`` and split into heads, (B * H, T_past, h); a step
  projects only the new tokens and appends them;
* for the cross-attention, the projected keys and values of the encoder's
  outputs, computed once in ``init_state``.

A step then costs the new tokens' projections plus one row of attention per
new token: O(t) instead of O(t^2). :class:`qkv.multihead.MultiHeadAttention`
takes raw keys and values, so the cached step is written here
(:func:`attend_projected`) with that module's own ``W_q``, ``W_o`` and its
``DotProductAttention`` (which masks with :func:`qkv.attention.masked_softmax`),
and the head folding of :func:`qkv.multihead.transpose_qkv` /
:func:`qkv.multihead.transpose_output`.

Differences from D2L's code, all deliberate:

* **Positions at inference.** Each new token gets the encoding of its
  absolute position ``P[t]``, ``t`` = number of tokens already cached. D2L's
  decoder adds ``P[:, :1]`` (position 0) to every token it decodes one at a
  time, so at inference its decoder never sees the positions it was trained
  with.
* **Always causal.** Self-attention is masked causally whenever the decoder is
  run, in training or evaluation, with or without a cache. D2L masks only in
  training mode, so its ``EncoderDecoder.forward`` on a whole target in
  evaluation mode lets tokens see the future.
* **Chunks.** Several tokens may be decoded at once with a cache: each attends
  to the cache and to the causal part of its chunk.
* **No mutation.** A decoder call returns a new state and leaves the one it was
  given untouched (D2L appends to the given state in place), so a state can be
  reused, e.g. to branch a decoding.
* **Eager sizes.** Every layer is built with its input size (it is always
  ``num_hiddens``), so parameters exist before the first call; only
  :class:`PositionWiseFFN` used on its own stays lazy by default, as in D2L.

Shape letters are those of the glossary in :mod:`qkv`; ``T_past`` is the
number of cached tokens.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch
from torch import nn

from qkv._validate import positive_int
from qkv.attention import _linear
from qkv.multihead import MultiHeadAttention, repeat_for_heads, transpose_output, transpose_qkv
from qkv.positional import PositionalEncoding
from qkv.seq2seq import Decoder, Encoder, Seq2Seq, check_vocab

__all__ = [
    "PositionWiseFFN",
    "AddNorm",
    "TransformerEncoderBlock",
    "TransformerEncoder",
    "KVCache",
    "project_heads",
    "attend_projected",
    "TransformerDecoderBlock",
    "TransformerDecoder",
    "TransformerConfig",
    "make_transformer",
]


class PositionWiseFFN(nn.Module):
    """The position-wise feed-forward network: dense -> ReLU -> dense (D2L 11.7.2).

    ``PositionWiseFFN(ffn_num_hiddens, ffn_num_outputs)`` maps X (..., T, d)
    to (..., T, ffn_num_outputs), the same two-layer MLP at every position.
    The first layer's input size is inferred on the first call, as in D2L,
    unless the keyword ``in_features`` gives it.
    """

    def __init__(self, ffn_num_hiddens: int, ffn_num_outputs: int, *, in_features: int | None = None):
        super().__init__()
        self.dense1 = _linear(in_features, ffn_num_hiddens, bias=True)
        self.relu = nn.ReLU()
        self.dense2 = nn.Linear(ffn_num_hiddens, ffn_num_outputs)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        return self.dense2(self.relu(self.dense1(X)))  # (..., T, d) -> (..., T, F) -> (..., T, N)


class AddNorm(nn.Module):
    """Residual connection then layer normalisation: ``LayerNorm(dropout(Y) + X)`` (D2L 11.7.3).

    ``AddNorm(norm_shape, dropout)``; ``forward(X, Y)`` with X the sublayer's
    input and Y its output, both of the same shape (..., N).
    """

    def __init__(self, norm_shape, dropout: float):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.ln = nn.LayerNorm(norm_shape)

    def forward(self, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        if X.shape != Y.shape:
            raise ValueError(
                f"AddNorm adds a sublayer's output Y to its input X, so they need one shape; "
                f"got X {tuple(X.shape)} and Y {tuple(Y.shape)}"
            )
        return self.ln(self.dropout(Y) + X)


def _check_tokens(X, what: str) -> None:
    """Raise a clear error unless ``X`` is a (B, T) tensor of integer token ids."""
    if not isinstance(X, torch.Tensor):
        raise TypeError(f"the {what} expects token ids as a tensor of shape (B, T), got {type(X).__name__}")
    if X.dim() != 2 or X.is_floating_point() or X.is_complex() or X.dtype == torch.bool:
        raise ValueError(
            f"the {what} expects integer token ids of shape (B, T), got dtype {X.dtype} and shape "
            f"{tuple(X.shape)}; add a batch axis with X[None] or convert with X.long()"
        )


def _embed(module: nn.Module, X: torch.Tensor, offset: int = 0) -> torch.Tensor:
    """Token ids (B, T) -> embeddings scaled by sqrt(N) plus the encodings of positions offset..offset+T-1.

    ``module`` has ``embedding``, ``pos_encoding`` and ``num_hiddens``; ``offset``
    is the number of tokens decoded before X (the positional encoding checks it
    against its max_len and applies its dropout).
    """
    X = module.embedding(X) * math.sqrt(module.num_hiddens)  # (B, T) -> (B, T, N)
    return module.pos_encoding(X, offset)  # (B, T, N) + P[offset : offset + T] -> (B, T, N)


class TransformerEncoderBlock(nn.Module):
    """One encoder block: self-attention, add & norm, FFN, add & norm (D2L 11.7.4).

    ``TransformerEncoderBlock(num_hiddens, ffn_num_hiddens, num_heads, dropout, use_bias=False)``;
    ``forward(X, valid_lens)``: X (B, T, N), valid_lens (B,) or None -> (B, T, N).
    ``use_bias`` applies to the attention projections; the FFN always has biases.
    """

    def __init__(self, num_hiddens: int, ffn_num_hiddens: int, num_heads: int, dropout: float, use_bias=False):
        super().__init__()
        N = num_hiddens
        self.attention = MultiHeadAttention(N, num_heads, dropout, use_bias, query_size=N, key_size=N, value_size=N)
        self.addnorm1 = AddNorm(num_hiddens, dropout)
        self.ffn = PositionWiseFFN(ffn_num_hiddens, num_hiddens, in_features=num_hiddens)
        self.addnorm2 = AddNorm(num_hiddens, dropout)

    def forward(self, X: torch.Tensor, valid_lens: torch.Tensor | None = None) -> torch.Tensor:
        Y = self.addnorm1(X, self.attention(X, X, X, valid_lens))  # (B, T, N)
        return self.addnorm2(Y, self.ffn(Y))  # (B, T, N)


class TransformerEncoder(Encoder):
    """The Transformer encoder: scaled embedding, positional encoding, ``num_blks`` blocks (D2L 11.7.4).

    ``TransformerEncoder(vocab_size, num_hiddens, ffn_num_hiddens, num_heads, num_blks, dropout, use_bias=False)``;
    ``forward(X, valid_lens)``: token ids X (B, T), valid_lens (B,) or None ->
    (B, T, N). The embeddings are multiplied by sqrt(num_hiddens) before the
    positional encoding is added, as in D2L. After a call,
    ``attention_weights[i]`` holds block ``i``'s weights, (B * H, T, T).
    """

    def __init__(
        self,
        vocab_size: int,
        num_hiddens: int,
        ffn_num_hiddens: int,
        num_heads: int,
        num_blks: int,
        dropout: float,
        use_bias: bool = False,
        *,
        max_len: int = 1000,
    ):
        super().__init__()
        if num_blks < 1:
            raise ValueError(f"num_blks must be at least 1, got {num_blks}")
        self.num_hiddens = num_hiddens
        self.embedding = nn.Embedding(vocab_size, num_hiddens)
        self.pos_encoding = PositionalEncoding(num_hiddens, dropout, max_len)
        self.blks = nn.Sequential()
        for i in range(num_blks):
            block = TransformerEncoderBlock(num_hiddens, ffn_num_hiddens, num_heads, dropout, use_bias)
            self.blks.add_module(f"block{i}", block)
        self.attention_weights: list[torch.Tensor] | None = None

    def forward(self, X: torch.Tensor, valid_lens: torch.Tensor | None = None) -> torch.Tensor:
        _check_tokens(X, "Transformer encoder")
        X = _embed(self, X)  # (B, T, N)
        self.attention_weights = []
        for blk in self.blks:
            X = blk(X, valid_lens)  # (B, T, N)
            self.attention_weights.append(blk.attention.attention.attention_weights)  # (B * H, T, T)
        return X


@dataclass
class KVCache:
    """What one decoder block keeps between decoding calls (our addition to D2L 11.7.5).

    ``enc_keys``, ``enc_values``: the encoder's outputs projected by the
    cross-attention's ``W_k`` and ``W_v`` and split into heads, (B * H, T_src, h),
    computed once by ``TransformerDecoder.init_state``.
    ``keys``, ``values``: the projected self-attention keys and values of all
    tokens decoded so far, (B * H, T_past, h), or None before the first token.
    """

    enc_keys: torch.Tensor
    enc_values: torch.Tensor
    keys: torch.Tensor | None = None
    values: torch.Tensor | None = None

    @property
    def num_cached(self) -> int:
        """T_past, the number of decoded tokens whose keys and values are cached."""
        return 0 if self.keys is None else self.keys.shape[1]


def project_heads(W: nn.Module, X: torch.Tensor, num_heads: int) -> torch.Tensor:
    """Project X (B, T, d) with ``W`` (to N features) and split into heads: (B * H, T, h) (D2L 11.5.2)."""
    return transpose_qkv(W(X), num_heads)  # (B, T, d) -> (B, T, N) -> (B * H, T, h)


def attend_projected(mha: MultiHeadAttention, queries, keys, values, valid_lens=None) -> torch.Tensor:
    """Multi-head attention with keys and values already projected (D2L 11.5, for the cache of 11.7).

    Computes what ``mha(queries, raw_keys, raw_values, valid_lens)`` computes
    when ``keys = project_heads(mha.W_k, raw_keys, H)`` and
    ``values = project_heads(mha.W_v, raw_values, H)``: only the queries
    (B, Q, d_q) are projected here. ``valid_lens`` is per example, (B,) or
    (B, Q), or a boolean mask (Q, K), as for ``MultiHeadAttention``; it is
    repeated per head, and ``mha.attention`` (scaled dot products, masked with
    :func:`qkv.attention.masked_softmax`, dropout on the weights) keeps the
    weights (B * H, Q, K) in ``mha.attention.attention_weights``.
    Returns (B, Q, N).
    """
    H = mha.num_heads
    queries = project_heads(mha.W_q, queries, H)  # (B * H, Q, h)
    output = mha.attention(queries, keys, values, repeat_for_heads(valid_lens, H))  # (B * H, Q, h)
    return mha.W_o(transpose_output(output, H))  # (B * H, Q, h) -> (B, Q, N) -> (B, Q, N)


class TransformerDecoderBlock(nn.Module):
    """One decoder block, the ``i``-th of the decoder (D2L 11.7.5).

    ``TransformerDecoderBlock(num_hiddens, ffn_num_hiddens, num_heads, dropout, i)``.
    Masked (causal) self-attention, add & norm, encoder-decoder attention,
    add & norm, FFN, add & norm. ``forward(X, state)`` with X (B, T, N) and
    ``state = [enc_outputs (B, T_src, N), enc_valid_lens (B,) or None, caches]``
    returns (B, T, N) and a new state in which ``caches[i]``, a
    :class:`KVCache`, also holds X's projected keys and values. X's tokens sit
    at positions ``T_past .. T_past + T - 1``; each attends to the cache and
    to the tokens of X up to itself. If ``caches[i]`` is None the
    encoder's keys and values are projected here (see :meth:`init_cache`).
    """

    def __init__(self, num_hiddens: int, ffn_num_hiddens: int, num_heads: int, dropout: float, i: int):
        super().__init__()
        self.i = i
        N = num_hiddens
        self.attention1 = MultiHeadAttention(N, num_heads, dropout, query_size=N, key_size=N, value_size=N)
        self.addnorm1 = AddNorm(num_hiddens, dropout)
        self.attention2 = MultiHeadAttention(N, num_heads, dropout, query_size=N, key_size=N, value_size=N)
        self.addnorm2 = AddNorm(num_hiddens, dropout)
        self.ffn = PositionWiseFFN(ffn_num_hiddens, num_hiddens, in_features=num_hiddens)
        self.addnorm3 = AddNorm(num_hiddens, dropout)

    def init_cache(self, enc_outputs: torch.Tensor) -> KVCache:
        """An empty cache holding the cross-attention keys and values of enc_outputs (B, T_src, N)."""
        H = self.attention2.num_heads
        enc_keys = project_heads(self.attention2.W_k, enc_outputs, H)  # (B * H, T_src, h)
        enc_values = project_heads(self.attention2.W_v, enc_outputs, H)  # (B * H, T_src, h)
        return KVCache(enc_keys, enc_values)

    def forward(self, X: torch.Tensor, state: list):
        """X (B, T, N) at positions T_past .. T_past + T - 1 -> (B, T, N) and the state with X's keys cached."""
        enc_outputs, enc_valid_lens, caches = state
        cache = caches[self.i]
        if cache is None:
            cache = self.init_cache(enc_outputs)
        B, T, _ = X.shape
        H, past = self.attention1.num_heads, cache.num_cached
        keys = project_heads(self.attention1.W_k, X, H)  # (B * H, T, h): only the new tokens
        values = project_heads(self.attention1.W_v, X, H)  # (B * H, T, h)
        if past:
            keys = torch.cat((cache.keys, keys), dim=1)  # (B * H, T_past, h) + (B * H, T, h) -> (B * H, K, h)
            values = torch.cat((cache.values, values), dim=1)  # (B * H, K, h), K = T_past + T
        # Causal mask: the token at absolute position past + t sees keys 0 .. past + t.
        dec_valid_lens = torch.arange(past + 1, past + T + 1, device=X.device).expand(B, T)  # (B, T)
        Y = self.addnorm1(X, attend_projected(self.attention1, X, keys, values, dec_valid_lens))  # (B, T, N)
        Y2 = attend_projected(self.attention2, Y, cache.enc_keys, cache.enc_values, enc_valid_lens)  # (B, T, N)
        Z = self.addnorm2(Y, Y2)  # (B, T, N)
        caches = list(caches)
        caches[self.i] = replace(cache, keys=keys, values=values)
        return self.addnorm3(Z, self.ffn(Z)), [enc_outputs, enc_valid_lens, caches]


class TransformerDecoder(Decoder):
    """The Transformer decoder, with a key/value cache for incremental decoding (D2L 11.7.5).

    ``TransformerDecoder(vocab_size, num_hiddens, ffn_num_hiddens, num_heads, num_blks, dropout)``.

    * ``init_state(enc_outputs, enc_valid_lens)`` -> ``[enc_outputs,
      enc_valid_lens, caches]`` with one empty :class:`KVCache` per block,
      holding the cross-attention keys and values of the encoder's outputs.
    * ``forward(X, state)``: target token ids X (B, T) -> logits (B, T, V) and
      the new state. X may be a whole target (teacher forcing), one token
      (greedy decoding), or a chunk of tokens following those already cached;
      in every case the result equals a run on the whole prefix at once.
      Token ``t`` of X gets the positional encoding of ``T_past + t``.
    * ``attention_weights``: after a call, ``[self_weights, cross_weights]``,
      one list entry per block, of shapes (B * H, T, T_past + T) and
      (B * H, T, T_src), as in D2L.

    See the module docstring for how this differs from D2L.
    """

    def __init__(
        self,
        vocab_size: int,
        num_hiddens: int,
        ffn_num_hiddens: int,
        num_heads: int,
        num_blks: int,
        dropout: float,
        *,
        max_len: int = 1000,
    ):
        super().__init__()
        if num_blks < 1:
            raise ValueError(f"num_blks must be at least 1, got {num_blks}")
        self.num_hiddens = num_hiddens
        self.num_blks = num_blks
        self.embedding = nn.Embedding(vocab_size, num_hiddens)
        self.pos_encoding = PositionalEncoding(num_hiddens, dropout, max_len)
        self.blks = nn.Sequential()
        for i in range(num_blks):
            self.blks.add_module(
                f"block{i}", TransformerDecoderBlock(num_hiddens, ffn_num_hiddens, num_heads, dropout, i)
            )
        self.dense = nn.Linear(num_hiddens, vocab_size)
        self._attention_weights: list[list[torch.Tensor]] | None = None

    def init_state(self, enc_outputs: torch.Tensor, enc_valid_lens: torch.Tensor | None = None) -> list:
        """``[enc_outputs, enc_valid_lens, caches]``: empty caches with the encoder's keys and values projected."""
        if not isinstance(enc_outputs, torch.Tensor) or enc_outputs.dim() != 3:
            raise ValueError(
                "init_state expects the encoder's outputs, a tensor of shape (B, T_src, N); got "
                f"{tuple(enc_outputs.shape) if isinstance(enc_outputs, torch.Tensor) else type(enc_outputs).__name__}"
            )
        return [enc_outputs, enc_valid_lens, [blk.init_cache(enc_outputs) for blk in self.blks]]

    def forward(self, X: torch.Tensor, state: list):
        """Token ids X (B, T) after the T_past cached ones -> logits (B, T, V) and the new state."""
        _check_tokens(X, "Transformer decoder")
        if not isinstance(state, (list, tuple)) or len(state) != 3 or len(state[2]) != self.num_blks:
            raise ValueError(
                f"state must be [enc_outputs, enc_valid_lens, caches] with one cache per block ({self.num_blks}), "
                "as init_state returns it"
            )
        if state[0].shape[0] != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} sequences but the state was built for {state[0].shape[0]}")
        first = state[2][0]
        past = 0 if first is None else first.num_cached
        X = _embed(self, X, offset=past)  # (B, T, N)
        self._attention_weights = [[None] * self.num_blks for _ in range(2)]
        for i, blk in enumerate(self.blks):
            X, state = blk(X, state)  # (B, T, N)
            self._attention_weights[0][i] = blk.attention1.attention.attention_weights  # (B * H, T, T_past + T)
            self._attention_weights[1][i] = blk.attention2.attention.attention_weights  # (B * H, T, T_src)
        return self.dense(X), state  # (B, T, N) -> (B, T, V)

    @property
    def attention_weights(self):
        """``[self-attention weights per block, encoder-decoder attention weights per block]`` of the last call."""
        return self._attention_weights


@dataclass
class TransformerConfig:
    """Hyper-parameters of the translation Transformer; the defaults are D2L's (D2L 11.7.6).

    ``TransformerConfig(...).build(src_vocab_size, tgt_vocab_size, tgt_pad)`` builds the model;
    :func:`qkv.recipes.translate.train_d2l` trains it in D2L's setting.
    """

    num_hiddens: int = 256
    ffn_num_hiddens: int = 64
    num_heads: int = 4
    num_blks: int = 2
    dropout: float = 0.2
    lr: float = 0.001

    def __post_init__(self):
        for name in ("num_hiddens", "ffn_num_hiddens", "num_heads", "num_blks"):
            setattr(self, name, positive_int(getattr(self, name), name))
        if self.num_hiddens % self.num_heads:
            raise ValueError(f"num_hiddens = {self.num_hiddens} must be divisible by num_heads = {self.num_heads}")
        if not 0 <= self.dropout < 1:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        if not self.lr > 0:
            raise ValueError(f"lr must be positive, got {self.lr}")

    def build(self, src_vocab_size: int, tgt_vocab_size: int, tgt_pad: int) -> Seq2Seq:
        """The Transformer for translation, a :class:`qkv.seq2seq.Seq2Seq` (D2L 11.7.6): encoder and decoder share
        these hyper-parameters; ``tgt_pad`` is the id of ``<pad>`` in the target vocabulary (the loss ignores it)."""
        check_vocab(src_vocab_size, tgt_vocab_size, tgt_pad)
        sizes = (self.num_hiddens, self.ffn_num_hiddens, self.num_heads, self.num_blks, self.dropout)
        encoder = TransformerEncoder(src_vocab_size, *sizes)
        decoder = TransformerDecoder(tgt_vocab_size, *sizes)
        return Seq2Seq(encoder, decoder, tgt_pad=tgt_pad, lr=self.lr)


def make_transformer(
    src_vocab_size: int,
    tgt_vocab_size: int,
    num_hiddens: int = 256,
    ffn_num_hiddens: int = 64,
    num_heads: int = 4,
    num_blks: int = 2,
    dropout: float = 0.2,
    *,
    tgt_pad: int,
    lr: float = 0.001,
) -> Seq2Seq:
    """The Transformer for translation: a :class:`qkv.seq2seq.Seq2Seq` (D2L 11.7.6).

    Encoder and decoder share the hyper-parameters; the defaults are D2L's.
    ``tgt_pad`` is the id of ``<pad>`` in the target vocabulary (the loss
    ignores it). The same as ``TransformerConfig(...).build(...)``.
    """
    config = TransformerConfig(num_hiddens, ffn_num_hiddens, num_heads, num_blks, dropout, lr)
    return config.build(src_vocab_size, tgt_vocab_size, tgt_pad)
