"""The encoder-decoder interface that 11.4 and 11.7 build on (D2L 10.6, 10.7).

D2L chapter 11 reuses chapter 10's encoder-decoder: an encoder turns the source
tokens into a state, a decoder's ``init_state`` prepares that state for
decoding, and the decoder maps target tokens and the state to next-token
logits and a new state. ``EncoderDecoder.predict_step`` decodes greedily, one
token at a time, and can keep each step's attention weights.
Shape letters are those of the glossary in :mod:`qkv`.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from qkv._validate import positive_int
from qkv.training import evaluating

__all__ = ["Encoder", "Decoder", "EncoderDecoder", "Seq2Seq", "init_seq2seq"]


class Encoder(nn.Module):
    """Base class of encoders: ``forward(X, *args)`` returns what ``Decoder.init_state`` takes (D2L 10.6.1)."""

    def forward(self, X, *args):
        raise NotImplementedError


class Decoder(nn.Module):
    """Base class of decoders (D2L 10.6.2).

    ``init_state(enc_all_outputs, *args)`` returns the initial decoder state;
    ``forward(X, state)`` maps target tokens X (B, T) to logits (B, T, V) and
    the new state. A decoder with attention exposes ``attention_weights``.
    """

    def init_state(self, enc_all_outputs, *args):
        raise NotImplementedError

    def forward(self, X, state):
        raise NotImplementedError


class EncoderDecoder(nn.Module):
    """An encoder and a decoder trained together (D2L 10.6.3)."""

    def __init__(self, encoder: Encoder, decoder: Decoder):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder

    def forward(self, enc_X, dec_X, *args):
        """enc_X (B, T_src), dec_X (B, T) -> logits (B, T, V); ``args`` go to the encoder and ``init_state``."""
        enc_all_outputs = self.encoder(enc_X, *args)
        dec_state = self.decoder.init_state(enc_all_outputs, *args)
        return self.decoder(dec_X, dec_state)[0]

    def predict_step(self, batch, device, num_steps: int, save_attention_weights: bool = False):
        """Greedy decoding of ``num_steps`` tokens (D2L 10.7.7), in eval mode (the model's mode given back after).

        ``batch`` is ``(src, tgt, src_valid_len, label)`` as the MT data yields it;
        only the first column of ``tgt`` (``<bos>``) is used. Returns the
        predicted token ids (B, num_steps) and, if asked, a list with the
        decoder's attention weights after each step.
        """
        with evaluating(self):
            src, tgt, src_valid_len, _ = (a.to(device) for a in batch)
            enc_all_outputs = self.encoder(src, src_valid_len)
            dec_state = self.decoder.init_state(enc_all_outputs, src_valid_len)
            tokens, attention_weights = [tgt[:, :1]], []  # [(B, 1)]
            for _ in range(num_steps):
                Y, dec_state = self.decoder(tokens[-1], dec_state)  # (B, 1, V)
                tokens.append(Y.argmax(dim=2))  # (B, 1)
                if save_attention_weights:
                    attention_weights.append(self.decoder.attention_weights)
            return torch.cat(tokens[1:], dim=1), attention_weights  # (B, num_steps)


def init_seq2seq(module: nn.Module) -> None:
    """Xavier-uniform initialisation of linear and GRU weights, as D2L's seq2seq models use (D2L 10.7.2)."""
    if isinstance(module, nn.Linear):
        nn.init.xavier_uniform_(module.weight)
    if isinstance(module, nn.GRU):
        for name, param in module.named_parameters():
            if name.startswith("weight"):
                nn.init.xavier_uniform_(param)


class Seq2Seq(EncoderDecoder):
    """An encoder-decoder for translation with a padding-aware loss (D2L 10.7.4, 10.7.5).

    ``loss(Y_hat, Y)`` is the cross-entropy averaged over the target tokens
    that are not ``<pad>``; ``configure_optimizers`` gives Adam with ``lr``.
    """

    def __init__(self, encoder: Encoder, decoder: Decoder, tgt_pad: int, lr: float):
        super().__init__(encoder, decoder)
        self.tgt_pad = tgt_pad
        self.lr = lr

    def loss(self, Y_hat: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        """Y_hat (B, T, V) logits, Y (B, T) token ids -> mean cross-entropy over non-pad tokens."""
        per_token = F.cross_entropy(Y_hat.reshape(-1, Y_hat.shape[-1]), Y.reshape(-1), reduction="none")  # (B*T,)
        keep = (Y.reshape(-1) != self.tgt_pad).float()  # (B*T,)
        return (per_token * keep).sum() / keep.sum().clamp(min=1)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.lr)


def check_vocab(src_vocab_size: int, tgt_vocab_size: int, tgt_pad: int) -> None:
    """Check a translator's vocabulary sizes and its target ``<pad>`` id before a model is built of them (the
    builds of D2L 11.4.3 and 11.7.6)."""
    positive_int(src_vocab_size, "src_vocab_size")
    positive_int(tgt_vocab_size, "tgt_vocab_size")
    if not 0 <= tgt_pad < tgt_vocab_size:
        raise ValueError(f"tgt_pad = {tgt_pad} is not a token id of a vocabulary of size {tgt_vocab_size}")
