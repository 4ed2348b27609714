"""Bahdanau attention: a GRU decoder that attends to the source at every step (D2L 11.4).

A plain RNN encoder-decoder squeezes the whole source sentence into the
encoder's last hidden state. Bahdanau et al. (2014) let the decoder look back
instead: before emitting target token ``t'`` it forms a context variable

    c_{t'} = sum_t alpha(s_{t'-1}, h_t) h_t

an additive-attention pooling of the encoder's hidden states ``h_t`` with the
decoder's previous hidden state ``s_{t'-1}`` as the query. The context is
concatenated with the embedded input token and fed to the decoder's GRU.

The GRU encoder the decoder attends to is D2L's 10.7 ``Seq2SeqEncoder``; it
lives here because 11.4 is where this course uses it. Both modules are
time-major inside, as in D2L: encoder outputs are (T, B, N) and GRU states
(L, B, N). Shape letters are those of the glossary in :mod:`qkv`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from qkv._validate import positive_int
from qkv.attention import AdditiveAttention, masked_softmax
from qkv.seq2seq import Decoder, Encoder, Seq2Seq, check_vocab, init_seq2seq

__all__ = [
    "Seq2SeqEncoder",
    "AttentionDecoder",
    "Seq2SeqAttentionDecoder",
    "BahdanauConfig",
    "make_bahdanau",
]


def _check_tokens(X, name: str) -> torch.Tensor:
    """Check that ``X`` is a (B, T) tensor of token ids and return it as int64."""
    if not isinstance(X, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of token ids of shape (B, T), got {type(X).__name__}")
    if X.dim() != 2:
        raise ValueError(f"{name} must have shape (B, T) (a batch of token-id sequences), got {tuple(X.shape)}")
    if X.is_floating_point() or X.is_complex() or X.dtype == torch.bool:
        raise TypeError(f"{name} must hold integer token ids, got dtype {X.dtype}; convert it with .long()")
    return X.long()


class Seq2SeqEncoder(Encoder):
    """A GRU encoder for sequence-to-sequence learning (D2L 10.7.2, used by D2L 11.4).

    ``Seq2SeqEncoder(vocab_size, embed_size, num_hiddens, num_layers, dropout=0)``:
    an embedding layer followed by a ``num_layers``-layer GRU (with ``dropout``
    between layers). ``forward(X, *args)`` takes token ids X (B, T) and returns
    ``(outputs, state)``: the top layer's hidden state at every step (T, B, N)
    and every layer's final hidden state (L, B, N). Extra ``args`` (such as the
    source valid lengths) are accepted and ignored, as in D2L. The GRU weights
    get :func:`~qkv.seq2seq.init_seq2seq`'s Xavier initialisation.
    """

    def __init__(self, vocab_size: int, embed_size: int, num_hiddens: int, num_layers: int, dropout: float = 0):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size, num_hiddens, num_layers, dropout=dropout)
        self.apply(init_seq2seq)

    def forward(self, X, *args):
        X = _check_tokens(X, "the source tokens X")
        embs = self.embedding(X.t())  # (B, T) -> (T, B) -> (T, B, E)
        outputs, state = self.rnn(embs)  # (T, B, N), (L, B, N)
        return outputs, state


class AttentionDecoder(Decoder):
    """Base class of decoders with attention (D2L 11.4.2).

    A subclass stores what it attended to in ``self._attention_weights``;
    the ``attention_weights`` property returns it, for plotting.
    """

    def __init__(self):
        super().__init__()
        self._attention_weights = None

    @property
    def attention_weights(self):
        """The attention weights of the last ``forward`` call; their layout is the subclass's."""
        return self._attention_weights


class Seq2SeqAttentionDecoder(AttentionDecoder):
    """A GRU decoder with Bahdanau (additive) attention (D2L 11.4.2).

    ``Seq2SeqAttentionDecoder(vocab_size, embed_size, num_hiddens, num_layers, dropout=0)``.
    At each step the top layer of the previous decoder hidden state is the
    query of an :class:`~qkv.attention.AdditiveAttention` over the encoder
    outputs (keys = values, masked past each source's valid length); the
    context (B, N) is concatenated with the embedded input token (B, E), fed
    to the GRU, and a dense layer maps the GRU output to vocabulary logits.

    ``init_state(enc_outputs, enc_valid_lens)`` takes the encoder's
    ``(outputs (T, B, N), state (L, B, N))`` and returns
    ``[enc_outputs (B, T_src, N), hidden_state (L, B, N), enc_valid_lens (B,)]``,
    a list (D2L's returns the same three as a tuple; ``forward`` only unpacks it).
    ``forward(X, state)`` takes target tokens X (B, T) and returns logits
    (B, T, V) and the updated state. ``attention_weights`` is then a list with
    one (B, 1, T_src) tensor per decoded step.

    As in D2L, only the GRU weights get :func:`~qkv.seq2seq.init_seq2seq`'s
    Xavier initialisation; D2L builds the attention and output layers lazily,
    after its initialiser has run, so they keep PyTorch's default
    initialisation, and so do ours.
    """

    def __init__(self, vocab_size: int, embed_size: int, num_hiddens: int, num_layers: int, dropout: float = 0):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size + num_hiddens, num_hiddens, num_layers, dropout=dropout)
        self.rnn.apply(init_seq2seq)
        self.attention = AdditiveAttention(num_hiddens, dropout, query_size=num_hiddens, key_size=num_hiddens)
        self.dense = nn.Linear(num_hiddens, vocab_size)

    def init_state(self, enc_outputs, enc_valid_lens=None):
        """(outputs (T, B, N), state (L, B, N)), valid lengths (B,) -> the decoder's initial state."""
        try:
            outputs, hidden_state = enc_outputs
        except (TypeError, ValueError) as err:
            raise TypeError(
                "init_state expects the encoder's output pair (outputs (T, B, N), state (L, B, N))"
            ) from err
        if outputs.dim() != 3 or hidden_state.dim() != 3:
            raise ValueError(
                f"expected encoder outputs (T, B, N) and state (L, B, N), got shapes "
                f"{tuple(outputs.shape)} and {tuple(hidden_state.shape)}"
            )
        if hidden_state.shape[0] != self.rnn.num_layers:
            raise ValueError(
                f"the encoder state has {hidden_state.shape[0]} layers but the decoder GRU has "
                f"{self.rnn.num_layers}; build both with the same num_layers"
            )
        return [outputs.transpose(0, 1), hidden_state, enc_valid_lens]  # (T, B, N) -> (B, T, N)

    def _attend(self, query, projected_keys, values, valid_lens):
        """``self.attention(query, keys, values, valid_lens)`` given ``projected_keys = attention.W_k(keys)``.

        The same additive attention (D2L 11.3.4) with the same parameters; only the key projection, which
        every decoding step would repeat, is done by the caller.
        """
        att = self.attention
        queries = att.W_q(query).unsqueeze(2)  # (B, 1, N) -> (B, 1, 1, N)
        features = torch.tanh(queries + projected_keys.unsqueeze(1))  # (B, 1, 1, N) + (B, 1, K, N) -> (B, 1, K, N)
        scores = att.w_v(features).squeeze(-1)  # (B, 1, K, N) -> (B, 1, K, 1) -> (B, 1, K)
        att.attention_weights = masked_softmax(scores, valid_lens)  # (B, 1, K)
        return torch.bmm(att.dropout(att.attention_weights), values)  # (B, 1, K) @ (B, K, N) -> (B, 1, N)

    def forward(self, X, state):
        """Target tokens X (B, T) and the state -> logits (B, T, V) and the state after the last step."""
        X = _check_tokens(X, "the target tokens X")
        enc_outputs, hidden_state, enc_valid_lens = state
        embs = self.embedding(X.t())  # (B, T) -> (T, B) -> (T, B, E)
        # W_k h_t does not depend on the decoding step: project the keys once per call, not once per step.
        keys = self.attention.W_k(enc_outputs)  # (B, T_src, N)
        outputs, self._attention_weights = [], []
        for x in embs:  # x: (B, E), one time step
            query = hidden_state[-1].unsqueeze(1)  # (B, N) -> (B, 1, N)
            context = self._attend(query, keys, enc_outputs, enc_valid_lens)  # (B, 1, N)
            x = torch.cat((context, x.unsqueeze(1)), dim=-1)  # (B, 1, N) ++ (B, 1, E) -> (B, 1, N + E)
            out, hidden_state = self.rnn(x.transpose(0, 1), hidden_state)  # (1, B, N + E) -> (1, B, N), (L, B, N)
            outputs.append(out)
            self._attention_weights.append(self.attention.attention_weights)  # (B, 1, T_src)
        outputs = self.dense(torch.cat(outputs, dim=0))  # (T, B, N) -> (T, B, V)
        return outputs.transpose(0, 1), [enc_outputs, hidden_state, enc_valid_lens]  # (T, B, V) -> (B, T, V)


@dataclass
class BahdanauConfig:
    """Hyper-parameters of the Bahdanau translator; the defaults are D2L's (D2L 11.4.3).

    ``BahdanauConfig(...).build(src_vocab_size, tgt_vocab_size, tgt_pad)`` builds the model;
    :func:`qkv.recipes.translate.train_d2l` trains it in D2L's setting.
    """

    embed_size: int = 256
    num_hiddens: int = 256
    num_layers: int = 2
    dropout: float = 0.2
    lr: float = 0.005

    def __post_init__(self):
        for name in ("embed_size", "num_hiddens", "num_layers"):
            setattr(self, name, positive_int(getattr(self, name), name))
        if not 0 <= self.dropout < 1:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        if not self.lr > 0:
            raise ValueError(f"lr must be positive, got {self.lr}")

    def build(self, src_vocab_size: int, tgt_vocab_size: int, tgt_pad: int) -> Seq2Seq:
        """The translator: a GRU encoder and an attention decoder in a :class:`qkv.seq2seq.Seq2Seq` (D2L 11.4.3).

        ``tgt_pad`` is the id of ``<pad>`` in the target vocabulary (the loss ignores it)."""
        check_vocab(src_vocab_size, tgt_vocab_size, tgt_pad)
        encoder = Seq2SeqEncoder(src_vocab_size, self.embed_size, self.num_hiddens, self.num_layers, self.dropout)
        decoder = Seq2SeqAttentionDecoder(
            tgt_vocab_size, self.embed_size, self.num_hiddens, self.num_layers, self.dropout
        )
        return Seq2Seq(encoder, decoder, tgt_pad=tgt_pad, lr=self.lr)


def make_bahdanau(
    src_vocab_size: int,
    tgt_vocab_size: int,
    embed_size: int = 256,
    num_hiddens: int = 256,
    num_layers: int = 2,
    dropout: float = 0.2,
    *,
    tgt_pad: int,
    lr: float = 0.005,
) -> Seq2Seq:
    """The Bahdanau translator: a GRU encoder and an attention decoder in a :class:`qkv.seq2seq.Seq2Seq` (D2L 11.4.3).

    The defaults are D2L's. ``tgt_pad`` is the id of ``<pad>`` in the target
    vocabulary (the loss ignores it). The same as ``BahdanauConfig(...).build(...)``.
    """
    config = BahdanauConfig(embed_size, num_hiddens, num_layers, dropout, lr)
    return config.build(src_vocab_size, tgt_vocab_size, tgt_pad)
